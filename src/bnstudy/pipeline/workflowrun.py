"""One run of a copy of the workflow, for the determinism check (:mod:`bnstudy.pipeline.determinism`)
and the tests that build in a copy: the workflow's files copied to a fresh directory
(:func:`copy_workflow`), Snakemake run there in its own session with a simulated machine's
environment variables at a given niceness (:func:`run`), and a run killed with SIGKILL at each of
:data:`KILL_POINTS`, checked for half-written files and resumed (:func:`run_killed_then_resumed`)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from bnstudy.pipeline import manifest

EXCLUDE = {"results", ".snakemake", ".venv", ".git", "__pycache__", ".pytest_cache"}


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


def expected_for(configfile: str, root: Path = Path(".")) -> Path:
    """The expected manifest of a config: ``config/expected/<name>.manifest.tsv``."""
    return Path(root) / "config" / "expected" / f"{Path(configfile).stem}.manifest.tsv"
