"""Determinism check: the same config gives the same bytes, however it is run.

``python -m bnstudy.determinism`` copies the workflow (tracked and untracked,
non-ignored files, no ``results/``) into fresh directories and runs the test
config there from an empty ``results/``:

1. with ``--cores 1``;
2. with ``--cores 4`` (at the same time as 1: each job pins its own threads, so
   sharing the machine changes timings, not results);
3. with ``--cores 2``, killed with SIGKILL while training, then resumed with
   ``--rerun-incomplete``.

It compares the three ``results/manifest.tsv`` files and, on any difference,
names the first rule in DAG order whose outputs differ, with the files.
Exit status 0 only if all are byte-identical.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import manifest

EXCLUDE = {"results", ".snakemake", ".venv", ".git", "__pycache__", ".pytest_cache"}


def workflow_files(root: Path) -> list[Path]:
    """Files of the workflow: git's tracked and untracked-but-not-ignored files."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             cwd=root, check=True, capture_output=True).stdout
        files = [Path(p) for p in out.decode().split("\0") if p]
    except (subprocess.CalledProcessError, FileNotFoundError):
        files = [p.relative_to(root) for p in root.rglob("*") if p.is_file()]
    return [f for f in files if not (set(f.parts) & EXCLUDE) and (root / f).is_file()]


def copy_workflow(root: Path, target: Path) -> Path:
    for f in workflow_files(root):
        (target / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / f, target / f)
    return target


def snakemake_cmd(configfile: str, cores: int, extra=()) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--cores", str(cores), "--configfile", configfile, "-q",
            *extra]


def run(workdir: Path, configfile: str, cores: int, extra=(), log=None) -> None:
    subprocess.run(snakemake_cmd(configfile, cores, extra), cwd=workdir, check=True,
                   stdout=log, stderr=subprocess.STDOUT)


def run_killed_then_resumed(workdir: Path, configfile: str, log=None, wait_for="results/logs/train_grid",
                            timeout: float = 600) -> float:
    """Start a run, SIGKILL it (whole process group) once training has begun, resume.

    Returns the seconds after start at which the run was killed.
    """
    start = time.monotonic()
    proc = subprocess.Popen(snakemake_cmd(configfile, 2), cwd=workdir, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    marker = workdir / wait_for
    while not (marker.exists() and any(marker.iterdir())):
        if proc.poll() is not None:
            raise RuntimeError("the run finished before training started; nothing to kill")
        if time.monotonic() - start > timeout:
            os.killpg(proc.pid, signal.SIGKILL)
            raise RuntimeError("training did not start in time")
        time.sleep(0.05)
    time.sleep(1.0)  # inside a training job
    killed_at = time.monotonic() - start
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    subprocess.run([sys.executable, "-m", "snakemake", "--unlock", "--configfile", configfile, "-q"],
                   cwd=workdir, check=True, stdout=log, stderr=subprocess.STDOUT)
    run(workdir, configfile, 2, ["--rerun-incomplete"], log)
    return killed_at


def compare(manifests: dict[str, Path]) -> list[str]:
    """Problems found comparing every manifest with the first; empty if identical."""
    names = list(manifests)
    ref_name = names[0]
    ref = manifest.read(manifests[ref_name])
    problems = []
    for name in names[1:]:
        if manifests[name].read_bytes() == manifests[ref_name].read_bytes():
            continue
        diff = manifest.first_difference(ref, manifest.read(manifests[name]))
        if diff.empty:
            problems.append(f"{name}: manifest bytes differ from {ref_name} but no file differs (row order?)")
            continue
        rule = diff["rule_a"].fillna(diff["rule_b"]).iloc[0]
        files = ", ".join(diff["path"].tolist())
        problems.append(f"{name} differs from {ref_name}: first rule in DAG order: {rule}; files: {files}")
    return problems


RUNS = ("cores1", "cores4", "killed-resumed")
CONCURRENT = (("cores1", "cores4"), ("killed-resumed",))  # runs started together


def run_all(root: Path, configfile: str, base: Path, runs=RUNS) -> tuple[dict[str, Path], dict[str, float]]:
    """Run the workflow at ``root`` once per entry of ``runs``, each in ``base/<name>``.

    Returns the manifest path and wall seconds of each run; raises
    ``subprocess.CalledProcessError`` (with the log path in ``base``) if a run fails.
    """
    how = {
        "cores1": lambda d, log: run(d, configfile, 1, log=log),
        "cores4": lambda d, log: run(d, configfile, 4, log=log),
        "killed-resumed": lambda d, log: print(
            f"  killed after {run_killed_then_resumed(d, configfile, log):.1f} s, resumed", flush=True),
    }
    manifests, times = {}, {}

    def one(name):
        d = copy_workflow(root, base / name)
        print(f"run {name} in {d}", flush=True)
        t = time.monotonic()
        with open(base / f"{name}.log", "w") as log:
            how[name](d, log)
        times[name] = time.monotonic() - t
        manifests[name] = d / "results" / "manifest.tsv"

    for together in CONCURRENT:
        names = [n for n in together if n in runs]
        with ThreadPoolExecutor(max_workers=len(names) or 1) as pool:
            for future in [pool.submit(one, n) for n in names]:
                future.result()  # re-raises a failed run's error
    return {n: manifests[n] for n in runs}, times


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configfile", default="config/test.yaml")
    parser.add_argument("--root", default=".", help="the workflow to copy (default: current directory)")
    parser.add_argument("--keep", action="store_true", help="keep the run directories")
    args = parser.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="bnstudy-determinism-"))
    keep = args.keep
    try:
        try:
            manifests, times = run_all(Path(args.root).resolve(), args.configfile, base)
        except subprocess.CalledProcessError as e:
            print(f"FAILED: {' '.join(map(str, e.cmd))}; logs in {base}")
            keep = True
            return 1
        problems = compare(manifests)
        for p in problems:
            print("DIFFERENT: " + p)
        if problems:
            keep = True
            return 1
        rows = len(manifest.read(manifests[RUNS[0]]))
        print(f"identical: {len(manifests)} manifests of {rows} files each "
              f"({', '.join(f'{k} {v:.0f} s' for k, v in times.items())})")
        return 0
    finally:
        if keep:
            print(f"run directories kept in {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
