"""The workflow on a real SLURM cluster (profiles/slurm) gives the local run's bytes.

Needs a running cluster, e.g. the single-node one of ``scripts/slurm-local start``
(``make slurm-test`` starts it, runs these tests and stops it). Without one every
test here is skipped, with the reason.

The test config is run twice from empty ``results/`` folders in scratch copies of
the workflow: locally (``profiles/default``) and through the SLURM executor
(``--workflow-profile profiles/slurm``). The SLURM run must write a
``results/manifest.tsv`` byte-identical to the local one, every job must have gone
through SLURM (a job id in Snakemake's output, a SLURM log file per id, and the id
known to ``squeue`` as COMPLETED: the local cluster has no accounting database, so
``sacct`` is not used), and a job that fails on the cluster must end the run with
an error within a bounded time instead of leaving Snakemake waiting.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from bnstudy.base.determinism import NICENESS, copy_workflow, niced

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "profiles" / "slurm"
CONFIG = "config/test.yaml"
# Poll squeue 2 s after a job ends instead of the profile's 20 s: the test's jobs
# are short, and the cluster's MinJobAge (scripts/slurm-local) stays far above
# three such intervals, so finished jobs remain visible. SLURM's logs of
# successful jobs are kept for the checks.
CLUSTER_ARGS = ["--slurm-init-seconds-before-status-checks", "2", "--slurm-keep-successful-logs"]
RUN_TIMEOUT = 45 * 60  # the whole test config on the cluster, at low priority beside the other runs
BACKGROUND_NICENESS = max(NICENESS.values())
FAILURE_TIMEOUT = 3 * 60  # a single failing job must be reported well within this
# "Job 3 has been submitted with SLURM jobid 17 (log: ...)."; group jobs are named by a UUID
SUBMITTED = re.compile(r"Job (\S+) has been submitted with SLURM jobid (\d+) \(log: (\S+)\)\.")


def cluster_problem() -> str | None:
    """Why no SLURM cluster can be used here, or None if ``sinfo`` shows a usable node."""
    if shutil.which("sinfo") is None:
        return "no SLURM client (sinfo) installed; run `scripts/slurm-local start` or `make slurm-test`"
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return "sinfo did not answer within 20 s"
    if out.returncode != 0:
        return (
            f"sinfo cannot reach a SLURM controller ({out.stderr.strip().splitlines()[-1:]}); "
            "run `scripts/slurm-local start` or `make slurm-test`"
        )
    states = out.stdout.split()
    if not any(s.rstrip("*~#$@^-").startswith(("idle", "mix", "alloc")) for s in states):
        return f"the SLURM cluster has no usable node (sinfo states: {states})"
    return None


@pytest.fixture(scope="module")
def cluster():
    problem = cluster_problem()
    if problem:
        pytest.skip(problem)


def start_snakemake(workdir: Path, args: list[str], log: Path, niceness: int = 0) -> subprocess.Popen:
    """Start Snakemake with this interpreter in ``workdir``, output to ``log``; at ``niceness``
    (its SLURM jobs too: scripts/slurm-local's cluster propagates the submitter's niceness)."""
    with open(log, "w") as out:
        return subprocess.Popen(
            niced([sys.executable, "-m", "snakemake", *args], niceness),
            cwd=workdir,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def finish(proc: subprocess.Popen, timeout: float) -> int | None:
    """Wait for ``proc``; on timeout interrupt it (Snakemake then cancels its SLURM
    jobs), kill it if that does not end it, and return None."""
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        return None


def snakemake(workdir: Path, args: list[str], log: Path, timeout: float) -> tuple[int | None, float, str]:
    """Run Snakemake in ``workdir``: (exit status or None on timeout, seconds, output)."""
    start = time.monotonic()
    code = finish(start_snakemake(workdir, args, log), timeout)
    return code, time.monotonic() - start, log.read_text()


def squeue_states(job_ids: list[str]) -> dict[str, tuple[str, str]]:
    """Job id -> (state, job name) for the given ids, finished ones included."""
    out = subprocess.run(
        ["squeue", "--states=all", "--noheader", "--format=%i|%T|%j", "--jobs=" + ",".join(job_ids)],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = (line.split("|") for line in out.stdout.splitlines() if line.strip())
    return {jid: (state, name) for jid, state, name in rows}


def start_in_background(tmp_path_factory):
    """Start the test config on SLURM in a scratch copy: ``(copy, log, start time, process)``,
    or None without a usable cluster. Called by conftest when collection ends, so the run
    goes on beside the unit tests."""
    if cluster_problem():
        return None
    remote = copy_workflow(ROOT, tmp_path_factory.mktemp("slurm"))
    log = remote / "snakemake.log"
    args = ["--configfile", CONFIG, "--workflow-profile", str(PROFILE), *CLUSTER_ARGS]
    # at the determinism runs' low priority (bnstudy.base.determinism.NICENESS): it runs beside them
    return remote, log, time.monotonic(), start_snakemake(remote, args, log, BACKGROUND_NICENESS)


@pytest.fixture(scope="module")
def cluster_runs(cluster, runs, tmp_path_factory):
    """The test config on SLURM, beside the suite's local run of it (conftest's
    ``runs``: the cores-4 run of the determinism check)."""
    from conftest import BACKGROUND

    base, _, _ = runs
    local = base / "cores4"
    started = BACKGROUND.get("cluster_runs") or start_in_background(tmp_path_factory)
    remote, log, start, proc = started
    code = finish(proc, max(RUN_TIMEOUT - (time.monotonic() - start), 1))
    seconds, output = time.monotonic() - start, log.read_text()
    print(f"\ntest config on SLURM: {seconds:.0f} s")
    assert code is not None, f"the SLURM run did not finish within {RUN_TIMEOUT} s:\n" + output[-3000:]
    assert code == 0, "the SLURM run of the test config failed:\n" + output[-3000:]
    return local, remote, output


@pytest.fixture(scope="module")
def slurm_run(cluster_runs):
    _, remote, output = cluster_runs
    return remote, output


def test_slurm_run_writes_the_local_runs_manifest(cluster_runs):
    local_work, slurm_work, _ = cluster_runs
    local = (local_work / "results" / "manifest.tsv").read_bytes()
    remote = (slurm_work / "results" / "manifest.tsv").read_bytes()
    assert len(local.splitlines()) > 1
    assert remote == local


def test_every_job_of_the_slurm_run_went_through_slurm(slurm_run):
    work, output = slurm_run
    submitted = SUBMITTED.findall(output)
    assert submitted, "no 'submitted with SLURM jobid' line in Snakemake's output"
    job_ids = [jid for _, jid, _ in submitted]
    assert len(set(job_ids)) == len(job_ids), "a SLURM job id was reported twice"
    # Snakemake ran nothing itself but the target rule
    run_locally = re.findall(r"^localrule (\w+):", output, flags=re.M)
    assert set(run_locally) <= {"all"}, f"rules run outside SLURM: {set(run_locally)}"
    # each SLURM job wrote its log file, named by its id
    for _, jid, logfile in submitted:
        path = Path(logfile)
        assert path.name == f"{jid}.log" and path.is_file(), f"no SLURM log for job {jid}: {logfile}"
    # and the controller saw every one of them finish (squeue keeps finished
    # jobs for MinJobAge seconds; all carry the run's id as their job name)
    states = squeue_states(job_ids)
    assert set(states) == set(job_ids), f"squeue does not know jobs {set(job_ids) - set(states)}"
    assert {state for state, _ in states.values()} == {"COMPLETED"}, states
    run_id = re.search(r"SLURM run ID: (\S+)", output).group(1)
    assert {name for _, name in states.values()} == {run_id}


def test_slurm_profile_groups_the_evaluation_jobs(slurm_run):
    _, output = slurm_run
    evaluations = sum(
        int(re.search(rf"^{rule}\s+(\d+)$", output, flags=re.M).group(1))
        for rule in ("evaluate_remedies", "evaluate_sorted")
    )
    logs = [log for _, _, log in SUBMITTED.findall(output)]
    alone = [log for log in logs if "/rule_evaluate_remedies/" in log or "/rule_evaluate_sorted/" in log]
    assert not alone, "evaluation jobs submitted one by one"
    grouped = [log for log in logs if "/group_evaluation" in log]
    assert 1 <= len(grouped) < evaluations


FAILING_SNAKEFILE = textwrap.dedent("""\
    rule fails_on_purpose:
        output: "never-written.txt"
        shell: "echo 'failing on purpose' >&2; exit 1"
    """)


def test_a_failing_slurm_job_ends_the_run_with_an_error(cluster, tmp_path):
    (tmp_path / "Snakefile").write_text(FAILING_SNAKEFILE)
    # the profile's retries would submit it again (tests/test_cluster_config.py checks them)
    code, seconds, output = snakemake(
        tmp_path,
        ["--workflow-profile", str(PROFILE), *CLUSTER_ARGS, "--retries", "0"],
        tmp_path / "snakemake.log",
        FAILURE_TIMEOUT,
    )
    assert code is not None, f"Snakemake still waiting after {seconds:.0f} s:\n{output[-3000:]}"
    assert code != 0
    submitted = SUBMITTED.findall(output)
    assert len(submitted) == 1, output[-3000:]
    jid = submitted[0][1]
    assert re.search(rf"SLURM-job '{jid}' failed, SLURM status is: 'FAILED'", output), output[-3000:]
    assert squeue_states([jid])[jid][0] == "FAILED"
    assert "failing on purpose" in Path(submitted[0][2]).read_text()
    assert not (tmp_path / "never-written.txt").exists()
    print(f"\nfailing job reported after {seconds:.0f} s")
