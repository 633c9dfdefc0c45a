import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

# Property tests: a random search on a maintainer's machine (where a new counter-example is
# news), a fixed one in CI (BNSTUDY_CI=1), so a CI run's verdict does not depend on the draw nor,
# without a per-example deadline, on how loaded the machine is (a 200 ms limit failed a loaded run).
try:
    from hypothesis import settings as _hypothesis_settings

    _hypothesis_settings.register_profile("ci", derandomize=True, database=None, deadline=None)
    if os.environ.get("BNSTUDY_CI") == "1":
        _hypothesis_settings.load_profile("ci")
except ImportError:  # hypothesis is a test extra; the tests that use it import it themselves
    pass


def snakemake(*args, cwd=ROOT, timeout=None, check=False):
    """Run Snakemake with this interpreter; return the CompletedProcess, with ``cpu_seconds``:
    the CPU time Snakemake and the processes it waited for used (a measure of its work that,
    unlike wall time, does not grow when other processes share the machine)."""
    cmd = [sys.executable, "-m", "snakemake", *args]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, text=True)
        timed_out = threading.Event()

        def kill():
            timed_out.set()
            proc.kill()

        timer = threading.Timer(timeout, kill) if timeout else None
        if timer:
            timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            if timer:
                timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        if timed_out.is_set():
            raise subprocess.TimeoutExpired(cmd, timeout)
        out.seek(0)
        err.seek(0)
        result = subprocess.CompletedProcess(cmd, proc.returncode, out.read(), err.read())
    if check:
        result.check_returncode()
    result.cpu_seconds = usage.ru_utime + usage.ru_stime
    return result


@contextlib.contextmanager
def torch_threads(n: int):
    """PyTorch's intra-op threads set to ``n`` for a block, then restored (torch imported only here)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@pytest.fixture
def test_config():
    with open(ROOT / "config" / "test.yaml") as f:
        return yaml.safe_load(f)


# ---- the pipeline runs, started in the background ---------------------------------
# The determinism runs of the test config, the local build of the tiny Fashion config and,
# when a cluster answers, the SLURM build of part of it (tests/workflow/test_slurm.py) are
# processes of their own. They start as soon as collection ends if a selected test
# needs them, and the tests that wait for them run last, so the unit tests run
# meanwhile instead of leaving cores idle. BACKGROUND: "runs" -> (their directory, the future
# of run_all's result), "fashion_tiny" and "slurm_build" -> the future of {name: Build} of the Fashion
# builds started together (done when their processes have ended), "started" -> those builds, from their start.
BACKGROUND = {}
WARMED = {}  # machine -> the network whose kernels this session compiled or loaded ("conv": every kernel)
_WARMING = {}  # machine -> (network, future of the warm-up's error text or None), under way or done
_WARMING_LOCK = threading.Lock()


def _covers(network: str, wanted: str) -> bool:
    """Whether a warm-up of ``network``'s kernels compiled those of ``wanted`` ("conv": every kernel)."""
    return network == "conv" or network == wanted


def _start_warm_up(machine: str, jobs: int = 1, network: str = "conv"):
    """Start compiling (or loading) ``machine``'s kernels of ``network`` in a process of its own, unless
    a warm-up that covers them is under way or done; return its future (the error text, or None)."""
    from bnstudy.pipeline.machines import environments

    with _WARMING_LOCK:
        if machine in _WARMING and _covers(_WARMING[machine][0], network):
            return _WARMING[machine][1]
        cmd = [sys.executable, "-m", "bnstudy.tools.warmup", "--jobs", str(jobs), "--network", network]
        cmd += _layers_argument(machine, network)
        _timeline("start", f"kernel warm-up {machine} ({network}, {jobs} process(es))")
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT / "src"), **environments()[machine]),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )

        def wait():
            err = proc.stderr.read()
            _, status, usage = os.wait4(proc.pid, 0)  # its CPU time, for the timeline
            proc.returncode = os.waitstatus_to_exitcode(status)
            cpu = usage.ru_utime + usage.ru_stime
            _timeline("ready", f"kernel warm-up {machine} ({network}): {cpu:.1f} CPU s")
            return None if proc.returncode == 0 else err[-3000:]

        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"warm-up-{machine}")
        future = pool.submit(wait)
        pool.shutdown(wait=False)
        _WARMING[machine] = (network, future)
        return future


