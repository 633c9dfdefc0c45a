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
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bnstudy.pipeline import manifest
from bnstudy.pipeline.machines import describe_environment, environments, summary
from bnstudy.pipeline.workflowrun import copy_workflow, expected_for, run, run_killed_then_resumed

# The machine each determinism run simulates.
RUN_ENVIRONMENTS = {"cores1": "native", "cores4": "avx2", "killed-resumed": "generic"}


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
# In the test suite the runs share the machine with the unit tests' process and the tiny Fashion
# builds, and their chain (the simulated machines' kernel warm-ups, the runs, then the tests that
# read them) is the suite's longest: there the runs go before that filler, which runs at niceness
# FILLER (scripts/test-suite, tests/workflow/test_slurm.py) and takes what the chain leaves. At the
# lowest priority, as when the Fashion build on SLURM was the longest chain (until 2026-12-07), the
# runs ended with one core idle while their tests ran alone.
FILLER = 10
IN_SUITE = {"cores1": 0, "cores4": 5, "killed-resumed": 5}


def run_all(
    root: Path,
    configfile: str,
    base: Path,
    runs=RUNS,
    envs: dict[str, dict[str, str]] | None = None,
    niceness: dict[str, int] = NICENESS,
    check_expected: bool = True,
) -> tuple[dict[str, Path], dict[str, float]]:
    """Run the workflow at ``root`` once per entry of ``runs``, each in ``base/<name>``,
    on its simulated machine (``RUN_ENVIRONMENTS``; ``envs``: name -> variables,
    default :func:`bnstudy.pipeline.machines.environments`), at ``niceness`` (:data:`NICENESS`; the
    test suite: :data:`IN_SUITE`).

    ``check_expected=False`` (``--update-expected``: the science changed, so the committed manifest is
    the old one): the copies carry no expected manifest, so the killed run's check of what is on disk
    after each kill (:func:`bnstudy.pipeline.workflowrun.check_killed`) is not made against stale bytes.

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
        if not check_expected:
            expected_for(configfile, d).unlink(missing_ok=True)
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
            manifests, times = run_all(root, args.configfile, base, check_expected=not args.update_expected)
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
