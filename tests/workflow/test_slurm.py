"""The workflow on a real SLURM cluster (profiles/slurm) gives the expected bytes.

Needs a running cluster, e.g. the single-node one of ``scripts/slurm-local start``
(``make slurm-test`` starts it, runs these tests and stops it). Without one every
test here is skipped, with the reason.

The suite builds part of the reduced Fashion-MNIST config (``config/fashion-tiny.yaml``)
through the SLURM executor (``--workflow-profile profiles/slurm``): the jobs up to its
remedy evaluations (``--until`` :data:`SLURM_UNTIL`: the data split, the batch-norm grid
cells' training and their evaluations, 5 rule jobs in 3 SLURM jobs), started by
:func:`start_slurm_build` from an empty ``results/`` in a scratch copy of the workflow
as soon as pytest has collected the tests (``tests/conftest.py``'s ``slurm_build``), as
the simulated machine without AVX/FMA (``bnstudy.pipeline.machines.environments()["generic"]``;
``sbatch --export=ALL`` hands those variables to every job). Every file it writes that
``config/expected/fashion-tiny.manifest.tsv`` lists must have the bytes listed there. The
whole config is built locally (:func:`start_fashion_build`, conftest's ``fashion_tiny``)
and checked against the whole manifest by ``tests/workflow/test_fashion.py``: through
SLURM each of its 48 rule jobs cost an ``srun`` and a second Snakemake, about 280 CPU s
against 125 locally, and that build was the suite's longest wait.
Here: every job went through SLURM (a job id in Snakemake's output, a SLURM log file
per id, and the id known to ``squeue`` as COMPLETED: the local cluster has no
accounting database, so ``sacct`` is not used), the evaluation jobs were grouped
(as the profile says) and the build's other remote jobs too (level by level of the
rule graph, :func:`level_groups`: the suite's cluster is one node),
a job sees the submitting environment's kernel-selection variables, and a job that
fails on the cluster ends the run with an error within a bounded time instead of
leaving Snakemake waiting.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from bnstudy.pipeline import manifest
from bnstudy.pipeline.determinism import FILLER
from bnstudy.pipeline.machines import environments
from bnstudy.pipeline.workflowrun import copy_workflow, niced, run_environment

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "profiles" / "slurm"
CONFIG = "config/fashion-tiny.yaml"
EXPECTED = ROOT / "config" / "expected" / "fashion-tiny.manifest.tsv"
SLURM_UNTIL = "evaluate_remedies"  # the SLURM build: the jobs this rule's jobs need, and them
MACHINE = "generic"  # the simulated machine the build runs as (its committed manifest was written on another)
# Poll squeue 2 s after a job ends instead of the profile's 20 s: the test's jobs
# are short, and the cluster's MinJobAge (scripts/slurm-local) stays far above
# three such intervals, so finished jobs remain visible. SLURM's logs of
# successful jobs are kept for the checks.
CLUSTER_ARGS = ["--slurm-init-seconds-before-status-checks", "2", "--slurm-keep-successful-logs"]
LOCAL_ARGS = ["--cores", "2", "-q"]  # the whole tiny Fashion build, on this machine
# The suite's cluster is one node of this machine's 2 CPUs, so a SLURM job per rule job buys no
# parallelism, only start-ups: each SLURM job starts Snakemake twice (the job step, then srun's),
# about 4 CPU s more than the same job run locally. The build therefore also groups the rest of its
# remote jobs, level by level of the rule graph (GROUP_COMPONENTS jobs of one level per SLURM
# job; a level's jobs never depend on each other, so no group waits on itself), beside the
# profile's own groups, which it keeps as they are (test_slurm_profile_groups_the_evaluation_jobs
# checks them). The profile itself groups only the evaluations: on a real cluster the training
# jobs run side by side on many nodes.
GROUP_COMPONENTS = 8
RUN_TIMEOUT = 45 * 60  # either build, niced beside the other runs
BACKGROUND_NICENESS = FILLER  # beside the unit tests: the determinism runs' chain is the longest
FAILURE_TIMEOUT = 3 * 60  # a single failing job must be reported well within this
# "Job 3 has been submitted with SLURM jobid 17 (log: ...)."; group jobs are named by a UUID
SUBMITTED = re.compile(r"Job (\S+) has been submitted with SLURM jobid (\d+) \(log: (\S+)\)\.")


@functools.cache
def cluster_problem() -> str | None:
    """Why no SLURM cluster can be used here, or None if ``sinfo`` shows a usable node.

    Asked once per session: where the tiny Fashion build runs and whether the tests here run
    follow the same answer (and a missing controller costs sinfo's wait once)."""
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


# session scope, as conftest's slurm_build: pytest sets up wider-scoped fixtures first, and
# without a cluster the tests must skip before anything waits for the build
@pytest.fixture(scope="session")
def cluster():
    problem = cluster_problem()
    if problem:
        pytest.skip(problem)


def start_snakemake(
    workdir: Path, args: list[str], log: Path, niceness: int = 0, env: dict[str, str] | None = None
) -> subprocess.Popen:
    """Start Snakemake with this interpreter in ``workdir``, output to ``log``; at ``niceness``
    (its SLURM jobs too: scripts/slurm-local's cluster propagates the submitter's niceness);
    ``env``: variables added to the run's environment (bnstudy.pipeline.workflowrun.run_environment)."""
    with open(log, "w") as out:
        return subprocess.Popen(
            niced([sys.executable, "-m", "snakemake", *args], niceness),
            cwd=workdir,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=None if env is None else run_environment(env),
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


def snakemake(
    workdir: Path, args: list[str], log: Path, timeout: float, env: dict[str, str] | None = None
) -> tuple[int | None, float, str]:
    """Run Snakemake in ``workdir``: (exit status or None on timeout, seconds, output)."""
    start = time.monotonic()
    code = finish(start_snakemake(workdir, args, log, env=env), timeout)
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


@dataclass
class Build:
    """A build under way (:func:`start_fashion_build`, :func:`start_slurm_build`), then done (:func:`wait_for`)."""

    where: str  # "slurm" or "local"
    what: str  # for messages: the config, and the part of it built
    workdir: Path
    log: Path
    start: float
    proc: subprocess.Popen
    env: dict[str, str]
    seconds: float | None = None
    output: str = ""


def profile_groups() -> tuple[dict[str, str], dict[str, int]]:
    """The profile's ``groups`` (rule -> group) and ``group-components`` (group -> number)."""
    profile = yaml.safe_load((PROFILE / "config.yaml").read_text())
    return dict(profile.get("groups", {})), dict(profile.get("group-components", {}))


def local_rules(workdir: Path, configfile: str) -> set[str]:
    """The workflow's local rules: the studies' (bnstudy.base.catalogue) and those saying ``localrule: True``."""
    from bnstudy.base import catalogue

    config = yaml.safe_load((workdir / configfile).read_text())
    said = set()
    for smk in [workdir / "Snakefile", *sorted((workdir / "workflow" / "rules").glob("*.smk"))]:
        for block in re.split(r"^(?=rule )", smk.read_text(), flags=re.M):
            rule = re.match(r"rule (\w+):", block)
            if rule and re.search(r"^\s+localrule: True", block, flags=re.M):
                said.add(rule.group(1))
    return set(catalogue.local_rules(config)) | said


def level_groups(workdir: Path, configfile: str) -> list[str]:
    """``--groups`` and ``--group-components`` for a build on the suite's one-node cluster: the
    profile's groups as they are, and every other remote rule in the group of its level in the
    rule graph (the longest path from a rule without inputs), GROUP_COMPONENTS jobs per SLURM job."""
    dot = subprocess.run(
        [sys.executable, "-m", "snakemake", "--configfile", configfile, "--rulegraph", "-q"],
        cwd=workdir,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    names = dict(re.findall(r'^\s*(\d+)\[label = "(\w+)"', dot, flags=re.M))
    parents = {name: set() for name in names.values()}
    for a, b in re.findall(r"^\s*(\d+) -> (\d+)", dot, flags=re.M):
        if a != b:
            parents[names[b]].add(names[a])

    @functools.cache
    def level(rule: str) -> int:
        return 1 + max((level(p) for p in parents[rule]), default=-1)

    groups, components = profile_groups()
    local = local_rules(workdir, configfile)
    for rule in sorted(parents):
        if rule not in local and rule not in groups:
            groups[rule] = f"level{level(rule)}"
            components.setdefault(groups[rule], GROUP_COMPONENTS)
    return [
        "--groups",
        *(f"{rule}={group}" for rule, group in groups.items()),
        "--group-components",
        *(f"{group}={n}" for group, n in components.items()),
    ]


def start_fashion_build(workdir: Path) -> Build:
    """Start the whole build of config/fashion-tiny.yaml locally on 2 cores, in a scratch copy in
    ``workdir`` (an empty directory), as the simulated machine without AVX/FMA. Started by conftest
    once collection has ended and that machine's kernels are compiled, so the run goes on beside the
    unit tests; at their priority (bnstudy.pipeline.determinism.FILLER), below the determinism runs'
    chain."""
    work = copy_workflow(ROOT, workdir)
    log = work / "snakemake.log"
    env = environments()[MACHINE]
    proc = start_snakemake(work, ["--configfile", CONFIG, *LOCAL_ARGS], log, BACKGROUND_NICENESS, env)
    return Build("local", CONFIG, work, log, time.monotonic(), proc, env)


def start_slurm_build(workdir: Path) -> Build:
    """Start the SLURM build (config/fashion-tiny.yaml ``--until`` SLURM_UNTIL) through profiles/slurm
    in a scratch copy in ``workdir``, as the simulated machine without AVX/FMA, at niceness FILLER (its
    SLURM jobs too), with the profile's groups and the rest of its remote jobs grouped by level."""
    work = copy_workflow(ROOT, workdir)
    log = work / "snakemake.log"
    args = ["--configfile", CONFIG, "--until", SLURM_UNTIL, "--workflow-profile", str(PROFILE), *CLUSTER_ARGS]
    env = environments()[MACHINE]
    proc = start_snakemake(work, [*args, *level_groups(work, CONFIG)], log, BACKGROUND_NICENESS, env)
    return Build("slurm", f"{CONFIG} until {SLURM_UNTIL}", work, log, time.monotonic(), proc, env)


def wait_for(build: Build) -> Build:
    """Wait for the build (at most RUN_TIMEOUT from its start); fail unless it succeeded."""
    code = finish(build.proc, max(RUN_TIMEOUT - (time.monotonic() - build.start), 1))
    if build.seconds is None:
        build.seconds, build.output = time.monotonic() - build.start, build.log.read_text()
        print(f"\n{build.what} ({build.where}): {build.seconds:.0f} s")
    late = f"the build of {build.what} did not finish within {RUN_TIMEOUT} s:\n"
    assert code is not None, late + build.output[-3000:]
    assert code == 0, (
        f"the build of {build.what} ({build.where}) failed (its data set: make dataset CONFIG={CONFIG}):\n"
        + build.output[-3000:]
    )
    return build


@pytest.fixture(scope="session")
def slurm_run(cluster, slurm_build):
    """The suite's SLURM build (conftest's ``slurm_build``): ``(its copy, Snakemake's output)``."""
    assert slurm_build.where == "slurm"
    return slurm_build.workdir, slurm_build.output


def test_the_slurm_build_writes_the_expected_bytes(slurm_run):
    """The SLURM build wrote exactly the files of the expected manifest that SLURM_UNTIL's jobs and
    the jobs they need write (the split, the grid cells they evaluate: the same wildcards), each with
    the bytes listed there (the manifest was written on another machine; the build ran as the one
    without AVX/FMA)."""
    work, _ = slurm_run
    expected = manifest.read(EXPECTED)
    evaluated = set(expected.loc[expected["rule"] == SLURM_UNTIL, "wildcards"])
    needed = (expected["rule"] == "split") | (expected["rule"] == SLURM_UNTIL)
    needed |= (expected["rule"] == "train_grid") & expected["wildcards"].isin(evaluated)
    assert len(evaluated) >= 2 and needed.sum() > len(evaluated)
    on_disk = manifest.disk_hashes(expected["path"], work)
    written = {path for path, found in on_disk.items() if found is not None}
    assert written == set(expected.loc[needed, "path"]), (
        f"missing: {sorted(set(expected.loc[needed, 'path']) - written)}; "
        f"not needed: {sorted(written - set(expected.loc[needed, 'path']))}"
    )
    different = [
        f"{row.path}: {on_disk[row.path][1][:12]} instead of {row.sha256[:12]}"
        for row in expected[needed].itertuples()
        if on_disk[row.path] != (int(row.bytes), row.sha256)
    ]
    assert not different, "the SLURM build wrote other bytes than expected:\n" + "\n".join(different)
    print(f"\n{needed.sum()} files of the SLURM build as expected")


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
    counts = re.findall(r"^(evaluate_remedies|evaluate_sorted)\s+(\d+)$", output, flags=re.M)  # the job stats
    evaluations = sum(int(n) for n in dict(counts).values())
    assert evaluations >= 2, f"a group of fewer than two evaluation jobs shows nothing: {counts}"
    logs = [log for _, _, log in SUBMITTED.findall(output)]
    alone = [log for log in logs if "/rule_evaluate_remedies/" in log or "/rule_evaluate_sorted/" in log]
    assert not alone, "evaluation jobs submitted one by one"
    grouped = [log for log in logs if "/group_evaluation" in log]
    assert 1 <= len(grouped) < evaluations


def test_the_build_on_one_node_submits_group_jobs_only(slurm_run):
    """level_groups: every remote job of the build went into a group job of its level (a remote rule
    left out would be submitted job by job, each SLURM job starting Snakemake twice)."""
    _, output = slurm_run
    logs = [log for _, _, log in SUBMITTED.findall(output)]
    alone = [log for log in logs if "/group_" not in log]
    assert not alone, f"SLURM jobs of one rule job: {alone}"
    assert any("/group_level1_" in log for log in logs)


# A job that writes down the kernel-selection variables it sees (bnstudy.pipeline.provenance.KERNEL_VARIABLES)
SHOW_ENVIRONMENT_SNAKEFILE = textwrap.dedent("""\
    VARIABLES = {variables!r}

    rule show_environment:
        output: "environment.txt"
        run:
            import os
            with open(output[0], "w") as out:
                out.writelines(f"{{v}}={{os.environ[v]}}\\n" for v in VARIABLES if v in os.environ)
    """)


def test_the_slurm_jobs_run_as_the_simulated_machine(cluster, slurm_build, tmp_path_factory):
    """A SLURM job submitted as the build's are (the profile, the generic machine's variables in the
    submitting environment: slurm_build.env) sees every one of them (sbatch --export=ALL): so do the
    build's jobs. (The local build's record names them: tests/workflow/test_fashion.py.)"""
    from bnstudy.pipeline.provenance import KERNEL_VARIABLES

    env = environments()[MACHINE]
    assert env["ATEN_CPU_CAPABILITY"] == "default" and slurm_build.env == env
    expected = "".join(f"{v}={env[v]}\n" for v in KERNEL_VARIABLES if v in env)
    job_dir, (code, seconds, output) = one_job_run("environment", tmp_path_factory).result()
    assert code == 0, output[-3000:]
    submitted = SUBMITTED.findall(output)
    assert len(submitted) == 1 and squeue_states([submitted[0][1]])[submitted[0][1]][0] == "COMPLETED", output[-3000:]
    assert (job_dir / "environment.txt").read_text() == expected
    print(f"\na SLURM job saw {expected.count(chr(10))} kernel-selection variables ({seconds:.0f} s)")


FAILING_SNAKEFILE = textwrap.dedent("""\
    rule fails_on_purpose:
        output: "never-written.txt"
        shell: "echo 'failing on purpose' >&2; exit 1"
    """)


# The two one-job runs above (their Snakefile, the environment added): each submits one SLURM job
# and then mostly waits on SLURM (the job's start, then status checks 2 s, 12 s, ... apart), half a
# minute or more. conftest starts both in the background when the session starts, before the tiny
# Fashion build (the node is free while the warm-ups compile on this machine, so neither job waits
# behind the build's, and their waiting is not the suite's last half minute, as it was when they
# followed the build), and their tests read the outcome, bounded by FAILURE_TIMEOUT from the start;
# a test that comes first starts its run itself.
ONE_JOB_RUNS = {  # name -> (its Snakefile's text, run as MACHINE, the test that reads it)
    "environment": (
        lambda: SHOW_ENVIRONMENT_SNAKEFILE.format(variables=_kernel_variables()),
        True,
        "test_the_slurm_jobs_run_as_the_simulated_machine",
    ),
    "failing": (lambda: FAILING_SNAKEFILE, False, "test_a_failing_slurm_job_ends_the_run_with_an_error"),
}
_ONE_JOB_STARTED = {}  # name -> (its process, the future of (its directory, snakemake()'s result))
_ONE_JOB_LOCK = threading.Lock()


def _kernel_variables():
    from bnstudy.pipeline.provenance import KERNEL_VARIABLES

    return KERNEL_VARIABLES


def one_job_run(name: str, tmp_path_factory):
    """Start (once per session) the one-job run ``name`` of ONE_JOB_RUNS in a directory of its own,
    through the slurm profile with no retries, in a thread; return the future of ``(its directory,
    (exit status or None on timeout, seconds, output))``."""
    with _ONE_JOB_LOCK:  # the background thread that starts them, or a test that comes first
        if name not in _ONE_JOB_STARTED:
            _ONE_JOB_STARTED[name] = _start_one_job_run(name, tmp_path_factory)
    return _ONE_JOB_STARTED[name][1]


def _start_one_job_run(name: str, tmp_path_factory):
    from concurrent.futures import ThreadPoolExecutor

    snakefile, as_machine, _ = ONE_JOB_RUNS[name]
    work = tmp_path_factory.mktemp(f"slurm-{name}")
    (work / "Snakefile").write_text(snakefile())
    env = environments()[MACHINE] if as_machine else None
    args = ["--workflow-profile", str(PROFILE), *CLUSTER_ARGS, "--retries", "0"]
    start = time.monotonic()
    proc = start_snakemake(work, args, work / "snakemake.log", env=env)

    def outcome():
        code = finish(proc, FAILURE_TIMEOUT)
        return work, (code, time.monotonic() - start, (work / "snakemake.log").read_text())

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"slurm-{name}")
    future = pool.submit(outcome)
    pool.shutdown(wait=False)
    return proc, future


def stop_one_job_runs() -> None:
    """Interrupt the one-job runs still under way (a session ended early); Snakemake cancels their jobs."""
    for proc, _ in _ONE_JOB_STARTED.values():
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)


def test_a_failing_slurm_job_ends_the_run_with_an_error(cluster, tmp_path_factory):
    # the profile's retries would submit it again (tests/workflow/test_cluster_config.py checks them)
    tmp_path, (code, seconds, output) = one_job_run("failing", tmp_path_factory).result()
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
