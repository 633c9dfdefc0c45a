"""Studies 3 and 5's rules in the cost model (bnstudy.pipeline.plan): the running statistics' passes; the
population, its self-checks and the sorted networks' evaluation priced per job (jobs of seconds)."""

from __future__ import annotations

from bnstudy.pipeline.plan import PER_JOB, Work


def _running_stats(p, wc, config):
    return len(p["batch_sizes"]) * len(p["keeps"]) * (1 + p["shuffles"])


WORK = {
    "population": PER_JOB,
    "running_stats": Work(
        "passes (batch sizes x keep-factors x (1 + shuffles))",
        _running_stats,
        ("running_stats.shuffles", "running_stats.keeps", "running_stats.batch_sizes"),
    ),
    "running_stats_selfchecks": PER_JOB,
    "evaluate_sorted": PER_JOB,
}
