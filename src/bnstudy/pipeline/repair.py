"""Repair a build: re-create exactly its missing or damaged outputs with Snakemake, then verify it.

:func:`repair` (``python -m bnstudy.pipeline.manifest repair``, ``make repair``) names the bad files
with :func:`bnstudy.pipeline.manifest.check_files`, forces their jobs, lets Snakemake re-run what
depends on a file that came back with other bytes (:func:`planned`), and verifies the build.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bnstudy.pipeline.expected import expected_for_config
from bnstudy.pipeline.manifest import (
    UNEXPECTED,
    check_files,
    describe_problems,
    disk_hashes,
    read_usable,
    verify,
    workflow_environment,
)


def _snakemake(root: Path, configfile: Path, *args, capture: bool = False) -> subprocess.CompletedProcess:
    """Snakemake in ``root``, without the kernel cache directory that importing ``bnstudy`` here
    chose (named by this package's kernel modules, not those of the workflow in ``root``)."""
    env = workflow_environment()
    cmd = [sys.executable, "-m", "snakemake", "--configfile", str(configfile), *map(str, args)]
    return subprocess.run(cmd, cwd=root, text=True, capture_output=capture, env=env)


def planned(root, configfile, *args) -> dict[str, int]:
    """The jobs a dry run of Snakemake in ``root`` plans, by rule (empty: nothing to be done)."""
    import re

    result = _snakemake(Path(root), Path(configfile), "-n", *args, capture=True)
    text = result.stdout + result.stderr
    if result.returncode != 0:
        raise RuntimeError(f"snakemake -n failed: {text.strip().splitlines()[-1] if text.strip() else ''}")
    if "Job stats:" not in text:
        return {}
    table = text.split("Job stats:")[1].split("total")[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", table, re.M)}


def repair(configfile, expected=None, results="results", cores: int = 2, say=print) -> int:
    """Re-create exactly the missing or damaged outputs of the build in ``results``, then verify it.

    1. :func:`check_files` names the bad files (missing, changed after their build, or other
       bytes than the expected ones).
    2. ``snakemake --force <those files>``: their jobs run again, and nothing downstream (as
       targets, the files' consumers are not part of that run).
    3. ``snakemake``: a re-created file is newer than what was built from it, but Snakemake
       re-runs a consumer only if the content of an input differs from the checksum it recorded
       when the consumer ran (inputs up to ``--max-checksum-file-size``, 1 MB); so a file that
       came back byte-identical re-runs nothing, one with other bytes (or over 1 MB) re-runs
       what depends on it. The build record's runtimes are refreshed (the benchmarks changed).
    4. :func:`verify`; returns its exit status (0: identical).
    """
    results = Path(results)
    root = results.parent
    configfile = Path(configfile).resolve()
    expected = Path(expected) if expected is not None else expected_for_config(configfile)
    problems, _ = check_files(expected, results)
    bad = problems[problems["problem"] != UNEXPECTED]
    if bad.empty:
        identical, lines = verify(expected, results)
        say("\n".join(["nothing to repair", *lines]))
        return 0 if identical else 1
    say(f"repairing {len(bad)} files of {bad['rule'].nunique()} rules:")
    for line in describe_problems(bad):
        say(line)
    targets = bad["path"].tolist()
    if _snakemake(root, configfile, "--cores", cores, "-q", "--force", "--", *targets).returncode != 0:
        say(
            "repair: re-creating them failed (Snakemake's message above); after a killed run, "
            f"snakemake --unlock --configfile {configfile} first"
        )
        return 1
    want = {}
    for table in (read_usable(results / "manifest.tsv")[0], read_usable(expected)[0]):
        if table is not None:  # the expected bytes where there are any, else those the build recorded
            want |= dict(zip(table["path"], table["sha256"]))
    now = disk_hashes(targets, root)
    other = [p for p in targets if p in want and (now[p] is None or now[p][1] != want[p])]
    say(
        f"re-created {len(targets)} files; "
        + (f"{len(other)} with other bytes than recorded (first: {other[0]})" if other else "each byte-identical")
    )
    try:
        plan = planned(root, configfile)
    except RuntimeError as err:
        say(f"repair: {err}")
        return 1
    if plan:
        say("still out of date: " + ", ".join(f"{rule} {n}" for rule, n in plan.items()))
        if _snakemake(root, configfile, "--cores", cores, "-q").returncode != 0:
            say("repair: snakemake failed (its message above)")
            return 1
    identical, lines = verify(expected, results)
    say("\n".join(lines))
    return 0 if identical else 1
