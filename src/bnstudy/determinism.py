"""Determinism and portability check: the same config gives the same bytes, however and wherever it is run.

``python -m bnstudy.determinism`` (``make determinism``, ``make portability``)
copies the workflow (tracked and untracked, non-ignored files, no ``results/``)
into fresh directories and runs the test config there from an empty
``results/``, each run on another simulated machine (:func:`environments`:
environment variables that make PyTorch, oneDNN, MKL, OpenBLAS, NumPy, Numba and
glibc select the kernels of a lesser CPU):

1. ``--cores 1`` on the machine as it is (``native``);
2. ``--cores 4`` as an AVX2 machine (``avx2``; at the same time as 1: each job
   pins its own threads, so sharing the machine changes timings, not results);
3. ``--cores 2`` as a machine without AVX, FMA or AVX512 (``generic``), killed
   with SIGKILL while training, then resumed with ``--rerun-incomplete``.

So the three runs check determinism (cores, interruption) and portability
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
import platform
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


# ---- simulated machines -------------------------------------------------------
# Each is a set of environment variables added to a run's environment. They cap
# the instruction set every library dispatches on; only features this machine
# has can be masked, so they are read here, at run time.
AVX512_GLIBC = ("AVX512F", "AVX512CD", "AVX512BW", "AVX512DQ", "AVX512ER", "AVX512PF", "AVX512VL")
# glibc >= 2.33 names its features as below (``-AVX2``); 2.26-2.32 as ``-AVX2_Usable``.
GENERIC_GLIBC = ("AVX", "AVX2", "FMA", "FMA4", "BMI1", "BMI2", "LZCNT", "MOVBE") + AVX512_GLIBC
GENERIC_NUMPY = ("AVX", "F16C", "FMA3", "AVX2", "X86_V3")  # X86_V3: NumPy >= 2.4 dispatches by level


def numpy_cpu() -> tuple[dict[str, bool], set[str], list[str]]:
    """NumPy's CPU features of this machine (as seen by this process), its baseline and dispatch targets."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # NumPy 1
        from numpy.core import _multiarray_umath as umath
    return dict(umath.__cpu_features__), set(umath.__cpu_baseline__), list(umath.__cpu_dispatch__)


def numpy_disable(names) -> list[str]:
    """Of ``names``, the NumPy dispatch targets this machine has: what NPY_DISABLE_CPU_FEATURES may list.

    NumPy refuses to disable a baseline feature and ignores (with an
    ImportWarning) names it does not dispatch on.
    """
    features, baseline, dispatch = numpy_cpu()
    return [n for n in dispatch if n in names and features.get(n) and n not in baseline]


def glibc_hwcaps(names) -> str:
    """The ``GLIBC_TUNABLES`` value masking ``names`` (glibc's spelling for its version)."""
    version = tuple(int(x) for x in (platform.libc_ver()[1] or "2.36").split(".")[:2])
    suffix = "_Usable" if version < (2, 33) else ""
    return "glibc.cpu.hwcaps=" + ",".join(f"-{n}{suffix}" for n in names)


def numba_features_without_avx512() -> str | None:
    """The host's LLVM features with every AVX512 (and AMX, AVX10) feature off; None without llvmlite.

    NUMBA_CPU_NAME alone keeps the host's features, AVX512 included.
    """
    try:
        import llvmlite.binding as ll
    except ImportError:
        return None
    flags = ll.get_host_cpu_features().flatten().split(",")
    wide = ("avx512", "amx", "avx10")
    return ",".join("-" + f[1:] if f[1:].startswith(wide) else f for f in flags if f)


def environments() -> dict[str, dict[str, str]]:
    """The simulated machines: name -> environment variables added to a run's environment."""
    features, _, _ = numpy_cpu()
    avx512 = [n for n in features if n.startswith("AVX512")] + ["X86_V4"]
    avx2 = {
        "ATEN_CPU_CAPABILITY": "avx2",
        "NUMBA_CPU_NAME": "haswell",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "OPENBLAS_CORETYPE": "Haswell",
        "GLIBC_TUNABLES": glibc_hwcaps(AVX512_GLIBC),
    }
    numba = numba_features_without_avx512()
    if numba is not None:
        avx2["NUMBA_CPU_FEATURES"] = numba
    generic = {
        "ATEN_CPU_CAPABILITY": "default",
        "NUMBA_CPU_NAME": "generic",
        "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
        "OPENBLAS_CORETYPE": "Nehalem",
        "GLIBC_TUNABLES": glibc_hwcaps(GENERIC_GLIBC),
    }
    for env, names in ((avx2, avx512), (generic, list(GENERIC_NUMPY) + avx512)):
        disable = numpy_disable(names)
        if disable:
            env["NPY_DISABLE_CPU_FEATURES"] = ",".join(disable)
    return {"native": {}, "avx2": avx2, "generic": generic}


