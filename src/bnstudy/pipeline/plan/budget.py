"""The budget of a build: an estimate above :data:`BUDGET_CPU_S` (one CPU-week) is refused in one
line (:func:`over_budget`) naming the rule that costs most and the config key that drives it
(:func:`driver`)."""

from __future__ import annotations

from bnstudy.pipeline.plan.jobs import Plan
from bnstudy.pipeline.plan.printing import duration
from bnstudy.pipeline.plan.work import work_table

BUDGET_CPU_S = 604_800  # one CPU-week


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
