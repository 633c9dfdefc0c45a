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
"""

from __future__ import annotations

import functools
import math
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
TABLE = ROOT / "workflow" / "resources" / "cpu_seconds.tsv"
BUDGET_CPU_S = 604_800  # one CPU-week
# One optimiser step costs as much as this many rows of it, by network family: the MLP's compiled
# training loop's per-step and per-row costs (docs/performance.md: per epoch at b = 2 and b = 64);
# the convolutional network's, where each row's convolutions dominate (docs/speed.md, network C:
# 1.32 ms a step at b = 2, 74.7 ms at b = 128, so about 0.58 ms a row and 0.16 ms a step).
ROWS_PER_STEP = 25
ROWS_PER_STEP_BY_FAMILY = {"mlp": ROWS_PER_STEP, "conv": 0.25}
CLASSES = 10
# Snakemake samples a benchmarked job's CPU time every 0.5 s for its first 15 s, then
# every 30 s (snakemake.benchmark); what a job spends after its last sample is not in
# the file. :func:`job_cpu` scales the recorded CPU time by wall time / last sample.
SAMPLE_SHORT, SAMPLE_SHORT_UNTIL, SAMPLE_LONG = 0.5, 15.0, 30.0
COLUMNS = ["rule", "unit", "jobs", "cpu_s_median", "start_s", "cpu_s_per_unit"]
DEFAULT_RULE = "*"  # the table's row for a rule it does not list: the median job of the build


class PlanError(Exception):
    """A one-line refusal (bad table, missing benchmark files)."""


# ---- work per job ------------------------------------------------------------------


def train_rows(config) -> int:
    from bnstudy.base.config import parts

    return parts(config).train_rows


def test_rows(config) -> int:
    from bnstudy.base.config import parts

    return parts(config).test_rows


def epoch_steps(rows: int, batch_size: int, last_batch: str = "drop", rows_per_step: float = ROWS_PER_STEP) -> float:
    """Step-equivalents of one epoch of one model: its optimiser steps plus its rows / ``rows_per_step``."""
    steps = rows // batch_size
    if last_batch == "keep" and rows % batch_size >= 2:
        steps += 1
    return steps + rows / rows_per_step


def row_multiply_adds(config) -> float:
    """Millions of multiply-adds of one row's forward pass through the config's network: the MLP's
    linear maps, or the convolutional network's 3x3 convolutions (each output position of each
    output channel: 9 x input channels) and its linear classifier. A training step's cost per row
    grows with it; the table's rates for training rules are per million of them
    (:func:`network_family`: the two families are fitted apart)."""
    from bnstudy.base.datasets import shape

    data = shape(config)
    n = config["network"]
    if n.get("kind", "mlp") != "conv":
        widths = [data.features, *n["hidden"], data.classes]
        return sum(a * b for a, b in zip(widths, widths[1:])) / 1e6
    blocks = _conv_blocks(config)
    total = sum(b.positions * b.channels * b.in_channels * 9 for b in blocks)
    return (total + blocks[-1].channels * data.classes) / 1e6


def _conv_blocks(config):
    """The convolutions of the config's network (:func:`bnstudy.base.convlayers.parse`) placed on the
    data set's images: each its output positions and its input and output channels."""
    from bnstudy.base.convlayers import parse
    from bnstudy.base.datasets import shape

    return parse(config["network"], shape(config).side)


def row_activations(config) -> int:
    """Floats of one row's hidden activations in the config's network (the MLP's hidden widths, or each
    convolution's output positions x channels): what a job holds per training row when it computes
    the exact statistics of every row at once (:func:`exact_statistics_mb`)."""
    n = config["network"]
    if n.get("kind", "mlp") != "conv":
        return int(sum(n["hidden"]))
    return sum(b.positions * b.channels for b in _conv_blocks(config))


# Peak memory of a job computing exact statistics over the training rows, in float32 copies of
# every row's activations: an evaluate_remedies job of config/fashion-cluster.yaml (40,000 rows x 25,088
# floats, 4.0 GB a copy) peaked at 11.4 GB, a fine-tuning job at 7.6 GB (docs/cluster.md)
EXACT_STATISTICS_COPIES = 3.5


def exact_statistics_mb(config) -> int:
    """MB a job needs that computes the exact statistics of every training row at once: the rows'
    activations, :data:`EXACT_STATISTICS_COPIES` times, plus 500 MB for the interpreter and its
    libraries (the rules ask for at least this: ``job_size_with_rows`` in workflow/rules/common.smk)."""
    floats = train_rows(config) * row_activations(config)
    return math.ceil(EXACT_STATISTICS_COPIES * 4 * floats / 1e6) + 500


