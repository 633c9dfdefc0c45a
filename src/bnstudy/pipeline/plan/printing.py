"""The lines ``make plan`` prints (:func:`report`): the jobs in all and by rule, their CPU time and
the wall time at ``--cores``, the longest chain and a list schedule on those cores, the jobs'
memory against a local build's limit, and the run times a cluster should be asked for;
:func:`duration` says seconds in words."""

from __future__ import annotations

from bnstudy.pipeline.plan.chains import chain_lengths, critical_chain, schedule
from bnstudy.pipeline.plan.jobs import RUNTIME_MARGIN, Job, Plan, planned_minutes


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


def chain_line(plan: Plan) -> str:
    """One line: the rules of the longest chain's jobs that cost a minute or more, with their estimates."""
    chain = [plan.jobs[i] for i in critical_chain(plan.jobs)]
    big = [f"{job.rule} {duration(job.cpu_s)}" for job in chain if job.cpu_s >= 60]
    rest = sum(job.cpu_s for job in chain if job.cpu_s < 60)
    if rest:
        big.append(f"{len(chain) - len(big)} shorter jobs {duration(rest)}")
    return f"  longest chain ({len(chain)} jobs): " + " -> ".join(big)


def on_cores(plan: Plan, cores: int) -> str:
    """One line: the critical path and a list schedule's wall time of the whole build on ``cores``
    cores (any number: a cluster's), from the jobs' estimated CPU seconds."""
    critical = max(chain_lengths(plan.jobs), default=0.0)
    return (
        f"  whole build on {cores} cores (one per job, a cluster's if more than here): longest chain of jobs "
        f"{duration(critical)}, a list schedule (longest chain first) {duration(schedule(plan.jobs, cores))}"
    )


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
