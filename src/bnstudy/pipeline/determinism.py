"""Determinism and portability check: the same config gives the same bytes, however and wherever it is run.

``python -m bnstudy.pipeline.determinism`` (``make determinism``, ``make portability``)
copies the workflow (tracked and untracked, non-ignored files, no ``results/``)
into fresh directories and runs the test config there from an empty
``results/``, each run on another simulated machine (:func:`bnstudy.pipeline.machines.environments`:
environment variables that make PyTorch, oneDNN, MKL, OpenBLAS, NumPy, Numba and
glibc select the kernels of a lesser CPU):

1. ``--cores 1`` on the machine as it is (``native``);
2. ``--cores 4`` as an AVX2 machine (``avx2``);
3. ``--cores 2`` as a machine without AVX, FMA or AVX512 (``generic``), killed
   with SIGKILL at several points (:data:`KILL_POINTS`: during the kernel warm-up,
   during training, during the paper build), each time unlocked, checked for
   half-written files (none may be on disk that is not its expected bytes) and
   resumed with ``--rerun-incomplete``.

The three run at the same time: each job pins its own threads, so sharing the
machine changes timings, not results. So the three runs check determinism (cores, interruption) and portability
(instruction sets) at once. It compares the three ``results/manifest.tsv`` files
and, on any difference, names the first rule in DAG order whose outputs differ,
with the files and, for its JSON and CSV files, the values that moved. If the
config's expected manifest (``config/expected/<name>.manifest.tsv``) exists, the
runs are compared with it too. Exit status 0 only if all are byte-identical.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bnstudy.pipeline import manifest
from bnstudy.pipeline.machines import describe_environment, environments, summary

EXCLUDE = {"results", ".snakemake", ".venv", ".git", "__pycache__", ".pytest_cache"}


# The machine each determinism run simulates.
RUN_ENVIRONMENTS = {"cores1": "native", "cores4": "avx2", "killed-resumed": "generic"}


def workflow_files(root: Path) -> list[Path]:
    """Files of the workflow: git's tracked and untracked-but-not-ignored files."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=root,
            check=True,
            capture_output=True,
        ).stdout
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
    return [sys.executable, "-m", "snakemake", "--cores", str(cores), "--configfile", configfile, "-q", *extra]