def _layers_argument(machine: str, network: str) -> list[str]:
    """``--layers`` of the tiny Fashion build's config for the machine that build runs as: its
    convolutions are compiled for that config's number of layers (as its own warm-up would), the other
    machines' for the tests' two-layer networks."""
    import test_slurm

    if network != "conv" or machine != test_slurm.MACHINE:
        return []
    with open(ROOT / test_slurm.CONFIG) as f:
        layers = yaml.safe_load(f)["network"]["layers"]
    return ["--layers", json.dumps(layers, sort_keys=True)]


def _finish_warm_up(machine: str) -> None:
    network, future = _WARMING[machine]
    err = future.result()
    if err is not None:
        pytest.exit(f"the kernel warm-up ({machine}) failed:\n{err}", returncode=1)
    WARMED[machine] = network


def _warm_up_kernels(machines=("native",), jobs=None, network="conv"):
    """Compile (or load) the kernels of each of ``machines`` (bnstudy.base.machines.environments())
    once, side by side, with the cores shared among them, before anything else uses them; a warm-up
    of the same machine already under way (started when collection ended) is waited for, not repeated.

    The kernel cache is filed by machine (bnstudy.base.kernelcache), shared by this process, the
    native determinism run, the SLURM run and every re-run test's copy. Started cold (CI), each of
    them used to compile the kernels it met first, side by side: the same native kernels compiled
    two or three times over. The same held for the machine without AVX/FMA (generic), which two
    builds simulate, the killed-and-resumed determinism run and the tiny Fashion build: started
    together, both compiled its kernels (about 140 CPU s each from a cold cache), so its kernels
    are compiled here once too. So are the AVX2 machine's (in the determinism runs' thread,
    ``jobs=1``): its run's own warm-up (Snakemake's ``onstart``, ``--jobs`` its 2 cores) compiled
    them in two processes, about 230 CPU s where one process takes about 140 (their kernels overlap).
    ``network``: "conv" compiles every kernel; "mlp" only those of a config whose network is the MLP
    (``bnstudy.tools.warmup --network mlp``, what such a config's own warm-up compiles)."""
    todo = [m for m in machines if not (m in WARMED and _covers(WARMED[m], network))]
    if not todo:
        return
    jobs = jobs or max(1, min(2, os.cpu_count() or 1) // len(todo))
    for machine in todo:
        _start_warm_up(machine, jobs, network)
    for machine in todo:
        _finish_warm_up(machine)


def _config_network(configfile: str) -> str:
    """The ``network.kind`` of a config (absent: the MLP), the network its warm-up compiles."""
    with open(ROOT / configfile) as f:
        return (yaml.safe_load(f).get("network") or {}).get("kind", "mlp")


def _build_finished(build):
    """Wait for a Fashion build's process to end, at most until its time is up (its checks, and
    the timeout's message, are test_slurm.wait_for's)."""
    import time

    import test_slurm

    try:
        build.proc.wait(timeout=max(test_slurm.RUN_TIMEOUT - (time.monotonic() - build.start), 1))
        _timeline("done", f"{build.what} ({build.where})")
    except subprocess.TimeoutExpired:
        pass
    return build


def _background(name, task):
    """Run ``task`` in a thread of its own; return its future."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
    future = pool.submit(task)
    pool.shutdown(wait=False)
    return future


SUITE_PART = "BNSTUDY_SUITE_PART"  # "unit": the unit tests' process of scripts/test-suite
RUNS_CONFIG = "config/test.yaml"  # the config of the determinism runs


def _start_runs(tmp_path_factory, later=None, first=()):
    """In a thread of its own: wait for the warm-ups of ``first`` (started already), compile the
    kernels of ``later`` (one process each, one after the other: the machines only the determinism
    runs simulate, with only their config's network; default: every simulated machine but this
    one), then run the determinism runs."""
    from bnstudy.pipeline import determinism

    if later is None:
        later = sorted(set(determinism.RUN_ENVIRONMENTS.values()) - {"native"})
    base = tmp_path_factory.mktemp("determinism")
    network = _config_network(RUNS_CONFIG)

    def warm_then_run():
        for machine in first:
            _finish_warm_up(machine)
        for machine in later:
            _warm_up_kernels((machine,), jobs=1, network=network)
        for machine in set(determinism.RUN_ENVIRONMENTS.values()) - set(later):
            _warm_up_kernels((machine,))
        _timeline("start", "determinism runs")
        manifests, times = determinism.run_all(ROOT, RUNS_CONFIG, base, niceness=determinism.IN_SUITE)
        _timeline("done", "determinism runs: " + ", ".join(f"{k} {v:.0f} s" for k, v in times.items()))
        return manifests, times

    return base, _background("determinism-runs", warm_then_run)


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    """The three determinism and portability runs of the test config, once per session.

    cores 1 on this machine (native), cores 4 as an AVX2 machine, cores 2 killed
    and resumed as a machine without AVX/FMA (generic): see bnstudy.base.determinism.
    Returns ``(base, manifests, times)``; each run's directory is ``base/<name>``.
    """
    if "runs" not in BACKGROUND:
        BACKGROUND["runs"] = _start_runs(tmp_path_factory)
    base, future = BACKGROUND["runs"]
    try:
        manifests, times = future.result()
        _timeline("ready", "determinism runs")
    except subprocess.CalledProcessError as e:
        logs = "\n".join(p.read_text()[-3000:] for p in base.glob("*.log"))
        pytest.fail(f"a pipeline run failed: {e.cmd}\n{logs}")
    return base, manifests, times


def _cluster_answers(items) -> bool:
    """Whether tests/workflow/test_slurm.py's tests among ``items`` will run (else they skip)."""
    if not items:
        return False
    import test_slurm

    return test_slurm.cluster_problem() is None


_STOPPING = threading.Event()  # the session is ending: start no build


def _start_fashion_builds(tmp_path_factory, after=(), then=(), builds=("fashion_tiny",)):
    """In a thread of its own: start the one-job SLURM runs ``then`` (tests/workflow/test_slurm.py's
    ``one_job_run``: they need no kernel, and the node is free while the warm-ups compile on this
    machine, so neither waits behind the build's jobs); wait for the warm-ups of ``after`` (started
    already), then start ``builds``, side by side: "fashion_tiny", the whole tiny Fashion config
    locally (test_slurm's ``start_fashion_build``), and "slurm_build", part of it through SLURM
    (``start_slurm_build``); wait for their processes to end. The builds are in BACKGROUND["started"]
    from their start (pytest_sessionfinish stops them)."""
    import test_slurm  # tests/: on sys.path, as for `from conftest import ...` in the test modules

    starts = {"fashion_tiny": test_slurm.start_fashion_build, "slurm_build": test_slurm.start_slurm_build}
    workdirs = {name: tmp_path_factory.mktemp(name.replace("_", "-")) for name in builds}

    def warm_then_build():
        for name in then if not _STOPPING.is_set() else ():
            _timeline("start", f"one-job SLURM run {name}")
            test_slurm.one_job_run(name, tmp_path_factory)
        for machine in after:
            _finish_warm_up(machine)
        started = BACKGROUND.setdefault("started", {})
        for name in builds:
            if _STOPPING.is_set():
                raise RuntimeError("the session ended before the Fashion builds started")
            _timeline("start", name)
            started[name] = starts[name](workdirs[name])
        return {name: _build_finished(started[name]) for name in builds}

    return _background("fashion-builds", warm_then_build)


def _fashion_build(name, tmp_path_factory):
    """The Fashion build ``name`` ("fashion_tiny" or "slurm_build") once it succeeded: started in the
    background when collection ended, or here if it was not (a test that asks for it while it runs)."""
    import test_slurm

    if name not in BACKGROUND:
        BACKGROUND[name] = _start_fashion_builds(tmp_path_factory, builds=(name,))
    build = test_slurm.wait_for(BACKGROUND[name].result()[name])
    _timeline("ready", name)
    return build


@pytest.fixture(scope="session")
def fashion_tiny(tmp_path_factory):
    """The build of config/fashion-tiny.yaml, once per session, locally on 2 cores as a machine
    without AVX/FMA (tests/workflow/test_slurm.py's ``start_fashion_build``). Returns its ``Build``
    (``where``, ``workdir``, ``output``, ``seconds``) once it succeeded."""
    return _fashion_build("fashion_tiny", tmp_path_factory)


@pytest.fixture(scope="session")
def slurm_build(tmp_path_factory):
    """The build of config/fashion-tiny.yaml up to its remedy evaluations through SLURM, once per
    session, as a machine without AVX/FMA (tests/workflow/test_slurm.py's ``start_slurm_build``;
    the tests that use it ask for the ``cluster`` fixture first, which skips them without a cluster)."""
    return _fashion_build("slurm_build", tmp_path_factory)


def hashed_outputs(runs, paths) -> Path:
    """Check that each of ``paths`` is in the native run's manifest; return that run's ``results/``."""
    from bnstudy.pipeline import manifest

    _, manifests, _ = runs
    hashed = set(manifest.read(manifests["cores1"])["path"])
    missing = [p for p in paths if p not in hashed]
    assert not missing, f"not in the manifest: {missing}"
    return manifests["cores1"].parent


def _waits_for(item, name) -> bool:
    """Whether ``item`` uses the fixture ``name``: among its fixtures, or marked ``asks_for(name)`` (a test
    that asks for it while it runs, request.getfixturevalue, which its fixture names cannot show)."""
    asks = {n for marker in item.iter_markers("asks_for") for n in marker.args}
    return name in getattr(item, "fixturenames", ()) or name in asks


def _whole_suite(config) -> bool:
    """Whether this session runs the suite as `make test` does (tests/ as a whole, pipeline tests
    included): then its builds will need every machine's kernels."""
    return (
        not config.option.collectonly
        and config.args_source == pytest.Config.ArgsSource.TESTPATHS
        and "not pipeline" not in (config.option.markexpr or "")
        and not config.option.keyword
        and ROOT.name != "mutants"
    )


def pytest_sessionstart(session):
    """For the whole suite, start compiling this machine's kernels and the tiny Fashion build's
    machine's before collection (about 10 s of one core) rather than after it: pytest_collection_finish
    then waits for these warm-ups instead of starting them."""
    if _whole_suite(session.config):
        import test_slurm

        for machine in ("native", test_slurm.MACHINE):
            _start_warm_up(machine, jobs=1)


def pytest_collection_finish(session):
    """Start the runs the selected tests need (see BACKGROUND), after their kernels: this machine's
    and the tiny Fashion build's machine's compiled side by side, one process each, as soon as
    collection ends; the tests start when this machine's are ready, the Fashion build when its
    machine's are, and the determinism runs when the AVX2 machine's are too (compiled once a core is
    free, with only the test config's network: no other build simulates that machine)."""
    if session.config.option.collectonly or not session.items:
        return
    if os.environ.get(SUITE_PART) == "unit":  # scripts/test-suite's unit process starts no build
        waiting = [item.nodeid for item in session.items if _background_order(item) >= 2]
        if waiting:
            pytest.exit(
                f"the unit tests' process selected tests that wait for a build (mark them pipeline): {waiting}", 1
            )
    factory = session.config._tmp_path_factory
    # the local build serves tests/workflow/test_fashion.py's checks, the SLURM build the SLURM tests (which
    # skip without a cluster): a build no selected test will use is not started
    on_cluster = [item for item in session.items if _waits_for(item, "cluster")]
    builds = [
        name
        for name in ("fashion_tiny", "slurm_build")
        if any(_waits_for(item, name) for item in session.items)
        and (name != "slurm_build" or _cluster_answers(on_cluster))
    ]
    start_fashion = bool(builds)
    start_runs = any(_waits_for(item, "runs") for item in session.items)
    if not (start_fashion or start_runs):
        if "native" in _WARMING:  # started before collection: the tests use what it compiles
            _finish_warm_up("native")
        return
    import test_slurm
    from bnstudy.pipeline.determinism import RUN_ENVIRONMENTS

    simulated = set(RUN_ENVIRONMENTS.values()) - {"native"}
    now = {test_slurm.MACHINE} if start_fashion else set()
    for machine in ("native", *sorted(now)):
        _start_warm_up(machine, jobs=1)
    if start_fashion:
        selected = {item.originalname for item in on_cluster} if _cluster_answers(on_cluster) else set()
        then = [name for name, (_, _, test) in test_slurm.ONE_JOB_RUNS.items() if test in selected]
        future = _start_fashion_builds(factory, after=sorted(now), then=then, builds=builds)
        BACKGROUND.update(dict.fromkeys(builds, future))
    if start_runs:
        BACKGROUND["runs"] = _start_runs(factory, later=sorted(simulated - now), first=sorted(now))
    _finish_warm_up("native")  # the tests' own kernels: the first tests start when they are ready


def pytest_sessionfinish(session):
    """Stop runs still under way (a session ended early: -x, an interrupt)."""
    from bnstudy.pipeline import workflowrun

    _STOPPING.set()
    workflowrun.stop_all()
    if "fashion_tiny" in BACKGROUND or "slurm_build" in BACKGROUND:
        import test_slurm

        test_slurm.stop_one_job_runs()
    for build in BACKGROUND.get("started", {}).values():
        if build.proc.poll() is None:  # interrupted: Snakemake cancels its SLURM jobs
            os.killpg(build.proc.pid, signal.SIGINT)
            try:
                build.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(build.proc.pid, signal.SIGKILL)


@pytest.fixture(scope="session")
def configured():
    """Deterministic compute settings (one thread, deterministic algorithms)."""
    from bnstudy.base import runtime

    runtime.configure(1)


def pytest_configure(config):
    """One compute thread in the test process, as in every pipeline job."""
    _watch_process_starts()
    config.addinivalue_line(
        "markers",
        "asks_for(name): the test asks for the session fixture `name` (runs, fashion_tiny) while it runs "
        "(request.getfixturevalue): ordered and started as if it were among its fixtures",
    )

    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    # OpenMP threads (PyTorch's, in the tests that take 2) sleep while they wait instead of spinning:
    # beside the background runs a spinning thread holds a core its partner needs. On the loaded
    # 2-core machine 40 small convolutions on 2 threads took 36-51 s wall and 3.3-5.4 CPU s spinning,
    # 1.0-1.5 s and 0.2 CPU s passive. Read when OpenMP loads (torch's import, after this hook).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


# ---- what make test-fast leaves out ------------------------------------------------
# make test-fast runs `-m "not pipeline and not slurm and not paper_config and not slow"`:
# unit tests in this process only. A test that uses the pipeline runs is marked
# pipeline here, whatever its module says; a test of the fast suite that starts a
# process fails and asks to be marked slow, so the fast suite stays fast.
PIPELINE_FIXTURES = {"runs", "fashion_tiny", "slurm_build"}
OUT_OF_FAST = {"pipeline", "slurm", "paper_config", "slow"}


def _mutation_test_times() -> dict:
    """Under `make mutation` (this conftest copied into mutants/), each test's duration
    as mutmut recorded it; else empty. mutmut stops a mutant's tests at the first
    failure, so running the fastest first kills a mutant sooner; the verdicts are
    the same in any order."""
    stats = ROOT / "mutmut-stats.json"
    if ROOT.name != "mutants" or not stats.is_file():
        return {}
    import json

    return json.loads(stats.read_text()).get("duration_by_test", {})


FASHION_FIXTURES = ("fashion_tiny", "slurm_build", "cluster")


def _background_order(item) -> int:
    """0: a unit test; 1: a pipeline test (it may ask for the background runs while it runs);
    2: a test whose fixtures are the tiny Fashion build or the cluster; 3: one that waits for the
    determinism runs; 4: one that waits for both. The tests of 2 and 3 run in the order their builds
    are ready in (pytest_runtestloop): the foreground runs the tests of the first build ready while
    the other build still uses a core, instead of waiting for a build fixed in advance."""
    runs = _waits_for(item, "runs")
    fashion = any(_waits_for(item, name) for name in FASHION_FIXTURES)
    if runs and fashion:
        return 4
    if runs:
        return 3
    if fashion:
        return 2
    return 1 if item.get_closest_marker("pipeline") else 0


def pytest_collection_modifyitems(config, items):
    for item in items:
        if any(_waits_for(item, name) for name in PIPELINE_FIXTURES):
            item.add_marker(pytest.mark.pipeline)
    times = _mutation_test_times()  # read here: mutmut writes it after conftest is imported
    if times:
        items.sort(key=lambda item: times.get(item.nodeid, 0.0))
    # the tests that wait for the background runs, or use the cluster one keeps busy, go last (those
    # that ask for the runs only when they run, request.getfixturevalue, say so: marked asks_for);
    # before them the other pipeline tests
    items.sort(key=_background_order)


def _build_done(order: int):
    """The future that is done when the build the tests of ``order`` (2 or 3) wait for has ended,
    or None if it was not started in the background."""
    if order == 2:
        return BACKGROUND.get("fashion_tiny") or BACKGROUND.get("slurm_build")
    return BACKGROUND["runs"][1] if "runs" in BACKGROUND else None


def _in_readiness_order(items):
    """``items`` (the tests of orders 2 to 4, in that order) with the tests of the build that is ready
    first (waited for if neither is) before those of the other; those of 4, which wait for both, last."""
    groups = {order: [item for item in items if _background_order(item) == order] for order in (2, 3, 4)}
    futures = {order: _build_done(order) for order in (2, 3)}
    if groups[2] and groups[3] and all(futures.values()):
        done, _ = wait(list(futures.values()), return_when=FIRST_COMPLETED)
        if futures[3] in done and futures[2] not in done:
            _timeline("order", "the determinism runs' tests before the tiny Fashion build's")
            return groups[3] + groups[2] + groups[4]
    return groups[2] + groups[3] + groups[4]


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    """pytest's own loop over the tests, but with the tests that wait for the background builds
    (orders 2 to 4, _background_order) ordered when the foreground reaches them: before the last test
    ahead of them runs (its ``nextitem`` is the first of them), the first build to be ready is known,
    waited for if need be, and its tests go first (_in_readiness_order)."""
    if session.testsfailed and not session.config.option.continue_on_collection_errors:
        raise session.Interrupted(
            f"{session.testsfailed} error{'s' if session.testsfailed != 1 else ''} during collection"
        )
    if session.config.option.collectonly:
        return True
    items = session.items
    first = next((i for i, item in enumerate(items) if _background_order(item) >= 2), len(items))
    for i in range(len(items)):
        if i == max(first - 1, 0) and first < len(items):
            items[first:] = _in_readiness_order(items[first:])
        item = items[i]
        nextitem = items[i + 1] if i + 1 < len(items) else None
        item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        if session.shouldfail:
            raise session.Failed(session.shouldfail)
        if session.shouldstop:
            raise session.Interrupted(session.shouldstop)
    return True


_CURRENT = {}  # the test being run, and the processes it started


def _record(what):
    # only the test's own thread: the background runs' threads start processes of their own
    if "item" in _CURRENT and threading.get_ident() == _CURRENT["thread"]:
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
    _CURRENT.update(item=item, started=[], thread=threading.get_ident())
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
    "this CPU has no FMA",  # tests/compiled/test_kernels.py: an FMA contraction cannot show without FMA
    "ld.so diagnostics of x86-64 Linux",  # tests/pipeline/test_portability.py: glibc's x86-64 loader only
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


# ---- where the suite's time goes ----------------------------------------------------
# BNSTUDY_TIMELINE=FILE: one line per test start and end (wall clock, load average, node id), so a
# maintainer can see when the cores sat idle (docs/testing.md reads a CI rehearsal this way).
def _timeline(event: str, nodeid: str) -> None:
    path = os.environ.get("BNSTUDY_TIMELINE")
    if path:
        import time

        with open(path, "a") as f:
            f.write(f"{time.time():.1f}\t{os.getloadavg()[0]:.2f}\t{event}\t{nodeid}\n")


def pytest_runtest_logstart(nodeid, location):
    _timeline("start", nodeid)


def pytest_runtest_logfinish(nodeid, location):
    _timeline("end", nodeid)
