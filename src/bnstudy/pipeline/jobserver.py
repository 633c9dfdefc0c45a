"""Run the rule scripts of a local build in forks of one process that has already imported what they use.

Why this is written here: Snakemake starts a fresh Python interpreter for every ``script:`` job,
and a job of this pipeline pays about 1.5 to 2 CPU s before it computes (the interpreter, NumPy,
Numba, pandas, matplotlib, and Numba's typing of each cached kernel it loads). In the test config
that is most of every job; Snakemake has no way to share it. So, for a build on this machine, the
workflow's ``onstart`` starts this server (:func:`start`): it imports those packages and runs what
the workflow names to load every kernel once (``bnstudy.tools.warmup:compile_all``, from the
on-disk cache the warm-up just filled), then waits. Each job's own process (the interpreter
Snakemake started, at the first line of the rule script that calls ``_setup.start``) hands the
server its script file, working directory, environment and standard streams (:func:`hand_off`)
and waits; the server forks, the fork runs the script from its first line as the job's process
would have, and the job's process exits with the fork's exit status.

What stays the same: the outputs (the same code computes them; a fork inherits imported modules
and the machine code a fresh process would load from the same cache), the log, the exit status,
and a killed job (when the job's process is gone, the fork is killed: :func:`_supervise`). What
changes: Snakemake's benchmark file measures the job's own process, so its ``cpu_time`` and
``max_rss`` are the hand-off's; the fork's own CPU seconds and peak memory are appended to the
job's log as one line (:data:`RECORD`), which :mod:`bnstudy.pipeline.plan` and the runtimes read.

When it is not used (the script then runs in the job's own process, as without it): on a cluster
(the workflow starts it only when Snakemake executes jobs locally) or inside a SLURM job; with
``BNSTUDY_JOBSERVER=off``; off Linux; when the job's interpreter, or a variable of its environment
that the server's imports already read (:data:`READ_AT_IMPORT`), differs from the server's (a
conda environment, ``--sdm conda``); when the server does not answer.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
import time
from pathlib import Path

VARIABLE = "BNSTUDY_JOBSERVER"  # the server's address in the jobs' environment; "off": never start one
RECORD = "bnstudy-jobserver-usage"  # the log line a forked job ends with: "<RECORD> cpu_s=... max_rss_mb=..."
# Variables that what the server imported has already read: a job whose value differs would
# not run as it would alone, so it runs alone ...
READ_AT_IMPORT = ("NUMBA_", "NPY_", "ATEN_", "MKL_", "ONEDNN_", "GLIBC_TUNABLES", "LD_", "PYTHON", "MPL")
READ_AT_IMPORT += ("XDG_CACHE_HOME", "HOME", "BNSTUDY_")  # the kernel cache's place (bnstudy/__init__.py)
# ... except these: thread counts, which every job sets for itself (bnstudy.base.runtime) and
# Snakemake sets per job; the search path, which the fork takes from the job's script as a fresh
# process would (the server's own is the package's source directory, where the job's script finds it).
NOT_READ_AT_IMPORT = (VARIABLE, "PYTHONPATH")
_LENGTH = struct.Struct("!Q")


def available() -> bool:
    """Whether this system can run a server: Linux (abstract sockets), file descriptors over sockets,
    and process file descriptors (Linux 5.3 and later: an older kernel, on some clusters' login nodes,
    has the function but refuses the call)."""
    if not (sys.platform.startswith("linux") and hasattr(socket, "send_fds") and hasattr(os, "pidfd_open")):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    return True


def _relevant(env) -> dict:
    return {
        k: v
        for k, v in env.items()
        if k.startswith(READ_AT_IMPORT) and k not in NOT_READ_AT_IMPORT and not k.endswith("_NUM_THREADS")
    }


def _send(conn: socket.socket, payload: dict, fds=()) -> None:
    body = json.dumps(payload).encode()
    if fds:
        socket.send_fds(conn, [_LENGTH.pack(len(body))], list(fds))
    else:
        conn.sendall(_LENGTH.pack(len(body)))
    conn.sendall(body)


def _exactly(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def _receive(conn: socket.socket, fds: int = 0):
    if fds:
        head, received, _, _ = socket.recv_fds(conn, _LENGTH.size, fds)
        head += _exactly(conn, _LENGTH.size - len(head)) if len(head) < _LENGTH.size else b""
    else:
        head, received = _exactly(conn, _LENGTH.size), []
    (length,) = _LENGTH.unpack(head)
    return json.loads(_exactly(conn, length)), received


# ---- the job's side ------------------------------------------------------------------------------


def hand_off(script: str, log: str | None) -> int | None:
    """Run ``script`` (this process's own script file) in a fork of the server; return its exit
    status, or ``None`` when this job should run it itself (no server, or one that refused it)."""
    address = os.environ.get(VARIABLE, "")
    if address in ("", "off") or "SLURM_JOB_ID" in os.environ or not available():
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect("\0" + address)
    except OSError:
        return None
    with conn:
        request = {
            "script": os.path.abspath(script),
            "cwd": os.getcwd(),
            "env": dict(os.environ),
            "executable": sys.executable,
            "version": sys.version,
        }
        sys.stdout.flush()
        sys.stderr.flush()
        _send(conn, request, fds=(0, 1, 2))
        try:
            reply, _ = _receive(conn)
        except ConnectionError:  # the server went away mid-job: the job failed
            print("bnstudy: job server: the server stopped while it ran this job", file=sys.stderr)
            return 1
    if "refused" in reply:
        print(f"bnstudy: job server: running here ({reply['refused']})", file=sys.stderr)
        return None
    if log:
        with open(log, "a") as f:
            f.write(f"{RECORD} cpu_s={reply['cpu_s']:.3f} max_rss_mb={reply['max_rss_mb']:.1f}\n")
    return int(reply["status"])


def usage_in_log(path) -> tuple[float, float] | None:
    """``(cpu_s, max_rss_mb)`` from a job log's :data:`RECORD` line, or ``None`` (the job ran alone)."""
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if line.startswith(RECORD + " "):
            fields = dict(part.split("=", 1) for part in line.split()[1:])
            return float(fields["cpu_s"]), float(fields["max_rss_mb"])
    return None


# ---- the server's side -------------------------------------------------------------------------


def _refusal(request: dict) -> str | None:
    if request["executable"] != sys.executable or request["version"] != sys.version:
        return f"another interpreter: {request['executable']}"
    ours, theirs = _relevant(os.environ), _relevant(request["env"])
    differ = sorted(k for k in ours.keys() | theirs.keys() if ours.get(k) != theirs.get(k))
    return f"environment differs in {', '.join(differ)}" if differ else None


def _run_script(request: dict, fds: list[int]) -> None:
    """In the fork: become the job's process (streams, directory, environment), run its script, exit."""
    import runpy
    import signal
    import traceback

    # in the server's process group, which is Snakemake's, as a job's own process is: killing that
    # group (Ctrl-C in a terminal, a killed run) reaches the script and anything it started
    try:  # die with the supervising fork
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD, signal.SIGPIPE):
        signal.signal(signum, signal.SIG_DFL)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.environ[VARIABLE] = "off"  # the script's own start(), and any process it starts, run here
    sys.argv = [request["script"]]
    status = 0
    try:
        runpy.run_path(request["script"], run_name="__main__")
    except SystemExit as stop:
        code = stop.code
        status = code if isinstance(code, int) else (0 if code is None else 1)
        if not isinstance(code, int) and code is not None:
            print(code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
        status = 1
    import logging

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


def _kill_tree(pid: int) -> None:
    """SIGKILL the script's process ``pid`` and every process it started (pdfTeX under latexmk, say)."""
    import psutil

    try:
        tree = [psutil.Process(pid)]
        tree += tree[0].children(recursive=True)
    except psutil.NoSuchProcess:
        return
    for proc in reversed(tree):
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass


def _supervise(conn: socket.socket) -> None:
    """In a fork of the server, one per job: check the request, fork the script's process, wait for
    it or for the job's process to go away (then kill it), reply with its status and usage."""
    import select

    request, fds = _receive(conn, fds=3)
    refused = _refusal(request)
    if refused:
        _send(conn, {"refused": refused})
        os._exit(0)
    pid = os.fork()
    if pid == 0:
        conn.close()
        _run_script(request, fds)
    for fd in fds:
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    while True:
        ready, _, _ = select.select([conn, pidfd], [], [])
        if pidfd in ready:
            break
        if not conn.recv(1, socket.MSG_PEEK):  # the job's process is gone: so is its script's
            _kill_tree(pid)
            os.waitpid(pid, 0)
            os._exit(0)
    _, status, usage = os.wait4(pid, 0)
    reply = {
        "status": os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status),
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "max_rss_mb": usage.ru_maxrss / 1024,
    }
    try:
        _send(conn, reply)
    except OSError:
        pass
    os._exit(0)


