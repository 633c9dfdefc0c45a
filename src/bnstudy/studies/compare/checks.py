"""The side-by-side section's config check, run with the config checks before any job
(``bnstudy.base.catalogue``): every other build's macro files are on disk with the bytes its
manifest records."""

from __future__ import annotations

from pathlib import Path

from bnstudy.base.config import ConfigError, Parts


def check(config: dict, part: Parts) -> None:
    """Each ``compare.builds[i]``: its ``expected`` manifest readable, its ``directory`` a directory,
    and each macro file the manifest lists there with the recorded bytes
    (:func:`bnstudy.studies.compare.report.verified_macros`); one line naming the key and the file."""
    from bnstudy.studies.compare.report import verified_macros

    for i, build in enumerate(config["compare"]["builds"]):
        key = f"config error: compare.builds[{i}]"
        directory, expected = Path(build["directory"]), Path(build["expected"])
        if not expected.is_file():
            raise ConfigError(f"{key}.expected: no manifest {expected}")
        if not directory.is_dir():
            raise ConfigError(f"{key}.directory: {directory} is not a directory")
        try:
            verified_macros(directory, expected)
        except (ValueError, KeyError) as e:
            raise ConfigError(f"{key}: {e}") from None
