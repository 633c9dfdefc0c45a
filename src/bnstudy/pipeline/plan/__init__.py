"""What a config would build, and what it would cost, before anything runs.

``python -m bnstudy.pipeline.plan --configfile FILE [--cores N] [--allow-budget]`` (``make plan``)
builds Snakemake's DAG of the default target in this process, from the Snakefile in the
working directory, as ``snakemake -n`` would, and prints in a few lines: the jobs of the
whole build by rule (the build from empty results: the config's budget), the jobs that
would run now, the estimated CPU time of both, and the wall time at ``--cores`` as CPU
time / cores (a lower bound: it assumes every core busy from the first job to the last), and the
whole build's longest chain of jobs and a list schedule's wall time on ``--cores`` cores, which may
be more than the machine has (a cluster's: :func:`schedule`).

An estimate above :data:`BUDGET_CPU_S` (one CPU-week) is refused: exit status 1 and one
line on stderr naming the rule that costs most and the config key that drives it, and how
to run anyway (``--allow-budget``, ``make paper ALLOW_BUDGET=1``).

The cost model (:data:`TABLE`, ``workflow/resources/cpu_seconds.tsv``): per rule, a job
costs ``start_s + cpu_s_per_unit * work``, where ``work`` comes from the job's params
(``WORK``, :func:`work_table`: the rules no study owns here, in :data:`BASE_WORK`, each study's in
its ``bnstudy/studies/<name>/cost.py``; training runs count optimiser steps, probes count probe rows,
..., each times the network's multiply-adds per row, :func:`row_multiply_adds`; the two network
families' jobs are fitted apart; a rule priced per job (:data:`PER_JOB`), or not in ``WORK``, has
one unit per job and costs its median job). ``python -m
bnstudy.pipeline.plan calibrate --results DIR --configfile FILE`` refits the table from the
``benchmark:`` files of a finished build of that config (:func:`calibrate`). ``--measured
DIR`` (``make plan MEASURED=DIR``) gives every job that a build of the same config ran, finished
or partial, its own measured CPU time in place of the estimate (:func:`use_measured`), so the
longest chain and the list schedules rest on measured times where there are some.

Its modules: :mod:`.work` (each rule's work per job), :mod:`.memory` (a job's and a local build's
memory), :mod:`.costs` (the table and its fit), :mod:`.jobs` (the DAG's jobs, priced), :mod:`.chains`
(the longest chain, the list schedule), :mod:`.printing` (the lines printed), :mod:`.budget` (the
refusal), :mod:`.calibration` (the refit, measured times) and :mod:`.cli` (the command); the names
other modules use are importable from here.
"""

from __future__ import annotations

from bnstudy.pipeline.plan.budget import BUDGET_CPU_S, driver, over_budget
from bnstudy.pipeline.plan.calibration import benchmarked_jobs, calibrate, use_measured
from bnstudy.pipeline.plan.chains import chain_lengths, critical_chain, schedule
from bnstudy.pipeline.plan.cli import main
from bnstudy.pipeline.plan.costs import (
    DEFAULT_RULE,
    TABLE,
    Cost,
    PlanError,
    fit,
    fit_rule,
    job_cpu,
    read_table,
    write_table,
)
from bnstudy.pipeline.plan.jobs import RUNTIME_MARGIN, Job, Plan, dag_jobs, estimate, make_plan, planned_minutes, price
from bnstudy.pipeline.plan.memory import EXACT_STATISTICS_COPIES, available_memory_mb, exact_statistics_mb
from bnstudy.pipeline.plan.printing import chain_line, duration, measured_lines, memory_lines, report, runtime_lines
from bnstudy.pipeline.plan.work import (
    BASE_WORK,
    CLASSES,
    JOB_UNIT,
    PER_JOB,
    TRAIN_UNIT,
    TRAINING,
    Work,
    block_seeds,
    cost_key,
    epoch_steps,
    group_of,
    network_family,
    row_activations,
    row_multiply_adds,
    rows_per_step,
    test_rows,
    train_rows,
    train_work,
    training,
    unit_of,
    work_of,
    work_table,
)

__all__ = [
    "BASE_WORK",
    "BUDGET_CPU_S",
    "CLASSES",
    "Cost",
    "DEFAULT_RULE",
    "EXACT_STATISTICS_COPIES",
    "JOB_UNIT",
    "Job",
    "PER_JOB",
    "Plan",
    "PlanError",
    "RUNTIME_MARGIN",
    "TABLE",
    "TRAINING",
    "TRAIN_UNIT",
    "Work",
    "available_memory_mb",
    "benchmarked_jobs",
    "block_seeds",
    "calibrate",
    "chain_lengths",
    "chain_line",
    "cost_key",
    "critical_chain",
    "dag_jobs",
    "driver",
    "duration",
    "epoch_steps",
    "estimate",
    "exact_statistics_mb",
    "fit",
    "fit_rule",
    "group_of",
    "job_cpu",
    "main",
    "make_plan",
    "measured_lines",
    "memory_lines",
    "network_family",
    "over_budget",
    "planned_minutes",
    "price",
    "read_table",
    "report",
    "row_activations",
    "row_multiply_adds",
    "rows_per_step",
    "runtime_lines",
    "schedule",
    "test_rows",
    "train_rows",
    "train_work",
    "training",
    "unit_of",
    "use_measured",
    "work_of",
    "work_table",
    "write_table",
]


def __getattr__(name):
    if name == "WORK":  # built on first use: the study modules import this one
        return work_table()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
