"""Verify a sample before spending a CPU-day: a few jobs of a large config, built with their inputs in a
scratch copy of the checkout and compared with the hashes committed for them.

    python -m bnstudy.pipeline.sample verify --configfile config/fashion-cluster.yaml --cores 2
    python -m bnstudy.pipeline.sample write  --configfile config/fashion-cluster.yaml --cores 2

The sample of ``config/X.yaml`` is ``config/expected/X.sample.tsv``: the output files of its jobs
(path, bytes, sha256), as the manifest lists them. ``verify`` copies this checkout's files into a
scratch directory (``builds/sample-X``), asks Snakemake there for exactly those files (and so for the
jobs that make them and their inputs), hashes them and compares; ``write`` does the same and writes
the file (once, on a machine whose build of the config is trusted). Every output of the pipeline is
the same bytes on every machine whose packages are the lock's (docs/determinism.md), so a mismatch
says this machine's software differs from the lock (or the code or config changed since the sample
was written): find out before the whole build.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pandas as pd

from bnstudy.pipeline import manifest

ROOT = Path(__file__).resolve().parents[3]
COLUMNS = ["path", "bytes", "sha256"]


def sample_for_config(configfile) -> Path:
    """``config/X.yaml`` -> ``config/expected/X.sample.tsv``."""
    configfile = Path(configfile)
    return configfile.parent / "expected" / f"{configfile.stem}.sample.tsv"


def copy_checkout(source: Path, target: Path) -> None:
    """This checkout's tracked and new files (not ignored ones: no results, no venv) into ``target``,
    their modification times kept, so a second run re-makes only what changed."""
    target.mkdir(parents=True, exist_ok=True)
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=source, check=True, capture_output=True,
    ).stdout  # fmt: skip
    existing = b"\0".join(f for f in files.split(b"\0") if f and (source / f.decode()).exists())
    packed = subprocess.run(["tar", "--null", "-T", "-", "-cf", "-"], cwd=source, input=existing, check=True,
                            capture_output=True).stdout  # fmt: skip
    subprocess.run(["tar", "-xf", "-"], cwd=target, input=packed, check=True)


def build(configfile: str, paths: list[str], workdir: Path, cores: int) -> None:
    """Snakemake in ``workdir`` for exactly ``paths`` of ``configfile`` (and what they need)."""
    # the targets before --configfile, which takes every path after it as a config file
    cmd = [sys.executable, "-m", "snakemake", *paths, "--cores", str(cores), "--configfile", configfile]
    result = subprocess.run(cmd, cwd=workdir)
    if result.returncode != 0:
        raise SystemExit(f"sample build failed (exit {result.returncode}); see the log above and {workdir}")


def hashes(paths: list[str], workdir: Path) -> pd.DataFrame:
    """``path, bytes, sha256`` of each file, as the manifest hashes them; a missing file has none."""
    found = manifest.disk_hashes(paths, workdir)
    rows = [{"path": p, "bytes": found[p][0], "sha256": found[p][1]} if found[p] else
            {"path": p, "bytes": -1, "sha256": "missing"} for p in paths]  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)


def compare(expected: pd.DataFrame, found: pd.DataFrame) -> list[str]:
    """The lines naming each file whose bytes differ from the sample's (none: identical)."""
    want = expected.set_index("path")
    lines = []
    for row in found.itertuples(index=False):
        w = want.loc[row.path]
        if (int(w["bytes"]), w["sha256"]) != (int(row.bytes), row.sha256):
            lines.append(f"  {row.path}: {row.bytes} bytes, sha256 {row.sha256}; the sample has {w['sha256']}")
    return lines


MISMATCH = (
    "This machine's build of the sample differs from the committed one. Every output is the same bytes on "
    "any machine whose packages are the lock's (requirements/lock.txt): compare `pip freeze` with the lock "
    "(numpy, numba and llvmlite above all) before the whole build; a change of code or config since the "
    "sample was written differs too."
)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bnstudy.pipeline.sample", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["verify", "write"])
    parser.add_argument("--configfile", required=True)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--workdir", default=None, help="scratch directory (default builds/sample-<config>)")
    parser.add_argument(
        "--paths", nargs="*", default=None, help="write: the sample's files (default: the committed list)"
    )
    args = parser.parse_args(argv)
    configfile, sample = Path(args.configfile), sample_for_config(args.configfile)
    workdir = Path(args.workdir or ROOT / "builds" / f"sample-{configfile.stem}")
    if args.paths:
        paths = list(args.paths)
    elif sample.is_file():
        paths = list(pd.read_csv(sample, sep="\t")["path"])
    else:
        print(f"no sample for {configfile}: {sample} does not exist (write one with --paths)")
        return 2
    copy_checkout(ROOT, workdir)
    build(str(configfile), paths, workdir, args.cores)
    found = hashes(paths, workdir)
    if args.action == "write":
        found.to_csv(sample, sep="\t", index=False)
        print(f"wrote {len(found)} files to {sample}")
        return 0
    bad = compare(pd.read_csv(sample, sep="\t"), found)
    if not bad:
        print(f"identical: {len(found)} files of the sample of {configfile} ({workdir})")
        return 0
    print(f"different: {len(bad)} of the {len(found)} files of the sample of {configfile}:")
    print("\n".join(bad))
    print(MISMATCH)
    return 1


if __name__ == "__main__":
    sys.exit(main())
