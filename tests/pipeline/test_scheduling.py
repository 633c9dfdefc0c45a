"""bnstudy.pipeline.scheduling: a local build's scheduler passes once per job that ends, not once a
second per job that has ended."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from bnstudy.pipeline import scheduling

ROOT = Path(__file__).resolve().parents[2]


def _workflow(local: bool, limiter="limiter"):
    return SimpleNamespace(local_exec=local, scheduler=SimpleNamespace(job_rate_limiter=limiter))


def test_a_local_run_loses_its_rate_limiter():
    workflow = _workflow(local=True)
    assert scheduling.no_rate_limit(workflow) is True
    assert workflow.scheduler.job_rate_limiter is None


def test_a_cluster_run_keeps_its_rate_limiter():
    workflow = _workflow(local=False)
    assert scheduling.no_rate_limit(workflow) is False
    assert workflow.scheduler.job_rate_limiter == "limiter"


def test_a_run_without_a_limiter_or_scheduler_is_left_as_it_is():
    assert scheduling.no_rate_limit(_workflow(local=True, limiter=None)) is False
    assert scheduling.no_rate_limit(SimpleNamespace(local_exec=True)) is False


# Three jobs of 2 s, one at a time: with the limiter, each that ends starts one more pass a second.
SNAKEFILE = """
onstart:
    from bnstudy.pipeline import scheduling

    if {switch_off}:
        scheduling.no_rate_limit(workflow)


rule all:
    input:
        expand("done{{i}}.txt", i=range(3)),


rule one:
    output:
        "done{{i}}.txt",
    shell:
        "sleep 2; touch {{output}}"
"""


def _start(tmp_path: Path, switch_off: bool) -> subprocess.Popen:
    where = tmp_path / ("without" if switch_off else "with")
    where.mkdir()
    (where / "Snakefile").write_text(SNAKEFILE.format(switch_off=switch_off))
    cmd = [sys.executable, "-m", "snakemake", "--cores", "1", "--verbose", "--nolock"]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.Popen(cmd, cwd=where, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _passes(proc: subprocess.Popen) -> int:
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out[-3000:]
    return out.count("Ready jobs:")  # Snakemake's debug line of each pass that finds ready jobs


@pytest.mark.slow  # two small Snakemake runs, side by side (about 9 s, mostly sleeping)
def test_a_local_build_passes_once_per_job_that_ends(tmp_path):
    limited, unlimited = _start(tmp_path, switch_off=False), _start(tmp_path, switch_off=True)
    with_limiter, without = _passes(limited), _passes(unlimited)
    # the first pass, then one after each of the three jobs (the last makes `all` ready): four jobs
    assert without == 4, without
    assert with_limiter >= without + 3, with_limiter  # the timers' passes: Snakemake behaves as the module says