def run_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment plus ``env``, for a run in a copied workflow.

    Without the Numba cache directory that importing ``bnstudy`` here chose
    (:func:`bnstudy.pipeline.manifest.workflow_environment`): each run's package chooses
    the one of its own kernel modules, and Numba keeps a copy's entries apart from
    another's (they are filed by the source files' directory).
    """
    return manifest.workflow_environment() | (env or {})


_RUNNING: set[subprocess.Popen] = set()  # the runs under way, for stop_all


def niced(cmd: list[str], niceness: int) -> list[str]:
    """``cmd`` run at ``niceness`` (coreutils' ``nice``, which execs it: same process)."""
    return ["nice", "-n", str(niceness), *cmd] if niceness else list(cmd)


def _start(cmd, workdir: Path, log, env, niceness: int = 0) -> subprocess.Popen:
    proc = subprocess.Popen(
        niced(cmd, niceness),
        cwd=workdir,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env=run_environment(env),
    )
    _RUNNING.add(proc)
    return proc


def _wait(proc: subprocess.Popen, check: bool = True) -> int:
    try:
        code = proc.wait()
    finally:
        _RUNNING.discard(proc)
    if check and code != 0:
        raise subprocess.CalledProcessError(code, proc.args)
    return code


def stop_all() -> None:
    """Kill every run this process has under way (each in its own process group)."""
    for proc in list(_RUNNING):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def run(workdir: Path, configfile: str, cores: int, extra=(), log=None, env=None, niceness: int = 0) -> None:
    """Run Snakemake in ``workdir``; ``env``: variables added to this process's environment."""
    _wait(_start(snakemake_cmd(configfile, cores, extra), workdir, log, env, niceness))


# Where the killed run is killed, in order: (name, what of the run's processes must be running,
# the file that must exist). Each is waited for, then the whole run is killed with SIGKILL,
# unlocked as the README says, and resumed with --rerun-incomplete.
KILL_POINTS = (
    ("warm-up", "-m bnstudy.tools.warmup", None),  # Snakemake's onstart: compiling or loading the kernels
    ("training", ".train.py", "results/logs/train_grid"),  # a grid training job (workflow/scripts/train.py)
    ("paper", "build_paper.py", "results/logs/paper.log"),  # the paper job, LaTeX running
)
INSIDE = 0.1  # seconds between reaching a kill point and the kill: inside the job, not at its start
KILL_RECORD = "# kill: "  # the log's lines recording each kill (JSON after the prefix)


def session_commands(sid: int) -> list[str]:
    """The command lines of the processes of session ``sid`` (Linux ``/proc``)."""
    commands = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.getsid(int(entry)) != sid:
                continue
            raw = Path(f"/proc/{entry}/cmdline").read_bytes()
        except (ProcessLookupError, PermissionError, FileNotFoundError):
            continue
        if raw:
            commands.append(raw.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace"))
    return commands


def _at_point(workdir: Path, sid: int, running: str, marker: str | None) -> bool:
    if marker is not None:
        path = workdir / marker
        if not path.exists() or (path.is_dir() and not any(path.iterdir())):
            return False
    return any(running in c for c in session_commands(sid))


def check_killed(workdir: Path, configfile: str) -> dict:
    """After a kill: every output at its final path must be whole. Compares what is on disk with the
    config's expected manifest (if it exists); raises ``RuntimeError`` naming any file that is
    there but not the expected bytes (a half-written file), or a build that verifies as complete."""
    expected = expected_for(configfile, workdir)
    if not expected.is_file():
        return {"checked": False}
    problems, _ = manifest.check_files(expected, workdir / "results")
    partial = problems[problems["problem"] != manifest.MISSING]
    if not partial.empty:
        raise RuntimeError(
            "after a kill, files on disk that are not the expected bytes: "
            + "; ".join(manifest.describe_problems(partial))
        )
    if problems.empty:
        raise RuntimeError("a killed run verifies as complete: nothing was left to do when it was killed")
    rows = len(manifest.read(expected))
    return {"checked": True, "whole": rows - int((problems["path"] != manifest.MANIFEST).sum()), "expected": rows}


def _survivors(sid: int, grace: float = 2.0) -> list[str]:
    """The processes of session ``sid`` still there ``grace`` seconds after its process group was
    killed: none, unless a job's process left its group (the job server's forks stay in it)."""
    deadline = time.monotonic() + grace
    while (left := session_commands(sid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def run_killed_then_resumed(
    workdir: Path,
    configfile: str,
    log=None,
    points=KILL_POINTS,
    timeout: float = 1800,
    env=None,
    niceness: int = 0,
) -> list[dict]:
    """Start a run and SIGKILL it (its whole process group) at each of ``points`` in turn, each time
    unlocking the directory (``snakemake --unlock``), checking that no file on disk is half-written
    (:func:`check_killed`) and resuming with ``--rerun-incomplete``; the last resumption runs to
    the end.

    A point is reached when a process of the run whose command line holds its ``running`` text is
    under way (and its ``marker`` file exists); the kill follows :data:`INSIDE` later if such a
    process is still running then (else the wait for the point starts again: a job handed to the
    job server can end sooner), and is recorded with the commands then running. Returns one record
    per kill (also written to ``log`` as ``# kill: {json}`` lines); raises ``RuntimeError`` if the
    run finishes before a point or a point is not reached within ``timeout`` seconds of the start
    of its run.
    """
    start = time.monotonic()
    records = []
    unlock = [sys.executable, "-m", "snakemake", "--unlock", "--configfile", configfile, "-q"]
    for i, (name, running, marker) in enumerate(points):
        extra = ["--rerun-incomplete"] if i else []
        proc = _start(snakemake_cmd(configfile, 2, extra), workdir, log, env, niceness)
        started = time.monotonic()
        while True:
            while not _at_point(workdir, proc.pid, running, marker):
                if proc.poll() is not None:
                    _wait(proc, check=False)
                    raise RuntimeError(f"the run finished before the {name} point; nothing to kill")
                if time.monotonic() - started > timeout:
                    os.killpg(proc.pid, signal.SIGKILL)
                    _wait(proc, check=False)
                    raise RuntimeError(f"the {name} point was not reached in time")
                time.sleep(0.02)
            time.sleep(INSIDE)  # inside it
            commands = session_commands(proc.pid)
            if any(running in c for c in commands):  # still at it (a job can end within INSIDE)
                break
        os.killpg(proc.pid, signal.SIGKILL)
        killed_at = time.monotonic() - start
        _wait(proc, check=False)
        survivors = _survivors(proc.pid)
        _wait(_start(unlock, workdir, log, env, niceness))
        record = {
            "point": name,
            "seconds": round(killed_at, 1),
            "running": [c for c in commands if running in c],
            "survivors": survivors,
            **check_killed(workdir, configfile),
        }
        records.append(record)
        if log is not None:
            log.write(KILL_RECORD + json.dumps(record) + "\n")
            log.flush()
    run(workdir, configfile, 2, ["--rerun-incomplete"], log, env, niceness)
    return records


def compare(manifests: dict[str, Path]) -> list[str]:
    """Problems found comparing every manifest with the first; empty if identical.

    Each names the first rule in DAG order whose outputs differ, its files and,
    for its JSON and CSV files, the values that moved (at most about 20 lines);
    a manifest's run directory is the parent of its ``results/``.
    """
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
        rule = manifest.difference_rule(diff)
        files = ", ".join(diff["path"].tolist())
        lines = [f"{name} differs from {ref_name}: first rule in DAG order: {rule}; files: {files}"]
        lines += [
            "  " + line
            for line in manifest.summary_value_diffs(diff, manifests[ref_name].parents[1], manifests[name].parents[1])
        ]
        problems.append("\n".join(lines))
    return problems


RUNS = ("cores1", "cores4", "killed-resumed")
CONCURRENT = (("cores1", "cores4", "killed-resumed"),)  # runs started together
# The runs share the machine; the single-core run has one job at a time and would
# get one share in seven of the CPU beside the others' six jobs, then finish last,
# alone on an otherwise idle machine. The runs with parallel jobs run at the lowest
# priority instead, so the serial run keeps a core and the others fill what is left.
# Priorities change timings only: every job pins its threads, the bytes are the same.
NICENESS = {"cores1": 0, "cores4": 19, "killed-resumed": 19}
# In the test suite the runs share the machine with the tests and with the tiny Fashion build on
# SLURM, whose chain (the build, then the tests that read it and the cluster's own tests, which
# mostly wait on SLURM) is the suite's longest: there every run is at the lowest priority, so the
# tests and the SLURM jobs go first and the runs fill the cores the waiting leaves idle.
LOWEST = {name: 19 for name in NICENESS}


def run_all(
    root: Path,
    configfile: str,
    base: Path,
    runs=RUNS,
    envs: dict[str, dict[str, str]] | None = None,
    niceness: dict[str, int] = NICENESS,
) -> tuple[dict[str, Path], dict[str, float]]:
    """Run the workflow at ``root`` once per entry of ``runs``, each in ``base/<name>``,
    on its simulated machine (``RUN_ENVIRONMENTS``; ``envs``: name -> variables,
    default :func:`bnstudy.pipeline.machines.environments`), at ``niceness`` (:data:`NICENESS`; the
    test suite: :data:`LOWEST`).

    Each run's log (``base/<name>.log``) starts with what its machine looks like
    from inside. Returns the manifest path and wall seconds of each run; raises
    ``subprocess.CalledProcessError`` (with the log path in ``base``) if a run fails.
    """
    envs = environments() if envs is None else envs
    how = {  # name -> (workdir, log, environment, niceness) -> None
        "cores1": lambda d, log, env, n: run(d, configfile, 1, log=log, env=env, niceness=n),
        "cores4": lambda d, log, env, n: run(d, configfile, 4, log=log, env=env, niceness=n),
        "killed-resumed": lambda d, log, env, n: print(
            "  killed "
            + ", ".join(
                f"during {k['point']} after {k['seconds']:.0f} s"
                for k in run_killed_then_resumed(d, configfile, log, env=env, niceness=n)
            )
            + "; resumed each time",
            flush=True,
        ),
    }
    manifests, times = {}, {}

    def one(name):
        env_name = RUN_ENVIRONMENTS[name]
        env = envs[env_name]
        d = copy_workflow(root, base / name)
        with open(base / f"{name}.log", "w") as log:
            try:
                seen = describe_environment(env)
                note = summary(seen)
            except (RuntimeError, subprocess.SubprocessError, ValueError) as e:
                seen, note = {}, f"not described: {e}"
            log.write(f"# simulated machine {env_name}: {json.dumps(env)}\n")
            log.write("".join(f"#   {k}: {v}\n" for k, v in seen.items()))
            log.flush()
            print(f"run {name} on {env_name} ({note}) in {d}", flush=True)
            t = time.monotonic()
            how[name](d, log, env, niceness[name])
        times[name] = time.monotonic() - t
        manifests[name] = d / "results" / "manifest.tsv"

    for together in CONCURRENT:
        names = [n for n in together if n in runs]
        with ThreadPoolExecutor(max_workers=len(names) or 1) as pool:
            for future in [pool.submit(one, n) for n in names]:
                future.result()  # re-raises a failed run's error
    return {n: manifests[n] for n in runs}, times


def expected_for(configfile: str, root: Path = Path(".")) -> Path:
    """The expected manifest of a config: ``config/expected/<name>.manifest.tsv``."""
    return Path(root) / "config" / "expected" / f"{Path(configfile).stem}.manifest.tsv"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configfile", default="config/test.yaml")
    parser.add_argument("--root", default=".", help="the workflow to copy (default: current directory)")
    parser.add_argument("--keep", action="store_true", help="keep the run directories")
    parser.add_argument(
        "--expected",
        default=None,
        help="expected manifest to compare with (default: config/expected/<config name>.manifest.tsv)",
    )
    parser.add_argument(
        "--update-expected", action="store_true", help="if the runs agree, write their manifest as the expected one"
    )
    parser.add_argument(
        "--show-environments",
        action="store_true",
        help="print the simulated machines and what each looks like from inside; run nothing",
    )
    args = parser.parse_args(argv)
    root = Path(args.root).resolve()
    if args.show_environments:
        for name, env in environments().items():
            print(f"{name}: {' '.join(f'{k}={v}' for k, v in env.items()) or '(no variables)'}")
            for k, v in describe_environment(env).items():
                print(f"    {k}: {v}")
        return 0
    expected = Path(args.expected) if args.expected else expected_for(args.configfile, root)
    base = Path(tempfile.mkdtemp(prefix="bnstudy-determinism-"))
    keep = args.keep
    try:
        try:
            manifests, times = run_all(root, args.configfile, base)
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
        print(
            f"identical: {len(manifests)} manifests of {rows} files each "
            f"({', '.join(f'{k} on {RUN_ENVIRONMENTS[k]} {v:.0f} s' for k, v in times.items())})"
        )
        results = manifests[RUNS[0]].parent
        if args.update_expected:
            n, changes = manifest.write_expected(results, expected)
            print(f"wrote {n} files to {expected}" + ("; changed:" if changes else ""))
            for line in changes:
                print(line)
            return 0
        if not expected.is_file():
            print(
                f"no expected manifest {expected} to compare with "
                f"(create it: python -m bnstudy.pipeline.determinism --update-expected)"
            )
            return 0
        identical, lines = manifest.verify(expected, results)
        print("\n".join(lines))
        if not identical:
            keep = True
        return 0 if identical else 1
    finally:
        if keep:
            print(f"run directories kept in {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
