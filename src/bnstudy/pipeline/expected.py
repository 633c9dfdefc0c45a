"""Where a config's expected result lies: its expected manifest, its pins, how to repair its build.

A config ``config/X.yaml`` (the paper's: ``config/config.yaml``, named ``paper``) has its expected
manifest in ``config/expected/X.manifest.tsv`` (:func:`expected_for_config` and back,
:func:`config_for_expected`) and its pinned values in ``config/pinned/X.yaml`` (:func:`pins_for`,
checked by :func:`pinned_drift`); :func:`other_builds` names the builds a combined config verifies
with it, and :func:`repair_command` the command that repairs its build.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bnstudy.pipeline.valuediff import MAX_LINES


def pins_for(expected: Path) -> Path:
    """The pins file of an expected manifest: ``config/expected/X.manifest.tsv`` -> ``config/pinned/X.yaml``."""
    name = expected.name.split(".manifest")[0]
    return expected.resolve().parent.parent / "pinned" / f"{name}.yaml"


def pinned_drift(results: Path, pins: Path, limit: int = MAX_LINES) -> list[str]:
    """The lines of ``python -m bnstudy.pipeline.pinned check`` for ``results`` (at most ``limit``)."""
    env = os.environ | {
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH")])
        )
    }
    out = subprocess.run(
        [sys.executable, "-m", "bnstudy.pipeline.pinned", "check", "--results", str(results), "--pins", str(pins)],
        capture_output=True,
        text=True,
        env=env,
    )
    lines = (out.stdout + out.stderr).splitlines()
    if len(lines) > limit:
        lines = lines[: limit - 1] + [f"... and {len(lines) - limit + 1} more lines"]
    return lines


def expected_for_config(configfile) -> Path:
    """The expected manifest of a config file: ``config/config.yaml`` (the paper) ->
    ``config/expected/paper.manifest.tsv``, ``config/X.yaml`` -> ``config/expected/X.manifest.tsv``."""
    configfile = Path(configfile)
    name = "paper" if configfile.stem == "config" else configfile.stem
    return configfile.parent / "expected" / f"{name}.manifest.tsv"


def other_builds(configfile) -> list[tuple[str, str]]:
    """``(directory, expected manifest)`` of each other build the config's side by side names
    (``compare.builds``; none for a config without one): a combined build is verified whole."""
    path = Path(configfile)
    if not path.is_file():
        return []
    import yaml

    config = yaml.safe_load(path.read_text()) or {}
    return [(b["directory"], b["expected"]) for b in (config.get("compare") or {}).get("builds", [])]


def config_for_expected(expected) -> Path:
    """The config file of an expected manifest (the inverse of :func:`expected_for_config`)."""
    expected = Path(expected)
    name = expected.name.split(".manifest")[0]
    return expected.parent.parent / ("config.yaml" if name == "paper" else f"{name}.yaml")


def repair_command(expected) -> str:
    """The command that re-creates a build's missing or damaged outputs (``make repair``)."""
    config = config_for_expected(expected)
    return "make repair" if config.name == "config.yaml" else f"make repair CONFIG=config/{config.name}"
