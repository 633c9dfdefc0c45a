"""The cost table (:data:`TABLE`, ``workflow/resources/cpu_seconds.tsv``): per rule, a job costs
``start_s + cpu_s_per_unit * work`` CPU seconds (:class:`Cost`), fitted to a build's benchmarked
jobs (:func:`fit`; a job's CPU seconds from its benchmark file, :func:`job_cpu`), read and written
as TSV (:func:`read_table`, :func:`write_table`)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path

from bnstudy.pipeline.plan.work import JOB_UNIT, group_of, unit_of

ROOT = Path(__file__).resolve().parents[4]
TABLE = ROOT / "workflow" / "resources" / "cpu_seconds.tsv"
# Snakemake samples a benchmarked job's CPU time every 0.5 s for its first 15 s, then
# every 30 s (snakemake.benchmark); what a job spends after its last sample is not in
# the file. :func:`job_cpu` scales the recorded CPU time by wall time / last sample.
SAMPLE_SHORT, SAMPLE_SHORT_UNTIL, SAMPLE_LONG = 0.5, 15.0, 30.0
COLUMNS = ["rule", "unit", "jobs", "cpu_s_median", "start_s", "cpu_s_per_unit"]
DEFAULT_RULE = "*"  # the table's row for a rule it does not list: the median job of the build


class PlanError(Exception):
    """A one-line refusal (bad table, missing benchmark files)."""


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