def available_memory_mb(meminfo="/proc/meminfo") -> int | None:
    """The memory a local build may give its jobs, in MB: the kernel's ``MemAvailable`` (memory that
    can be used without swapping) less 1,000 MB for Snakemake, the job server and the page cache;
    None where the file or the field is missing (not Linux): then no limit is set."""
    try:
        with open(meminfo) as f:
            for line in f:
                name, _, value = line.partition(":")
                if name == "MemAvailable":
                    kb = int(value.split()[0])
                    return max(1000, kb * 1024 // 1_000_000 - 1000)
    except OSError:
        return None
    return None


def network_family(p, wc, config) -> str:
    """The training rules' variant: the network family the job trains (fitted apart)."""
    return config["network"].get("kind", "mlp")


def rows_per_step(p, wc, config) -> float:
    """Rows a step costs as much as, in the job's network family (:data:`ROWS_PER_STEP_BY_FAMILY`)."""
    return ROWS_PER_STEP_BY_FAMILY[network_family(p, wc, config)]


def train_work(p, wc, config):
    """Step-equivalents x M multiply-adds per row of a job of ``train.py``: its seeds x epochs x
    (steps + rows / r) x the network (:func:`epoch_steps`, :func:`row_multiply_adds`)."""
    r, per_step = p["recipe"], rows_per_step(p, wc, config)
    steps = epoch_steps(train_rows(config), r["batch_size"], r["last_batch"], per_step)
    return len(p["seeds"]) * r["epochs"] * steps * row_multiply_adds(config)


def block_seeds(config, block: str) -> int:
    """How many of grid.seeds the seed block labelled ``block`` (``"0-4"``: bnstudy.nets.weights.blocks) holds."""
    first, last = (int(v) for v in block.split("-"))
    return sum(first <= int(s) <= last for s in config["grid"]["seeds"])


def one_unit(p, wc, config) -> int:
    """The work of a job of a rule priced per job: one unit, its rule's median job."""
    return 1


@dataclass(frozen=True)
class Work:
    unit: str  # what one unit of work is (the table's unit column)
    function: object  # (params, wildcards, config) -> units of work of one job
    keys: tuple  # the config keys the rule's cost grows with (its work per job or its job count)
    group: str = ""  # rules of one group (one script) are fitted together, their jobs pooled
    variant: object = None  # (params, wildcards, config) -> a kind of job fitted apart ("" for none)


JOB_UNIT = "job"
# A rule priced per job: each job costs its rule's median job in the table (a job of seconds whose
# work no config key changes much: a data split, a population, a self-check).
PER_JOB = Work(JOB_UNIT, one_unit, ())
# r: rows a step costs as much as, by network family (ROWS_PER_STEP_BY_FAMILY)
# Every rule that trains networks (train.py's, the learning-rate sweep's, gradient accumulation's)
# is fitted to their jobs pooled, per network family: a training step costs the same in each, and
# a family's large networks are then priced from whichever of its training jobs were measured.
TRAINING = "training"
TRAIN_UNIT = "step-equivalents x M multiply-adds per row (seeds x epochs x (steps + rows/r) x network)"


def training(keys: tuple) -> Work:
    """The work of a rule of ``train.py`` (:func:`train_work`) whose cost grows with ``keys``."""
    return Work(TRAIN_UNIT, train_work, keys, group=TRAINING, variant=network_family)


# The work of the rules no study owns: the data split (workflow/rules/data.smk) and the training
# runs of workflow/rules/train.smk, which several studies read. Each study's own rules have their
# work in its folder, ``bnstudy/studies/<name>/cost.py`` (``WORK = {rule: Work(...)}``), looked up
# by name from the catalogue (:func:`work_table`); the rules of paper.smk and manifest.smk are
# local rules of seconds.
BASE_WORK = {
    "split": PER_JOB,
    "train_grid": training(
        ("grid.epochs", "grid.seed_block", "grid.seeds", "grid.batch_sizes", "normalisers", "split.test_size")
    ),
    "train_sorted": training(("grid.epochs", "grid.seed_block", "grid.seeds", "sorted_training.batch_sizes")),
    "train_keep": training(("grid.epochs", "grid.seed_block", "grid.seeds", "last_batch_keep.normalisers")),
    "train_dependence": training(("dependence.epochs", "dependence.seeds")),
    "train_dependence_keep": training(("dependence.epochs",)),
}


@functools.cache
def work_table() -> dict[str, Work]:
    """Every rule's :class:`Work`: :data:`BASE_WORK` and each catalogue study's own
    (:meth:`bnstudy.base.catalogue.Study.work`; every study's, not only a config's: a rule that a config
    does not run is never asked about). A rule with two owners is an error. ``plan.WORK`` is this table."""
    from bnstudy.base import catalogue

    table = dict(BASE_WORK)
    for study in catalogue.STUDIES:
        for rule, spec in study.work().items():
            if rule in table:
                raise ValueError(f"rule {rule!r}: a cost entry in bnstudy.studies.{study.name}.cost and elsewhere")
            table[rule] = spec
    return table


def __getattr__(name):
    if name == "WORK":  # built on first use: the study modules import this one
        return work_table()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def work_of(rule: str, params: dict, wildcards: dict, config: dict) -> float:
    """Units of work of one job of ``rule`` (1 for a rule priced per job)."""
    spec = work_table().get(rule)
    return float(spec.function(params, wildcards, config)) if spec else 1.0


def cost_key(rule: str, params: dict, wildcards: dict, config: dict) -> str:
    """The table's row for a job: its rule, or ``rule:variant`` for a rule whose jobs are of kinds
    fitted apart (:attr:`Work.variant`: companion probes with and without batch statistics)."""
    spec = work_table().get(rule)
    variant = spec.variant(params, wildcards, config) if spec and spec.variant else ""
    return f"{rule}:{variant}" if variant else rule


def _split(key: str) -> tuple[str, str]:
    rule, _, variant = key.partition(":")
    return rule, variant


def group_of(key: str) -> str:
    """The table rows fitted together with ``key`` (one script's jobs of one variant): its rule's
    group, else the rule itself, with the variant."""
    rule, variant = _split(key)
    work = work_table()
    group = (work[rule].group if rule in work else "") or rule
    return f"{group}:{variant}" if variant else group


def unit_of(key: str) -> str:
    rule, _ = _split(key)
    work = work_table()
    return work[rule].unit if rule in work else JOB_UNIT


# ---- the cost model -------------------------------------------------------------------


@dataclass
class Cost:
    """One rule's row of the table: a job costs ``start_s + cpu_s_per_unit * work`` CPU seconds."""

    rule: str
    unit: str
    jobs: int
    cpu_s_median: float
    start_s: float
    cpu_s_per_unit: float

    def predict(self, work: float) -> float:
        return self.start_s + self.cpu_s_per_unit * work


def job_cpu(wall_s: float, cpu_s: float) -> float:
    """A job's CPU seconds from its benchmark file's wall ``s`` and ``cpu_time``: the CPU time
    recorded at the last sample, scaled by wall time / the last sample's time (Snakemake's
    sampling: :data:`SAMPLE_SHORT` apart up to :data:`SAMPLE_SHORT_UNTIL`, then
    :data:`SAMPLE_LONG` apart), i.e. the job's CPU share assumed the same after the last sample."""
    if wall_s <= 0:
        return cpu_s
    if wall_s < SAMPLE_SHORT_UNTIL:
        last = math.floor(wall_s / SAMPLE_SHORT) * SAMPLE_SHORT
    else:
        last = SAMPLE_SHORT_UNTIL + math.floor((wall_s - SAMPLE_SHORT_UNTIL) / SAMPLE_LONG) * SAMPLE_LONG
    return cpu_s * wall_s / last if last > 0 else cpu_s


def fit_rule(rule: str, unit: str, points, start_s: float) -> Cost:
    """One rule's cost from its jobs' ``(work, cpu_s)`` points.

    Per job (unit ``job``): the median job. Per unit of work, when the jobs' work spans a
    factor of 2 or more: a least-squares line (its intercept the job's start-up cost, at least
    0; its slope the cost per unit, at least 0). Else the start-up cost is ``start_s`` (the
    median job of the rules priced per job) and the cost per unit the median over the jobs of
    ``(cpu_s - start_s) / work``, at least 0.
    """
    work = [w for w, _ in points]
    cpu = [c for _, c in points]
    median = statistics.median(cpu)
    if unit == JOB_UNIT:
        return Cost(rule, unit, len(points), median, median, 0.0)
    if min(work) > 0 and max(work) >= 2 * min(work):
        slope = max(0.0, statistics.linear_regression(work, cpu).slope)
        start = max(0.0, statistics.mean(cpu) - slope * statistics.mean(work))
        return Cost(rule, unit, len(points), median, start, slope)
    per_unit = max(0.0, statistics.median((c - start_s) / w for w, c in points))
    return Cost(rule, unit, len(points), median, start_s, per_unit)


def fit(jobs) -> dict[str, Cost]:
    """The table from ``(rule, work, cpu_s)`` of every job of a build (:func:`fit_rule`; the rules of
    one :attr:`Work.group` fitted to their jobs pooled, each row with its own jobs and median), with
    the :data:`DEFAULT_RULE` row: the median job of the build, for rules the table lacks."""
    by_rule: dict[str, list] = {}
    for rule, work, cpu in jobs:
        by_rule.setdefault(rule, []).append((work, cpu))
    if not by_rule:
        raise PlanError("plan: no benchmarked jobs to calibrate from")
    per_job = [c for rule, pts in by_rule.items() if unit_of(rule) == JOB_UNIT for _, c in pts]
    start = statistics.median(per_job or [c for pts in by_rule.values() for _, c in pts])
    pooled: dict[str, list] = {}
    for rule, pts in by_rule.items():
        pooled.setdefault(group_of(rule), []).extend(pts)
    table = {}
    for rule in sorted(by_rule):
        cost = fit_rule(rule, unit_of(rule), pooled[group_of(rule)], start)
        cost.jobs, cost.cpu_s_median = len(by_rule[rule]), statistics.median(c for _, c in by_rule[rule])
        table[rule] = cost
    everything = [c for pts in by_rule.values() for _, c in pts]
    m = statistics.median(everything)
    table[DEFAULT_RULE] = Cost(DEFAULT_RULE, JOB_UNIT, len(everything), m, m, 0.0)
    return table


def read_table(path=TABLE) -> dict[str, Cost]:
    import csv

    try:
        with open(path, encoding="utf-8") as f:
            rows = list(csv.DictReader((line for line in f if not line.startswith("#")), delimiter="\t"))
    except OSError as e:
        raise PlanError(
            f"plan: {path}: cannot be read ({e.strerror}); `python -m bnstudy.pipeline.plan calibrate` writes it"
        )
    table = {}
    for i, row in enumerate(rows):
        try:
            table[row["rule"]] = Cost(
                row["rule"],
                row["unit"],
                int(row["jobs"]),
                float(row["cpu_s_median"]),
                float(row["start_s"]),
                float(row["cpu_s_per_unit"]),
            )
        except (KeyError, TypeError, ValueError):
            raise PlanError(f"plan: {path}: row {i + 1} is not {'/'.join(COLUMNS)}") from None
    if DEFAULT_RULE not in table:
        raise PlanError(f"plan: {path}: no '{DEFAULT_RULE}' row (the cost of a rule the table lacks)")
    return table


def write_table(table: dict[str, Cost], path, header: list[str]) -> None:
    lines = [f"# {h}" for h in header] + ["\t".join(COLUMNS)]
    for c in table.values():
        lines.append(
            "\t".join(
                [c.rule, c.unit, str(c.jobs), f"{c.cpu_s_median:.3f}", f"{c.start_s:.3f}", f"{c.cpu_s_per_unit:.4g}"]
            )
        )
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


# ---- the planned jobs ---------------------------------------------------------------


@dataclass
class Job:
    rule: str
    wildcards: dict
    params: dict
    benchmark: str | None
    needrun: bool
    runs: bool = True  # False: a target rule without anything to run (``all``), free
    work: float = 0.0
    cpu_s: float = 0.0
    needs: tuple[int, ...] = ()  # the indices (in the plan's job list) of the jobs it waits for
    mem_mb: int = 0  # the memory its first attempt asks (``resources: mem_mb``)
    runtime_min: int = 0  # the run time its first attempt asks, minutes (``resources: runtime``, sbatch --time)
    measured: bool = False  # cpu_s is this job's own, measured in a build (:func:`use_measured`)
    priority: float = 0  # Snakemake's scheduling priority (workflow/rules/common.smk: its estimated CPU s)


@dataclass
class Plan:
    configfile: str
    config: dict
    jobs: list = field(default_factory=list)
    memory_limit_mb: int | None = None  # a local build's mem_mb limit (workflow/rules/common.smk), if any

    def by_rule(self, only_needrun=False) -> dict[str, list[Job]]:
        out: dict[str, list[Job]] = {}
        for job in self.jobs:
            if job.needrun or not only_needrun:
                out.setdefault(job.rule, []).append(job)
        return out

    def cpu(self, only_needrun=False) -> float:
        return sum(j.cpu_s for j in self.jobs if j.needrun or not only_needrun)


def dag_jobs(configfile, snakefile="Snakefile", workdir=".", forceall=False) -> tuple[dict, list[Job], int | None]:
    """The config, every job of the default target's DAG, built by Snakemake in this process
    as ``snakemake -n`` builds it (the default profile's ``rerun-incomplete``; ``needrun``: the
    job would run now, every job with ``forceall``), and the memory limit (MB) a local build on
    this machine schedules its jobs within (None: no limit). Nothing runs, nothing is locked."""
    import logging

    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, ResourceSettings

    quiet = OutputSettings(quiet={"all"}, dryrun=True, log_level_override=logging.ERROR, enable_file_logging=False)
    with SnakemakeApi(quiet) as api:
        workflow_api = api.workflow(
            snakefile=Path(snakefile).resolve(),
            workdir=Path(workdir).resolve(),
            resource_settings=ResourceSettings(cores=1),
            config_settings=ConfigSettings(configfiles=[Path(configfile).resolve()]),
        )
        dag_api = workflow_api.dag(DAGSettings(forceall=forceall, force_incomplete=True))
        workflow = dag_api.workflow_api._workflow
        workflow._prepare_dag(forceall=forceall, ignore_incomplete=True, lock_warn_only=True, nolock=True)
        workflow._build_dag()
        dag = workflow.dag
        planned = list(dag.jobs)
        index = {job: i for i, job in enumerate(planned)}
        jobs = [
            Job(
                rule=job.rule.name,
                wildcards=dict(job.wildcards_dict),
                params=dict(job.params.items()),
                benchmark=str(job.benchmark) if job.benchmark else None,
                needrun=dag.needrun(job),
                runs=not job.rule.norun,
                needs=tuple(sorted(index[dep] for dep in dag.job_dependencies(job) if dep in index)),
                mem_mb=int(job.resources.get("mem_mb", 0) or 0),
                runtime_min=int(job.resources.get("runtime", 0) or 0),
                priority=job.rule.expand_priority(job.wildcards_dict, job.input, job.attempt),
            )
            for job in planned
        ]
        limit = workflow.global_resources.get("mem_mb")
        return dict(workflow.config), jobs, (None if limit is None else int(getattr(limit, "value", limit)))


def make_plan(configfile, table: dict[str, Cost], snakefile="Snakefile", workdir=".") -> Plan:
    config, jobs, limit = dag_jobs(configfile, snakefile, workdir)
    plan = Plan(str(configfile), config, jobs, limit)
    price(plan, table)
    return plan


def estimate(rule: str, params: dict, wildcards: dict, config: dict, table: dict[str, Cost]) -> float:
    """A job's estimated CPU seconds; a rule the table lacks (or lists with another unit) costs the
    :data:`DEFAULT_RULE` row (the median job)."""
    cost = table.get(cost_key(rule, params, wildcards, config))
    if cost is None or cost.unit != unit_of(rule):  # unknown or differently measured: the median job
        return table[DEFAULT_RULE].start_s
    return cost.predict(work_of(rule, params, wildcards, config))


def planned_minutes(cpu_s: float) -> int:
    """The run time a job estimated at ``cpu_s`` CPU seconds asks (``resources: runtime``, sbatch
    --time): :data:`RUNTIME_MARGIN` times the estimate, in minutes, rounded up to a multiple of 5."""
    return 5 * math.ceil(RUNTIME_MARGIN * cpu_s / 60 / 5)


def price(plan: Plan, table: dict[str, Cost]) -> None:
    """Each job's work and estimated CPU seconds (:func:`estimate`), a job with nothing to run nothing."""
    for job in plan.jobs:
        job.work = work_of(job.rule, job.params, job.wildcards, plan.config)
        job.cpu_s = estimate(job.rule, job.params, job.wildcards, plan.config, table) if job.runs else 0.0


# ---- wall time on many cores -------------------------------------------------------


def _waiting(jobs: list[Job]) -> list[list[int]]:
    """For each job, the indices of the jobs that wait for it (``needs`` turned around)."""
    waiting: list[list[int]] = [[] for _ in jobs]
    for i, job in enumerate(jobs):
        for j in job.needs:
            waiting[j].append(i)
    return waiting


def chain_lengths(jobs: list[Job]) -> list[float]:
    """Each job's estimated CPU seconds plus those of the longest chain of jobs that wait for it
    (the job's priority in :func:`schedule`; the largest is the build's critical path)."""
    waiting = _waiting(jobs)
    length: list[float | None] = [None] * len(jobs)
    for start in range(len(jobs)):  # depth first, without recursion: a DAG can be deep
        stack = [start]
        while stack:
            i = stack[-1]
            if length[i] is not None:
                stack.pop()
                continue
            todo = [k for k in waiting[i] if length[k] is None]
            if todo:
                stack.extend(todo)
                continue
            length[i] = jobs[i].cpu_s + max((length[k] for k in waiting[i]), default=0.0)
            stack.pop()
    return [float(v) for v in length]


def critical_chain(jobs: list[Job]) -> list[int]:
    """The indices of the jobs on the longest chain (:func:`chain_lengths`), first job first: from
    the job with the longest chain behind it, each step to the waiting job whose chain is longest
    (ties by DAG order)."""
    if not jobs:
        return []
    length, waiting = chain_lengths(jobs), _waiting(jobs)
    i = max(range(len(jobs)), key=lambda k: (length[k], -k))
    chain = [i]
    while waiting[i]:
        i = max(waiting[i], key=lambda k: (length[k], -k))
        chain.append(i)
    return chain


def chain_line(plan: Plan) -> str:
    """One line: the rules of the longest chain's jobs that cost a minute or more, with their estimates."""
    chain = [plan.jobs[i] for i in critical_chain(plan.jobs)]
    big = [f"{job.rule} {duration(job.cpu_s)}" for job in chain if job.cpu_s >= 60]
    rest = sum(job.cpu_s for job in chain if job.cpu_s < 60)
    if rest:
        big.append(f"{len(chain) - len(big)} shorter jobs {duration(rest)}")
    return f"  longest chain ({len(chain)} jobs): " + " -> ".join(big)


def schedule(jobs: list[Job], cores: int) -> float:
    """The wall time of a list schedule of ``jobs`` on ``cores`` cores, one core per job, each
    taking its estimated CPU seconds: whenever a core is free it takes the ready job with the
    longest chain behind it (:func:`chain_lengths`; ties by DAG order). It lies between the lower
    bound max(critical path, CPU time / cores) and, by Graham's bound for list schedules, CPU time /
    cores + critical path: an estimate of what Snakemake's scheduler, or a cluster with that many
    free cores, achieves. Hand-written: an event simulation of a few thousand jobs needs no library."""
    import heapq

    priority = chain_lengths(jobs)
    left = [len(job.needs) for job in jobs]
    waiting = _waiting(jobs)
    ready = [(-priority[i], i) for i, n in enumerate(left) if n == 0]
    heapq.heapify(ready)
    running: list[tuple[float, int]] = []
    now, done = 0.0, 0
    while done < len(jobs):
        while ready and len(running) < cores:
            _, i = heapq.heappop(ready)
            heapq.heappush(running, (now + jobs[i].cpu_s, i))
        now, i = heapq.heappop(running)
        done += 1
        for k in waiting[i]:
            left[k] -= 1
            if left[k] == 0:
                heapq.heappush(ready, (-priority[k], k))
    return now


def on_cores(plan: Plan, cores: int) -> str:
    """One line: the critical path and a list schedule's wall time of the whole build on ``cores``
    cores (any number: a cluster's), from the jobs' estimated CPU seconds."""
    critical = max(chain_lengths(plan.jobs), default=0.0)
    return (
        f"  whole build on {cores} cores (one per job, a cluster's if more than here): longest chain of jobs "
        f"{duration(critical)}, a list schedule (longest chain first) {duration(schedule(plan.jobs, cores))}"
    )


# ---- the driver of a budget ---------------------------------------------------------


def _lookup(config, key):
    node = config
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _size(value) -> float:
    if isinstance(value, (list, tuple, dict)):
        return float(len(value))
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 1.0
    return abs(float(value)) or 1.0


def driver(plan: Plan, reference: dict | None) -> tuple[str, float, str | None]:
    """``(rule, share of the estimate, config key)``: the rule whose jobs cost most, and of the
    config keys it grows with the one that grew most against ``reference`` (the paper config),
    else the largest."""
    costs = {rule: sum(j.cpu_s for j in jobs) for rule, jobs in plan.by_rule().items()}
    rule = max(costs, key=costs.get)
    share = costs[rule] / (sum(costs.values()) or 1.0)
    work = work_table()
    keys = work[rule].keys if rule in work else ()
    best, best_ratio = None, 0.0
    for key in keys:
        value = _lookup(plan.config, key)
        if value is None:
            continue
        ref = _lookup(reference, key) if reference else None
        ratio = _size(value) / _size(ref) if ref is not None else _size(value)
        if ratio > best_ratio:
            best, best_ratio = key, ratio
    return rule, share, best


# ---- printing -----------------------------------------------------------------------


def duration(seconds: float) -> str:
    """``12 s``, ``7 min 36 s``, ``3 h 5 min``, ``2.5 days``, ``1.2e+06 years``."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    if s < 86400 * 365:
        return f"{seconds / 86400:.1f} days"
    return f"{seconds / (86400 * 365):.3g} years"


def _rules_line(groups: dict[str, list[Job]]) -> str:
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    many = [f"{rule} {len(jobs)}" for rule, jobs in ranked if len(jobs) > 1]
    single = sum(1 for _, jobs in ranked if len(jobs) == 1)
    if single:
        many.append(f"{single} more rule{'s' if single > 1 else ''} of 1 job")
    return ", ".join(many)


def report(plan: Plan, cores: int, available: int | None = None) -> list[str]:
    """A few lines: jobs in all and by rule, jobs that would run now, estimated CPU time, and
    the wall time at ``cores`` (at most ``available``, the machine's) as CPU time / cores."""
    import os

    available = available or os.cpu_count() or 1
    busy = min(cores, available)
    total, now = plan.cpu(), plan.cpu(only_needrun=True)
    needrun = sum(j.needrun for j in plan.jobs)
    costs = {rule: sum(j.cpu_s for j in jobs) for rule, jobs in plan.by_rule().items()}
    top = sorted(costs.items(), key=lambda kv: -kv[1])[:3]
    here = f" ({available} cores here)" if cores > available else ""
    measured = any(j.measured for j in plan.jobs)
    cpu_what = (
        "CPU time of the jobs (measured where given, else estimated)" if measured else "estimated CPU time of the jobs"
    )
    return [
        f"plan of {plan.configfile}: {len(plan.jobs)} jobs in all, {needrun} would run now",
        f"  jobs by rule: {_rules_line(plan.by_rule())}",
        f"  {cpu_what}: {total:,.0f} s ({duration(total)}) for the whole build"
        f" [{', '.join(f'{r} {c:,.0f} s' for r, c in top)}], {now:,.0f} s for the jobs that would run now",
        f"  wall time at --cores {cores}{here}: at least {duration(total / busy)} for the whole build,"
        f" {duration(now / busy)} now (CPU time / cores: a lower bound; jobs that wait for others leave cores idle)",
        *measured_lines(plan),
        on_cores(plan, cores),
        chain_line(plan),
        *memory_lines(plan),
        *runtime_lines(plan),
    ]


def measured_lines(plan: Plan) -> list[str]:
    """One line when some jobs' CPU seconds are measured (:func:`use_measured`): how many, and
    their share of the CPU time."""
    measured = [j for j in plan.jobs if j.measured]
    if not measured:
        return []
    cpu = sum(j.cpu_s for j in measured)
    runs = sum(j.runs for j in plan.jobs)
    return [
        f"  measured: {len(measured)} of the {runs} jobs ran in the given build, {cpu:,.0f} CPU s"
        f" ({cpu / (plan.cpu() or 1.0):.0%} of the total); the others' CPU time is estimated"
    ]


# A cluster job's run time (sbatch --time) should cover its estimate this many times over: nodes
# slower than the calibrating machine, and the estimate's own error (it is a fit per rule).
RUNTIME_MARGIN = 2.0


def runtime_lines(plan: Plan) -> list[str]:
    """For a cluster that enforces run times: the rules whose longest job's estimate, times
    :data:`RUNTIME_MARGIN`, is more than the run time its rule asks, and the ``--set-resources``
    flags that ask enough (in minutes, rounded up to 5); nothing when every rule asks enough."""
    need: dict[str, int] = {}
    for job in plan.jobs:
        if not job.runs or not job.runtime_min:
            continue
        minutes = planned_minutes(job.cpu_s)
        if minutes > job.runtime_min:
            need[job.rule] = max(need.get(job.rule, 0), minutes)
    if not need:
        return []
    flags = " ".join(f"{rule}:runtime={minutes}" for rule, minutes in sorted(need.items()))
    return [
        f"  run time: jobs of {len(need)} rules may take longer than their rules ask (sbatch --time; estimate x"
        f" {RUNTIME_MARGIN:g}); on a cluster that enforces it, add: --set-resources {flags}"
    ]


def memory_lines(plan: Plan) -> list[str]:
    """The largest job's memory against the local build's limit; a warning line when a job asks
    more than the limit (Snakemake then runs it alone, and it may run out of memory)."""
    jobs = [j for j in plan.jobs if j.runs]
    if not jobs:
        return []
    largest = max(jobs, key=lambda j: j.mem_mb)
    rule = largest.rule
    if plan.memory_limit_mb is None:
        return [f"  memory: the largest job asks {largest.mem_mb:,} MB ({rule}); no local limit (not Linux)"]
    over = sorted({j.rule for j in jobs if j.mem_mb > plan.memory_limit_mb})
    lines = [
        f"  memory: the largest job asks {largest.mem_mb:,} MB ({rule}); local jobs run side by side within"
        f" {plan.memory_limit_mb:,} MB (this machine's available memory less 1,000 MB; --resources mem_mb=N sets it)"
    ]
    if over:
        lines.append(
            f"  warning: jobs of {', '.join(over)} ask more than {plan.memory_limit_mb:,} MB: each runs alone and"
            " may run out of memory here; run them on a machine with more, or on the cluster (profiles/slurm)"
        )
    return lines


def over_budget(plan: Plan, reference: dict | None) -> str | None:
    """The refusal line when the whole build's estimate is above :data:`BUDGET_CPU_S`, else None."""
    total = plan.cpu()
    if total <= BUDGET_CPU_S:
        return None
    rule, share, key = driver(plan, reference)
    through = f"{key} = {_lookup(plan.config, key)}" if key else "its job count"
    return (
        f"plan: {plan.configfile}: estimated {total:,.3g} CPU s ({duration(total)}) is over the budget of "
        f"{BUDGET_CPU_S:,} CPU s (one CPU-week), {share:.0%} of it in rule {rule}, driven by {through}; "
        f"fix the config, or run anyway with --allow-budget (make paper ALLOW_BUDGET=1)"
    )


# ---- calibration --------------------------------------------------------------------


def measured_cpu_s(path: Path) -> float | None:
    """A job's CPU seconds from its benchmark file ``path``: a job-server fork's own, read from
    the job's log (exact), else the file's ``cpu_time`` scaled by :func:`job_cpu`; None if the
    file is missing or records no CPU time."""
    import pandas as pd

    from bnstudy.pipeline.jobserver import usage_in_log
    from bnstudy.pipeline.provenance import job_log

    if not path.is_file():
        return None
    row = pd.read_csv(path, sep="\t").iloc[0]
    cpu = pd.to_numeric(row["cpu_time"], errors="coerce")
    recorded = usage_in_log(job_log(path))
    if recorded is None and pd.isna(cpu):
        return None
    return recorded[0] if recorded is not None else job_cpu(float(row["s"]), cpu)


def _benchmark_in(results, job: Job) -> Path | None:
    """Where ``job``'s benchmark file lies under ``results`` (another build's ``results/``)."""
    return None if job.benchmark is None else Path(results) / Path(job.benchmark).relative_to("results")


def benchmarked_jobs(results, jobs: list[Job], config: dict):
    """``(table row, work, cpu_s)`` of every job with a benchmark file under ``results`` (the
    ``results/`` of a build of the same config; a partial build gives the jobs it ran), and
    how many jobs had none."""
    out, missing = [], 0
    for job in jobs:
        path = _benchmark_in(results, job)
        if path is None:
            continue
        cpu_s = measured_cpu_s(path)
        if cpu_s is None:
            missing += 1
            continue
        key = cost_key(job.rule, job.params, job.wildcards, config)
        out.append((key, work_of(job.rule, job.params, job.wildcards, config), cpu_s))
    return out, missing


def use_measured(plan: Plan, results) -> tuple[int, float]:
    """Each job of ``plan`` that a build of the same config ran (its benchmark file under
    ``results``) takes its measured CPU seconds in place of the estimate; returns how many jobs
    did and their CPU seconds. The longest chain and the list schedules then rest on measured
    times wherever there are some."""
    count, total = 0, 0.0
    for job in plan.jobs:
        path = _benchmark_in(results, job) if job.runs else None
        cpu_s = measured_cpu_s(path) if path is not None else None
        if cpu_s is not None:
            job.cpu_s, job.measured = cpu_s, True
            count, total = count + 1, total + cpu_s
    return count, total


def machine() -> str:
    import os
    import platform

    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def calibrate(builds, out=TABLE, snakefile="Snakefile", workdir=".", note="") -> tuple[dict[str, Cost], list[str]]:
    """Refit :data:`TABLE` from the benchmark files of builds, ``[(configfile, results), ...]``
    (each a finished or partial build of its config); returns the table and a line per build."""
    import datetime

    points, lines = [], []
    for configfile, results in builds:
        config, jobs, _ = dag_jobs(configfile, snakefile, workdir, forceall=True)
        found, missing = benchmarked_jobs(results, jobs, config)
        if not found:
            raise PlanError(f"plan: {results}: no benchmark file of a job of {configfile}; calibrate from a build")
        points += found
        lines.append(f"{len(found)} jobs of {configfile} ({results}; {missing} without a benchmark file)")
    table = fit(points)
    date = datetime.datetime.now(datetime.UTC).date().isoformat()
    header = [
        "CPU seconds per job of each rule, for `python -m bnstudy.pipeline.plan` (make plan); written by",
        f"`python -m bnstudy.pipeline.plan calibrate` on {date} on {machine()}, from the benchmark files of",
        *[f"  {line}" for line in lines],
        *([note] if note else []),
        "A job costs start_s + cpu_s_per_unit x work (its unit: bnstudy.pipeline.plan.WORK; unit 'job': its rule's",
        "median job, work 1). CPU s: a job-server fork's own, from the job's log; else the files' cpu_time",
        "scaled by wall time / Snakemake's last sample.",
        "A work-priced rule whose jobs' work spans 2x or more: a least-squares line; else start_s is the",
        "median job of the rules priced per job and cpu_s_per_unit the median of (CPU s - start_s) / work.",
        "Rules of one group (bnstudy.pipeline.plan.WORK's: one script's, or every rule that trains) share one fit over",
        "their jobs pooled; rule:variant",
        "rows are kinds of jobs fitted apart (the network family, mlp or conv; companion probes with and",
        "without batch statistics). Work of a rule that runs the network grows with its multiply-adds per row.",
        "Row '*': the median job, for a rule missing here.",
    ]
    write_table(table, out, header)
    return table, lines


# ---- command line -------------------------------------------------------------------


def _reference_config():
    from bnstudy.base.config import ConfigError, load_file

    try:
        return load_file(ROOT / "config" / "config.yaml")
    except ConfigError:
        return None


def main(argv=None) -> int:
    """Print what a config would build and its estimated CPU time; refuse an estimate over a CPU-week."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bnstudy.pipeline.plan", description=main.__doc__)
    parser.add_argument("command", nargs="?", choices=["show", "calibrate"], default="show")
    parser.add_argument("--configfile", default="config/config.yaml")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--allow-budget", action="store_true", help="report an estimate over the budget, exit 0")
    parser.add_argument("--table", type=Path, default=TABLE)
    parser.add_argument("--results", type=Path, help="calibrate: the results/ of a build of --configfile")
    parser.add_argument(
        "--build",
        action="append",
        default=[],
        metavar="CONFIGFILE=RESULTS",
        help="calibrate: one more build (repeatable), e.g. config/test.yaml=/tmp/tc/results",
    )
    parser.add_argument("--note", default="", help="calibrate: a line for the table's header (the build's load)")
    parser.add_argument(
        "--measured",
        type=Path,
        metavar="RESULTS",
        help="show: the results/ of a build (finished or partial) of --configfile; its jobs' measured CPU time"
        " replaces their estimates",
    )
    args = parser.parse_args(argv)
    if args.cores < 1:
        parser.error("--cores must be at least 1")

    from bnstudy.base.config import ConfigError, load_file, load_schema, validate

    try:  # the config first, read strictly: one line naming the file and the line or key
        validate(load_file(args.configfile), load_schema(ROOT / "workflow" / "schemas" / "config.schema.yaml"))
    except ConfigError as e:
        message = str(e)
        print(message if str(args.configfile) in message else f"{message} [{args.configfile}]", file=sys.stderr)
        return 1
    try:
        if args.command == "calibrate":
            builds = [(args.configfile, args.results)] if args.results else []
            for spec in args.build:
                configfile, sep, results = spec.partition("=")
                if not sep:
                    parser.error(f"--build {spec}: expected CONFIGFILE=RESULTS")
                builds.append((configfile, Path(results)))
            if not builds:
                parser.error("calibrate needs --results (the build of --configfile) or --build CONFIGFILE=RESULTS")
            table, lines = calibrate(builds, args.table, note=args.note)
            print(f"{args.table}: {len(table) - 1} rows from " + "; ".join(lines))
            return 0
        plan = make_plan(args.configfile, read_table(args.table))
        if args.measured is not None:
            if not args.measured.is_dir():
                raise PlanError(f"plan: --measured {args.measured}: not a directory (a build's results/)")
            if use_measured(plan, args.measured)[0] == 0:
                raise PlanError(f"plan: --measured {args.measured}: no benchmark file of a job of {args.configfile}")
    except PlanError as e:
        print(e, file=sys.stderr)
        return 1
    except Exception as e:  # Snakemake could not build the DAG (a missing input, a workflow error)
        first = (str(e).strip().splitlines() or [""])[0]
        print(f"plan: Snakemake could not plan {args.configfile}: {type(e).__name__}: {first}", file=sys.stderr)
        return 1
    print("\n".join(report(plan, args.cores)))
    refusal = over_budget(plan, _reference_config())
    if refusal and not args.allow_budget:
        print(refusal, file=sys.stderr)
        return 1
    if refusal:
        print(f"  over the budget of {BUDGET_CPU_S:,} CPU s (one CPU-week): allowed by --allow-budget")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