# The machine each determinism run simulates.
RUN_ENVIRONMENTS = {"cores1": "native", "cores4": "avx2", "killed-resumed": "generic"}


def describe_environment(extra: dict[str, str]) -> dict[str, str]:
    """What a process started with ``extra`` added to its environment runs on
    (:func:`bnstudy.provenance.machine_description`, run in that process)."""
    src = str(Path(__file__).resolve().parents[1])
    code = (
        f"import json, sys; sys.path.insert(0, {src!r})\n"
        "from bnstudy import provenance\n"
        "print(json.dumps(provenance.machine_description()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=os.environ | extra
    )
    if out.returncode != 0:
        raise RuntimeError(f"describing the environment failed: {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout)


def summary(description: dict[str, str]) -> str:
    keys = ("torch CPU kernels", "NumPy SIMD", "BLAS kernels", "Numba target", "glibc")
    return "; ".join(f"{k}: {description.get(k, '?')}" for k in keys)


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

    Without the Numba cache directory that importing ``bnstudy`` here set (in
    this checkout's ``src/bnstudy/__pycache__``): each run compiles into its own
    copy's, so no run reuses another's (or this checkout's) machine code.
    """
    from . import _numba_cache_dir

    base = dict(os.environ)
    if base.get("NUMBA_CACHE_DIR") == _numba_cache_dir():
        del base["NUMBA_CACHE_DIR"]
    return base | (env or {})


def run(workdir: Path, configfile: str, cores: int, extra=(), log=None, env=None) -> None:
    """Run Snakemake in ``workdir``; ``env``: variables added to this process's environment."""
    subprocess.run(
        snakemake_cmd(configfile, cores, extra),
        cwd=workdir,
        check=True,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=run_environment(env),
    )


def run_killed_then_resumed(
    workdir: Path, configfile: str, log=None, wait_for="results/logs/train_grid", timeout: float = 600, env=None
) -> float:
    """Start a run, SIGKILL it (whole process group) once training has begun, resume.

    Returns the seconds after start at which the run was killed.
    """
    start = time.monotonic()
    proc = subprocess.Popen(
        snakemake_cmd(configfile, 2),
        cwd=workdir,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env=run_environment(env),
    )
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
    subprocess.run(
        [sys.executable, "-m", "snakemake", "--unlock", "--configfile", configfile, "-q"],
        cwd=workdir,
        check=True,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=run_environment(env),
    )
    run(workdir, configfile, 2, ["--rerun-incomplete"], log, env)
    return killed_at


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
CONCURRENT = (("cores1", "cores4"), ("killed-resumed",))  # runs started together


def run_all(
    root: Path, configfile: str, base: Path, runs=RUNS, envs: dict[str, dict[str, str]] | None = None
) -> tuple[dict[str, Path], dict[str, float]]:
    """Run the workflow at ``root`` once per entry of ``runs``, each in ``base/<name>``,
    on its simulated machine (``RUN_ENVIRONMENTS``; ``envs``: name -> variables,
    default :func:`environments`).

    Each run's log (``base/<name>.log``) starts with what its machine looks like
    from inside. Returns the manifest path and wall seconds of each run; raises
    ``subprocess.CalledProcessError`` (with the log path in ``base``) if a run fails.
    """
    envs = environments() if envs is None else envs
    how = {
        "cores1": lambda d, log, env: run(d, configfile, 1, log=log, env=env),
        "cores4": lambda d, log, env: run(d, configfile, 4, log=log, env=env),
        "killed-resumed": lambda d, log, env: print(
            f"  killed after {run_killed_then_resumed(d, configfile, log, env=env):.1f} s, resumed", flush=True
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
            how[name](d, log, env)
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
                f"(create it: python -m bnstudy.determinism --update-expected)"
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
