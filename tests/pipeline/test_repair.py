"""What is on disk is what was built: verify names every lost or damaged output, repair re-creates
exactly those, and a run killed anywhere loses nothing.

The finished builds are the determinism runs' (tests/conftest.py ``runs``): the killed run's, killed
at each of ``bnstudy.pipeline.workflowrun.KILL_POINTS`` and resumed, is damaged here and repaired in place,
on the simulated machine it was built on (so its kernel cache serves the repair's jobs).
"""

import hashlib
import json
import re
import subprocess
import sys

import pytest

from bnstudy.base import io
from bnstudy.pipeline import determinism, machines, manifest, workflowrun
from conftest import ROOT

pytestmark = pytest.mark.pipeline
EXPECTED = ROOT / "config" / "expected" / "test.manifest.tsv"

WEIGHTS = "results/runs/grid/batchnorm/b4/seeds0-1.safetensors"  # truncated to half
SUMMARY = "results/summary/serving.json"  # deleted
FIGURE = "results/paper/figures/lr_sweep.pdf"  # one byte edited
MACROS = "results/paper/macros/design.tex"  # a number edited by hand


def _kills(base) -> list[dict]:
    log = (base / "killed-resumed.log").read_text()
    prefix = workflowrun.KILL_RECORD
    return [json.loads(line[len(prefix) :]) for line in log.splitlines() if line.startswith(prefix)]


def test_the_killed_run_was_killed_at_each_point_left_no_half_written_file_and_ends_as_expected(runs):
    """Killed during the kernel warm-up, during training and during the paper build (each seen
    running when killed), unlocked and resumed each time; after each kill every output on disk had
    its expected bytes (bnstudy.pipeline.workflowrun.check_killed raises otherwise) and the build did not
    verify; the last resumption ends identical to the expected manifest."""
    base, manifests, _ = runs
    kills = _kills(base)
    assert (
        [k["point"] for k in kills]
        == [name for name, _, _ in workflowrun.KILL_POINTS]
        == [
            "warm-up",
            "training",
            "paper",
        ]
    )
    for kill, (_, running, _) in zip(kills, workflowrun.KILL_POINTS):
        assert kill["running"] and all(running in command for command in kill["running"]), kill
        assert kill["survivors"] == [], kill  # nothing of the killed run goes on writing
        assert kill["checked"] and 0 <= kill["whole"] < kill["expected"], kill
    assert kills[0]["whole"] <= kills[1]["whole"] < kills[2]["whole"], kills  # each resumption kept the work
    files = len(manifest.read(EXPECTED))
    assert manifest.verify(EXPECTED, manifests["killed-resumed"].parent) == (True, [f"identical: {files} files"])


def _snakemake(wf, env, *args, timeout):
    cmd = [sys.executable, "-m", "snakemake", "--configfile", "config/test.yaml", *args]
    return subprocess.run(cmd, cwd=wf, env=env, capture_output=True, text=True, timeout=timeout)


