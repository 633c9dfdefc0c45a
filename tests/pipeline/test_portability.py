"""The simulated machines of the determinism/portability runs: built from this CPU, and in effect."""

import os
import platform
import sys

import pytest

from bnstudy.pipeline import determinism, machines, provenance, workflowrun

pytestmark = pytest.mark.slow  # processes started as simulated machines

X86_LINUX = platform.system() == "Linux" and platform.machine() == "x86_64" and provenance.LD_SO.exists()
GLIBC = tuple(int(x) for x in (platform.libc_ver()[1] or "0.0").split(".")[:2])
KERNEL_VARS = {
    "ATEN_CPU_CAPABILITY",
    "NUMBA_CPU_NAME",
    "MKL_ENABLE_INSTRUCTIONS",
    "ONEDNN_MAX_CPU_ISA",
    "OPENBLAS_CORETYPE",
    "GLIBC_TUNABLES",
}


@pytest.fixture(scope="module")
def envs():
    return machines.environments()


def test_three_machines_one_per_determinism_run(envs):
    assert list(envs) == ["native", "avx2", "generic"]
    assert envs["native"] == {}
    assert set(determinism.RUN_ENVIRONMENTS) == set(determinism.RUNS)
    assert sorted(determinism.RUN_ENVIRONMENTS.values()) == sorted(envs)
    assert KERNEL_VARS <= set(envs["avx2"]) and KERNEL_VARS <= set(envs["generic"])
    assert {
        k: envs["avx2"][k]
        for k in ("ATEN_CPU_CAPABILITY", "NUMBA_CPU_NAME", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA")
    } == {
        "ATEN_CPU_CAPABILITY": "avx2",
        "NUMBA_CPU_NAME": "haswell",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
    }
    assert {
        k: envs["generic"][k]
        for k in ("ATEN_CPU_CAPABILITY", "NUMBA_CPU_NAME", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA")
    } == {
        "ATEN_CPU_CAPABILITY": "default",
        "NUMBA_CPU_NAME": "generic",
        "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
    }


def test_numpy_is_asked_to_disable_only_dispatched_features_this_cpu_has(envs):
    features, baseline, dispatch = machines.numpy_cpu()
    for name in ("avx2", "generic"):
        listed = [f for f in envs[name].get("NPY_DISABLE_CPU_FEATURES", "").split(",") if f]
        assert all(features[f] and f in dispatch and f not in baseline for f in listed), (name, listed)
    generic = set(envs["generic"].get("NPY_DISABLE_CPU_FEATURES", "").split(","))
    wide = {
        f
        for f in dispatch
        if features.get(f)
        and f not in baseline
        and (f.startswith("AVX512") or f in machines.GENERIC_NUMPY or f == "X86_V4")
    }
    assert wide <= generic
    assert not any(
        f.startswith("AVX") or f == "FMA3"
        for f in envs["avx2"].get("NPY_DISABLE_CPU_FEATURES", "").split(",")
        if not f.startswith("AVX512")
    )


def test_glibc_tunables_use_the_spelling_of_this_glibc(envs):
    assert envs["generic"]["GLIBC_TUNABLES"].startswith("glibc.cpu.hwcaps=-AVX,-AVX2,-FMA,")
    assert "-AVX512F" in envs["avx2"]["GLIBC_TUNABLES"] and "-AVX2" not in envs["avx2"]["GLIBC_TUNABLES"]
    assert ("_Usable" in envs["generic"]["GLIBC_TUNABLES"]) == (GLIBC < (2, 33))


@pytest.mark.skipif(not X86_LINUX, reason="glibc's ld.so diagnostics of x86-64 Linux")
def test_the_generic_machine_masks_glibcs_avx_avx2_and_fma_per_ld_so_diagnostics(envs):
    here = provenance.glibc_cpu_features(dict(os.environ))
    generic = provenance.glibc_cpu_features(os.environ | envs["generic"])
    avx2 = provenance.glibc_cpu_features(os.environ | envs["avx2"])
    assert here is not None and generic is not None and avx2 is not None
    for name in ("AVX", "AVX2", "FMA", "AVX512F"):
        assert generic[name] == (here[name][0], False), name  # the CPU still reports it; glibc no longer uses it
    assert avx2["AVX512F"][1] is False
    assert avx2["AVX2"] == here["AVX2"] and avx2["FMA"] == here["FMA"]


@pytest.mark.skipif(not X86_LINUX or GLIBC < (2, 33), reason="glibc >= 2.33's ld.so diagnostics of x86-64 Linux")
def test_the_old_usable_spelling_masks_nothing_on_this_glibc():
    """Why the spelling matters: glibc >= 2.33 ignores ``-AVX2_Usable`` silently."""
    here = provenance.glibc_cpu_features(dict(os.environ))
    old_style = provenance.glibc_cpu_features(os.environ | {"GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX2_Usable"})
    assert old_style == here


def test_each_library_selects_the_simulated_machines_kernels(envs):
    """Seen from inside a process started with each environment (as the runs' jobs are)."""
    generic = machines.describe_environment(envs["generic"])
    assert generic["torch CPU kernels"] == "DEFAULT"
    assert generic["Numba target"] == "generic (no AVX/FMA)"
    assert generic["NumPy SIMD"].endswith("dispatched: none") or not any(
        t in generic["NumPy SIMD"].split("dispatched:")[1] for t in ("AVX", "FMA3", "X86_V3", "X86_V4")
    )
    if "openblas" in generic["BLAS kernels"]:
        assert "Nehalem" in generic["BLAS kernels"]
    assert "NUMBA_CPU_NAME=generic" in generic["kernel-selection variables"]
    avx2 = machines.describe_environment(envs["avx2"])
    assert avx2["torch CPU kernels"] in ("AVX2", "DEFAULT")  # DEFAULT only on a CPU without AVX2
    assert avx2["Numba target"].startswith("haswell") and "avx512f" not in avx2["Numba target"]
    assert "X86_V4" not in avx2["NumPy SIMD"] and "AVX512" not in avx2["NumPy SIMD"]


def test_runs_compile_into_their_own_copy_not_this_checkouts_numba_cache(monkeypatch):
    import bnstudy

    monkeypatch.setenv("NUMBA_CACHE_DIR", bnstudy._numba_cache_dir())  # what importing bnstudy sets
    env = workflowrun.run_environment({"NUMBA_CPU_NAME": "generic"})
    assert "NUMBA_CACHE_DIR" not in env and env["NUMBA_CPU_NAME"] == "generic"
    monkeypatch.setenv("NUMBA_CACHE_DIR", "/somewhere/chosen")  # chosen by the user: kept
    assert workflowrun.run_environment()["NUMBA_CACHE_DIR"] == "/somewhere/chosen"


def test_the_serial_run_keeps_its_priority_and_the_runs_with_parallel_jobs_run_niced(tmp_path):
    """The runs share the machine: the single-core run at normal priority, the others at the lowest
    (in the test suite: below the serial run, above the filler that takes what their chain leaves);
    a run started at a niceness really runs at it (``nice`` execs Snakemake in the same process)."""
    assert set(determinism.NICENESS) == set(determinism.RUNS) == set(determinism.IN_SUITE)
    assert determinism.NICENESS == {"cores1": 0, "cores4": 19, "killed-resumed": 19}
    assert determinism.IN_SUITE == {"cores1": 0, "cores4": 5, "killed-resumed": 5}
    assert max(determinism.IN_SUITE.values()) < determinism.FILLER  # the runs before the filler
    assert workflowrun.niced(["python", "-V"], 0) == ["python", "-V"]
    assert workflowrun.niced(["python", "-V"], 19) == ["nice", "-n", "19", "python", "-V"]
    log = tmp_path / "log"
    with open(log, "w") as out:
        cmd = ["-c", "import os; print(os.nice(0), os.getpgid(0) == os.getpid())"]
        proc = workflowrun._start([sys.executable, *cmd], tmp_path, out, None, 19)
        workflowrun._wait(proc)
    assert log.read_text() == "19 True\n"  # at the niceness, in its own process group (killpg reaches it)


def test_updating_the_expected_manifest_checks_no_killed_run_against_the_old_one(tmp_path, monkeypatch):
    """``--update-expected`` follows a change of the science: the committed manifest is the old one, so
    the killed run's copy must not carry it (``workflowrun.check_killed`` would call the new, whole
    bytes half-written); a plain run keeps it, and its kill check with it."""
    (tmp_path / "config" / "expected").mkdir(parents=True)
    (tmp_path / "config" / "expected" / "test.manifest.tsv").write_text("rule\tparams\tpath\tbytes\tsha256\n")
    (tmp_path / "config" / "test.yaml").write_text("{}\n")

    def copy(root, dest):
        import shutil

        shutil.copytree(root, dest)
        return dest

    seen = {}

    def fake_run(d, configfile, cores, log=None, env=None, niceness=0):
        seen[d.name] = workflowrun.expected_for(configfile, d).is_file()

    monkeypatch.setattr(determinism, "copy_workflow", copy)
    monkeypatch.setattr(determinism, "run", fake_run)
    monkeypatch.setattr(determinism, "describe_environment", lambda env: {})
    for check, name in ((True, "kept"), (False, "updating")):
        base = tmp_path.parent / f"{tmp_path.name}-{name}"
        base.mkdir()
        determinism.run_all(
            tmp_path, "config/test.yaml", base, runs=("cores1",), envs={"native": {}}, check_expected=check
        )
        assert seen["cores1"] is check, name
    assert (tmp_path / "config" / "expected" / "test.manifest.tsv").is_file()  # the checkout's own is untouched
