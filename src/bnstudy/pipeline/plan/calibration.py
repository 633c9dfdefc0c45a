"""The cost table refitted from the ``benchmark:`` files of finished or partial builds
(:func:`calibrate`: ``python -m bnstudy.pipeline.plan calibrate``), and a build's measured CPU
seconds in place of a plan's estimates (:func:`use_measured`: ``make plan MEASURED=DIR``)."""

from __future__ import annotations

from pathlib import Path

from bnstudy.pipeline.plan.costs import TABLE, Cost, PlanError, fit, job_cpu, write_table
from bnstudy.pipeline.plan.jobs import Job, Plan, dag_jobs
from bnstudy.pipeline.plan.work import cost_key, work_of


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