def _damage(wf) -> dict[str, bytes]:
    """Truncate, delete and edit four outputs; return their bytes as built."""
    before = {p: (wf / p).read_bytes() for p in (WEIGHTS, SUMMARY, FIGURE, MACROS, "results/manifest.tsv")}
    (wf / WEIGHTS).write_bytes(before[WEIGHTS][: len(before[WEIGHTS]) // 2])
    (wf / SUMMARY).unlink()
    figure = bytearray(before[FIGURE])
    figure[len(figure) // 2] ^= 0xFF
    (wf / FIGURE).write_bytes(bytes(figure))
    (wf / MACROS).write_text(re.sub(r"\d", lambda m: str((int(m.group()) + 1) % 10), before[MACROS].decode(), count=1))
    return before


def _logs(wf) -> dict[str, str]:
    """Each job's log by its content: a job that runs rewrites its log (with the time it started)."""
    logs = (wf / "results/logs").rglob("*.log")
    return {str(p.relative_to(wf)): hashlib.sha256(p.read_bytes()).hexdigest() for p in logs}


def test_verify_names_each_damaged_output_a_job_names_the_file_and_repair_restores_the_manifest(runs):
    base, _, _ = runs
    wf = base / "killed-resumed"
    env = workflowrun.run_environment(machines.environments()[determinism.RUN_ENVIRONMENTS["killed-resumed"]])
    assert manifest.verify(EXPECTED, wf / "results")[0]
    before = _damage(wf)
    try:
        # 1. verify hashes the files: each named, under its rule, with how it is bad
        assert (wf / "results/manifest.tsv").read_bytes() == EXPECTED.read_bytes()  # the old check's "identical"
        problems, _ = manifest.check_files(EXPECTED, wf / "results")
        assert dict(zip(problems["path"], problems["problem"])) == {
            MACROS: manifest.CHANGED,
            WEIGHTS: manifest.CHANGED,
            SUMMARY: manifest.MISSING,
            FIGURE: manifest.CHANGED,
        }
        assert dict(zip(problems["path"], problems["rule"])) == {
            MACROS: "design_macros",
            WEIGHTS: "train_grid",
            SUMMARY: "summarise_serving",
            FIGURE: "figure_lr_sweep",
        }
        cli = subprocess.run(
            [sys.executable, "-m", "bnstudy.pipeline.manifest", "verify", "--configfile", "config/test.yaml"],
            cwd=wf,
            capture_output=True,
            text=True,
            env=env,
        )
        assert cli.returncode == 1
        out = cli.stdout.splitlines()
        assert out[0].startswith("NOT IDENTICAL to config/expected/test.manifest.tsv: "), out
        assert f"  {SUMMARY}: missing" in out and "summarise_serving: 1 file" in out, out
        assert out[-1] == "repair: make repair CONFIG=config/test.yaml re-creates these files (docs/verify.md)"

        # 2. a job reading the truncated weights says which file, and how to repair it, in one line
        unrun = _logs(wf)
        run = _snakemake(wf, env, "--cores", "2", timeout=900)
        text = run.stdout + run.stderr
        assert run.returncode != 0
        line = f"bnstudy: {WEIGHTS}: damaged output (Error while deserializing header: incomplete metadata, "
        assert line in text and io.REPAIR in text and "Traceback" not in text, text[-3000:]

        # 3. repair: the bad files' jobs run again, nothing downstream of them; the manifest is restored
        logs = _logs(wf)
        fixed = subprocess.run(
            [
                sys.executable,
                "-m",
                "bnstudy.pipeline.manifest",
                "repair",
                "--configfile",
                "config/test.yaml",
                "--cores",
                "2",
            ],
            cwd=wf,
            capture_output=True,
            text=True,
            env=env,
            timeout=1800,
        )
        assert fixed.returncode == 0, fixed.stdout[-3000:] + fixed.stderr[-3000:]
        said = fixed.stdout.splitlines()
        assert said[-1] == f"identical: {len(manifest.read(EXPECTED))} files", said
        assert "each byte-identical" in fixed.stdout, said
        assert (wf / "results/manifest.tsv").read_bytes() == EXPECTED.read_bytes()
        assert {p: (wf / p).read_bytes() for p in before} == before
        repaired_rules = {line.split(":")[0] for line in said if re.match(r"^\w+: \d+ files?$", line)}
        assert {"design_macros", "train_grid", "summarise_serving", "figure_lr_sweep"} <= repaired_rules, said
        ran = {p for p, digest in _logs(wf).items() if logs.get(p) != digest}
        assert {
            "results/logs/design_macros.log",
            "results/logs/train_grid/batchnorm_b4_seeds0-1.log",
            "results/logs/summarise_serving.log",
            "results/logs/figure_lr_sweep.log",
        } <= ran, ran
        # the jobs the failed run of step 2 started (readers of the truncated weights, stopped or failed:
        # Snakemake removed their outputs) must run again; which of them started depends on the scheduler
        failed_run = {p for p, digest in logs.items() if unrun.get(p) != digest}
        assert failed_run, "step 2 ran no job"
        # serve_stream lies between two bad files (it reads the truncated weights and feeds the deleted
        # serving.json): the forced run re-runs it, Snakemake not knowing yet that the weights come back
        # byte-identical (docs/verify.md, step 2); nothing else downstream may run
        between = {"results/logs/serve_stream.log"}
        downstream = {p for p in ran - failed_run - between if not any(f"/{rule}" in p for rule in repaired_rules)}
        assert downstream <= {"results/logs/runtimes.log"}, downstream  # the build record's runtimes only
        plan = _snakemake(wf, env, "-n", timeout=300)
        assert "Nothing to be done" in plan.stdout + plan.stderr
    finally:
        if not manifest.verify(EXPECTED, wf / "results")[0]:  # leave the run as the other tests expect it
            for path, data in before.items():
                (wf / path).write_bytes(data)
