import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def snakemake(*args, cwd=ROOT, timeout=None, check=False):
    """Run Snakemake with this interpreter; return the CompletedProcess."""
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=check,
    )


@pytest.fixture
def test_config():
    with open(ROOT / "config" / "test.yaml") as f:
        return yaml.safe_load(f)


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    """The three determinism and portability runs of the test config, once per session.

    cores 1 on this machine (native), cores 4 as an AVX2 machine, cores 2 killed
    and resumed as a machine without AVX/FMA (generic): see bnstudy.determinism.
    Returns ``(base, manifests, times)``; each run's directory is ``base/<name>``.
    """
    from bnstudy import determinism

    base = tmp_path_factory.mktemp("determinism")
    try:
        manifests, times = determinism.run_all(ROOT, "config/test.yaml", base)
    except subprocess.CalledProcessError as e:
        logs = "\n".join(p.read_text()[-3000:] for p in base.glob("*.log"))
        pytest.fail(f"a pipeline run failed: {e.cmd}\n{logs}")
    return base, manifests, times


@pytest.fixture(scope="session")
def configured():
    """Deterministic compute settings (one thread, deterministic algorithms)."""
    from bnstudy import runtime

    runtime.configure(1)


def pytest_configure(config):
    """One compute thread in the test process, as in every pipeline job."""
    _watch_process_starts()

    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ.setdefault(var, "1")


# ---- what make test-fast leaves out ------------------------------------------------
# make test-fast runs `-m "not pipeline and not slurm and not paper_config and not slow"`:
# unit tests in this process only. A test that uses the pipeline runs is marked
# pipeline here, whatever its module says; a test of the fast suite that starts a
# process fails and asks to be marked slow, so the fast suite stays fast.
PIPELINE_FIXTURES = {"runs"}
OUT_OF_FAST = {"pipeline", "slurm", "paper_config", "slow"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if PIPELINE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.pipeline)


_CURRENT = {}  # the test being run, and the processes it started


def _record(what):
    if "item" in _CURRENT:
        _CURRENT["started"].append(what)


def _watch_process_starts():
    """Record every process a test starts (subprocess and os.fork), module fixtures included."""
    if getattr(os.fork, "records_starts", False):  # pytest.main run again in this process
        return
    execute_child = subprocess.Popen._execute_child
    fork = os.fork

    def recording_execute_child(self, args, *rest, **kwargs):
        _record(repr(args))
        return execute_child(self, args, *rest, **kwargs)

    def recording_fork():
        _record("os.fork()")
        return fork()

    recording_fork.records_starts = True
    subprocess.Popen._execute_child = recording_execute_child
    os.fork = recording_fork


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _CURRENT.update(item=item, started=[])
    yield
    _CURRENT.clear()


def _started_a_process(item, report):
    """The failure text when a test of the fast suite started a process, else None."""
    if report.when != "teardown" or _CURRENT.get("item") is not item or not _CURRENT["started"]:
        return None
    if OUT_OF_FAST & {m.name for m in item.iter_markers()}:
        return None
    return f"a test of the fast suite started a process ({_CURRENT['started'][0]}): mark it slow"


# ---- no silent skips in CI -------------------------------------------------------
# .ci/run sets BNSTUDY_CI=1: then a skipped test fails, unless its reason is one of
# these, each outside the project's control (the machine's CPU or C library; the
# CI machine, x86-64 Debian 12 with FMA, meets none of them). The README lists the
# skips a developer's machine may see.
CI_ALLOWED_SKIPS = (
    "this CPU has no FMA",  # tests/test_kernels.py: an FMA contraction cannot show without FMA
    "ld.so diagnostics of x86-64 Linux",  # tests/test_portability.py: glibc's x86-64 loader only
)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    spawned = _started_a_process(item, report)
    if spawned is not None:
        report.outcome = "failed"
        report.longrepr = spawned
        return
    if os.environ.get("BNSTUDY_CI") != "1" or not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if not any(allowed in reason for allowed in CI_ALLOWED_SKIPS):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI (BNSTUDY_CI=1), where only {CI_ALLOWED_SKIPS} may skip: {reason}"