def _preload(preload: str) -> None:
    """Import what the rule scripts use, then call ``preload`` (``module:function``, e.g.
    ``bnstudy.tools.warmup:compile_all``, which loads every kernel)."""
    import importlib

    import matplotlib.pyplot  # noqa: F401
    import numpy  # noqa: F401
    import pandas  # noqa: F401
    import psutil  # noqa: F401  (for _kill_tree)
    import yaml  # noqa: F401

    if preload:
        # by name, not by an import statement: bnstudy.pipeline.codedeps reads import statements to find
        # a job's code, and what the server preloads is not what any job computes with (the job's
        # script imports that itself); a statement would make every rule depend on every kernel
        module, function = preload.split(":")
        getattr(importlib.import_module(module), function)()


def serve(address: str, parent: int, ready, preload: str = "") -> None:
    """Listen on ``address`` (Linux's abstract namespace) until ``parent`` (Snakemake) is gone."""
    import signal
    import threading

    _preload(preload)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind("\0" + address)
    listener.listen(64)
    listener.settimeout(1.0)
    if threading.active_count() != 1:  # a fork copies only the forking thread: serve nothing
        raise SystemExit(f"bnstudy: job server: {threading.active_count()} threads after loading; not serving")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    ready.write("ready\n")
    ready.flush()
    ready.close()
    sys.stdout.flush()
    sys.stderr.flush()
    while os.getppid() == parent:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            conn = None
        if conn is not None:
            conn.settimeout(None)
            if os.fork() == 0:
                listener.close()
                try:
                    _supervise(conn)
                finally:
                    os._exit(1)
            conn.close()
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass


