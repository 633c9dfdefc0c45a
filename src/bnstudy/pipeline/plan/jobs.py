"""The jobs a config would run, as Snakemake plans them (:func:`dag_jobs`: the default target's
DAG, built in this process as ``snakemake -n`` builds it), each priced from the cost table
(:func:`price`, :func:`estimate`), and the run time a cluster job asks (:func:`planned_minutes`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from bnstudy.pipeline.plan.costs import DEFAULT_RULE, Cost
from bnstudy.pipeline.plan.work import cost_key, unit_of, work_of


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


# A cluster job's run time (sbatch --time) should cover its estimate this many times over: nodes
# slower than the calibrating machine, and the estimate's own error (it is a fit per rule).
RUNTIME_MARGIN = 2.0


def planned_minutes(cpu_s: float) -> int:
    """The run time a job estimated at ``cpu_s`` CPU seconds asks (``resources: runtime``, sbatch
    --time): :data:`RUNTIME_MARGIN` times the estimate, in minutes, rounded up to a multiple of 5."""
    return 5 * math.ceil(RUNTIME_MARGIN * cpu_s / 60 / 5)


def price(plan: Plan, table: dict[str, Cost]) -> None:
    """Each job's work and estimated CPU seconds (:func:`estimate`), a job with nothing to run nothing."""
    for job in plan.jobs:
        job.work = work_of(job.rule, job.params, job.wildcards, plan.config)
        job.cpu_s = estimate(job.rule, job.params, job.wildcards, plan.config, table) if job.runs else 0.0
