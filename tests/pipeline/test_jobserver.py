"""The job server (bnstudy.pipeline.jobserver): a script handed to it runs in a fork of the server as it
would in its own process (directory, environment, streams, exit status, log), a job whose environment
differs runs alone, and a killed job's fork dies with it. The pipeline's use of it is checked by the
determinism runs (tests/workflow/test_pipeline.py), which reproduce the committed manifests through it."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bnstudy.pipeline import jobserver
from conftest import ROOT

pytestmark = pytest.mark.slow  # starts a server and the jobs' processes

# A rule script's shape: hand off first (as workflow/scripts/_setup.py's start() does), then the job.
SCRIPT = """
import os, sys, time
sys.path.insert(0, {src!r})
from bnstudy.pipeline import jobserver
status = jobserver.hand_off(sys.argv[0], "job.log")
if status is not None:
    sys.exit(status)
preloaded = "numba" in sys.modules and "pandas" in sys.modules  # before this script imports anything
with open("job.log", "w") as f:
    f.write("the job's own log\\n")
with open("where.txt", "w") as f:
    f.write(f"{{os.getpid()}}\\n{{os.getcwd()}}\\n{{os.environ.get('JOB_VALUE')}}\\n{{preloaded}}\\n")
print("to stdout")
print("to stderr", file=sys.stderr)
if os.environ.get("JOB_SLEEP"):
    import subprocess
    child = subprocess.Popen(["sleep", os.environ["JOB_SLEEP"]])
    with open("child.txt", "w") as f:
        f.write(str(child.pid))
    time.sleep(float(os.environ["JOB_SLEEP"]))
if os.environ.get("JOB_RAISE"):
    raise ValueError("the job failed")
sys.exit(int(os.environ.get("JOB_EXIT", "0")))
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A server started as the workflow's onstart starts it (this test process in Snakemake's place)."""
    log = tmp_path_factory.mktemp("server") / "jobserver.log"
    address = jobserver.start(str(ROOT), str(ROOT / "src"), str(log), "bnstudy.tools.warmup:compile_all")
    assert address is not None, log.read_text()
    yield address
    jobserver.stop()


def run_job(tmp_path, address, **env):
    script = tmp_path / "job.py"
    script.write_text(SCRIPT.format(src=str(ROOT / "src")))
    job_env = {k: v for k, v in os.environ.items() if k != jobserver.VARIABLE}
    if address is not None:
        job_env[jobserver.VARIABLE] = address
    job_env.update(env)
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=job_env, capture_output=True, text=True, timeout=120
    )
    where = (tmp_path / "where.txt").read_text().splitlines() if (tmp_path / "where.txt").exists() else None
    return proc, where


def test_a_handed_off_script_runs_in_a_fork_with_the_jobs_directory_environment_and_streams(tmp_path, server):
    proc, where = run_job(tmp_path, server, JOB_VALUE="seven", JOB_EXIT="3")
    assert proc.returncode == 3
    assert proc.stdout == "to stdout\n" and proc.stderr == "to stderr\n"
    pid, cwd, value, preloaded = where
    assert cwd == str(tmp_path) and value == "seven"
    assert preloaded == "True"  # numba and pandas were there before the script imported them: the server's fork
    log = (tmp_path / "job.log").read_text().splitlines()
    assert log[0] == "the job's own log" and log[-1].startswith(jobserver.RECORD + " ")
    cpu_s, rss_mb = jobserver.usage_in_log(tmp_path / "job.log")
    assert cpu_s >= 0 and rss_mb > 50  # the fork holds the server's imports


def test_a_script_that_raises_exits_1_with_its_traceback(tmp_path, server):
    proc, _ = run_job(tmp_path, server, JOB_RAISE="1")
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr and proc.stderr.rstrip().endswith("ValueError: the job failed")


def test_without_a_server_the_script_runs_in_its_own_process(tmp_path):
    proc, where = run_job(tmp_path, None, JOB_EXIT="0")
    assert proc.returncode == 0 and where[3] == "False"
    assert jobserver.usage_in_log(tmp_path / "job.log") is None
    proc, where = run_job(tmp_path, "bnstudy-jobs-nobody-listens", JOB_EXIT="0")
    assert proc.returncode == 0 and where[3] == "False"


def test_a_job_whose_import_time_environment_differs_runs_alone_and_says_why(tmp_path, server):
    proc, where = run_job(tmp_path, server, NUMBA_OPT="1", OMP_NUM_THREADS="7")
    assert proc.returncode == 0 and where[3] == "False"
    assert "bnstudy: job server: running here (environment differs in NUMBA_OPT)" in proc.stderr


def test_inside_a_slurm_job_the_script_runs_alone(tmp_path, server):
    proc, where = run_job(tmp_path, server, SLURM_JOB_ID="12")
    assert proc.returncode == 0 and where[3] == "False"


def test_killing_the_jobs_process_kills_its_fork_and_what_the_fork_started(tmp_path, server):
    script = tmp_path / "job.py"
    script.write_text(SCRIPT.format(src=str(ROOT / "src")))
    env = dict(os.environ, JOB_SLEEP="60", **{jobserver.VARIABLE: server})
    proc = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL)
    where = tmp_path / "where.txt"
    deadline = time.monotonic() + 60
    child = tmp_path / "child.txt"
    while not (where.exists() and len(where.read_text().splitlines()) == 4 and child.exists()):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    fork = int(where.read_text().splitlines()[0])
    sleeper = int(child.read_text())
    assert fork != proc.pid and _state(sleeper) not in ("gone", "Z")
    assert os.getpgid(fork) == os.getpgid(os.getpid())  # the server's group (Snakemake's in a build)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    for pid, what in ((fork, "the fork"), (sleeper, "the process the fork started")):
        while _state(pid) not in ("gone", "Z"):
            assert time.monotonic() < deadline, f"{what} outlived its job"
            time.sleep(0.05)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_the_server_stops_when_snakemake_is_gone(tmp_path):
    """Started by a process that then exits (Snakemake killed), the server stops answering."""
    code = (
        "import sys; sys.path.insert(0, {src!r}); from bnstudy.pipeline import jobserver; "
        "print(jobserver.start({root!r}, {src!r}, {log!r}), flush=True)"
    ).format(src=str(ROOT / "src"), root=str(ROOT), log=str(tmp_path / "server.log"))
    address = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert address.startswith("bnstudy-jobs-")
    import socket

    deadline = time.monotonic() + 15
    while True:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect("\0" + address)
        except OSError:
            break  # no one listens
        finally:
            probe.close()
        assert time.monotonic() < deadline, "the server outlived the process that started it"
        time.sleep(0.2)


def test_off_starts_no_server(monkeypatch, tmp_path):
    monkeypatch.setenv(jobserver.VARIABLE, "off")
    assert jobserver.start(str(ROOT), str(ROOT / "src"), str(tmp_path / "log")) is None


def test_the_usage_line_is_read_from_the_end_of_a_log(tmp_path):
    log = tmp_path / "x.log"
    log.write_text(f"a line\n{jobserver.RECORD} cpu_s=1.250 max_rss_mb=300.5\n")
    assert jobserver.usage_in_log(log) == (1.25, 300.5)
    assert jobserver.usage_in_log(tmp_path / "missing.log") is None


def test_a_kernel_without_process_file_descriptors_starts_no_server(monkeypatch, tmp_path):
    def refused(pid):
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(os, "pidfd_open", refused)
    assert not jobserver.available()
    assert jobserver.start(str(ROOT), str(ROOT / "src"), str(tmp_path / "log")) is None