def start(workdir: str, src: str, log: str, preload: str = "") -> str | None:
    """Start a server for the build in ``workdir`` (its package under ``src``; ``preload``: what it
    calls after its imports, ``module:function``); return its address once it is ready to serve, or
    ``None`` (no server: the jobs start as they would without one), saying why in ``log``."""
    if os.environ.get(VARIABLE) == "off" or not available():
        return None
    import hashlib
    import subprocess

    address = "bnstudy-jobs-" + hashlib.sha256(f"{os.path.realpath(workdir)}\0{os.getpid()}".encode()).hexdigest()[:24]
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bnstudy.pipeline.jobserver", address, str(os.getpid()), preload],
            cwd=workdir,
            env=dict(os.environ, PYTHONPATH=src),
            stdout=subprocess.PIPE,
            stderr=out,
            text=True,
        )
    line = proc.stdout.readline()
    proc.stdout.close()
    if line.strip() != "ready":
        proc.kill()
        proc.wait()
        return None
    _SERVERS.append(proc)
    return address


_SERVERS: list = []


def stop() -> None:
    """Stop the servers this process started (the workflow's ``onsuccess`` and ``onerror``)."""
    while _SERVERS:
        proc = _SERVERS.pop()
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except Exception:
            proc.kill()


def main(argv=None) -> None:
    address, parent, preload = [*(argv or sys.argv[1:]), ""][:3]
    ready = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything the imports print goes to the log, not to the readiness pipe
    started = time.monotonic()
    serve(address, int(parent), _Announce(ready, started), preload)


class _Announce:
    """The readiness pipe, which also logs how long loading took."""

    def __init__(self, stream, started):
        self.stream, self.started = stream, started

    def write(self, text):
        print(f"bnstudy: job server ready in {time.monotonic() - self.started:.1f} s", file=sys.stderr, flush=True)
        self.stream.write(text)

    def flush(self):
        self.stream.flush()

    def close(self):
        self.stream.close()


if __name__ == "__main__":
    main()
