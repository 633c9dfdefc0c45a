"""The audit's probes: which batches each design draws, and the flip rates their training-mode labels give.

:func:`probe_plans` lays out every probe of every design and batch size (random companions, one
label, one group, the exact pairs at ``b = 2``: :mod:`bnstudy.audit.designs`), and
:func:`probe_all` runs them through the model in training mode and compares each probed example's
labels with its inference-mode label: per design and size the flip rate (each example's share of
flipped probes, averaged over examples) with its bootstrap interval, and each example's counts.
"""

from __future__ import annotations

import time

import numpy as np

from . import designs
from .engine import AuditError, Engine
from .intervals import MIN_STRATUM, mean_share, seeded_interval, strata_or_none
from .options import Options
from .progress import Progress


def probe_plans(n: int, sizes, y, groups, opts: Options, notes: list) -> tuple[list, np.ndarray | None]:
    """The probe plans ``(design, b, batches, counted)`` and the exact examples (or None);
    what could not be probed goes to ``notes``."""
    plans = []
    all_rows = np.arange(n)
    for b in sizes:
        if "random" in opts.designs_wanted:
            if n >= b:
                rng = designs.generator(opts.seed, "random", b)
                plans.append(("random", b, *designs.rounds(all_rows, b, opts.probes, rng)))
            else:
                notes.append(f"random batches of {b}: only {n} rows")
        for design, ids in (("label", y), ("group", groups)):
            if ids is not None and design in opts.designs_wanted:
                plans += _one_group_plan(design, ids, b, opts, notes)
    exact = _exact_examples(n, y, opts, notes)
    if exact is not None:
        plans.append(("exact", 2, *designs.exact_pairs(exact, all_rows)))
    return plans, exact


def _one_group_plan(design: str, ids, b: int, opts: Options, notes: list) -> list:
    """Batches of ``b`` rows of one label or group id each (as a list of at most one plan)."""
    rng = designs.generator(opts.seed, design, b)
    parts, marks, small = [], [], 0
    for g in np.unique(ids):
        pool = np.flatnonzero(ids == g)
        if len(pool) < b:
            small += len(pool)
            continue
        bt, ct = designs.rounds(pool, b, opts.probes, rng)
        parts.append(bt)
        marks.append(ct)
    if small:
        notes.append(f"{design} batches of {b}: {small} rows in {design}s of fewer than {b} rows not probed")
    return [(design, b, np.concatenate(parts), np.concatenate(marks))] if parts else []


def _exact_examples(n: int, y, opts: Options, notes: list):
    """The examples enumerated exactly at ``b = 2``: the given ones, or a stratified sample of the
    asked size that fits the budget (None: no exact design)."""
    if opts.exact_examples is not None:
        exact = np.unique(np.asarray(opts.exact_examples, np.int64))
        if len(exact) == 0 or exact[0] < 0 or exact[-1] >= n:
            raise AuditError(f"exact examples must be row indices in [0, {n}), got {len(exact)} values")
        return exact
    if "exact" not in opts.designs_wanted or opts.exact_sample <= 0:
        return None
    budget, sample = opts.exact_budget, min(opts.exact_sample, n)
    fit = max(0, min(int(sample), budget // (2 * (n - 1))))
    if fit < 1:
        notes.append(f"exact b = 2: {n - 1} pairs per example exceed the budget of {budget} rows")
        return None
    if fit < sample:
        notes.append(f"exact b = 2: {fit} examples (not {sample}) fit the budget of {budget} rows")
    if opts.exact_sample > n:
        notes.append(f"exact b = 2: all {n} rows (fewer than the {opts.exact_sample} asked for)")
    return designs.stratified_sample(n, fit, y, opts.seed)


def probe_all(engine: Engine, plans, inference, y, opts: Options, notes: list):
    """Every plan probed: ``(flip rows, per-example rows, timing)``."""
    total = sum(p[2].size for p in plans)
    bar = Progress(total, "rows", enabled=opts.progress)
    per_example, flips_rows, unstratified = [], [], []
    counted_total = 0
    probe_start = time.perf_counter()
    for design, b, batches, counted in plans:
        labels = engine.train_labels(batches, progress=bar)
        row = _probe_plan((design, b, batches, counted), labels, inference, y, opts, per_example, unstratified)
        flips_rows.append(row)
        counted_total += int(counted.sum())
    bar.close()
    if unstratified:
        notes.append(
            f"intervals resampled without strata where a label holds fewer than {MIN_STRATUM} of the examples "
            f"(one or two examples of a label cannot show its spread): {', '.join(unstratified)}"
        )
    probe_seconds = time.perf_counter() - probe_start
    timing = {
        "probe_seconds": probe_seconds,
        "probes": counted_total,
        "rows_forwarded": int(total),
        "probes_per_second": counted_total / probe_seconds if probe_seconds > 0 else float("nan"),
    }
    return flips_rows, per_example, timing


def _probe_plan(plan, labels, inference, y, opts: Options, per_example: list, unstratified: list) -> dict:
    """One plan's flip row from its training-mode ``labels``; its examples' rows go to ``per_example``."""
    design, b, batches, counted = plan
    n = len(inference)
    rows = batches[counted]
    flipped = (labels[counted] != inference[rows]).astype(np.int64)
    counts = np.bincount(rows, minlength=n)
    flips = np.bincount(rows, weights=flipped, minlength=n).astype(np.int64)
    correct = None if y is None else np.bincount(rows, weights=labels[counted] == y[rows], minlength=n)
    probed = np.flatnonzero(counts)
    share = flips[probed] / counts[probed]
    for e in probed:
        per_example.append(
            {"design": design, "batch_size": b, "example": int(e), "probes": int(counts[e]), "flips": int(flips[e])}
            | ({} if correct is None else {"correct": int(correct[e])})
        )
    strata = None if y is None else y[probed]
    code = designs.DESIGN_CODES[design]
    lo, hi = seeded_interval(share, strata, opts, code, b, unstratified, f"{design} b={b}")
    ever = (flips[probed] > 0).astype(np.float64)
    row = {
        "design": design,
        "batch_size": int(b),
        "examples": len(probed),
        "probes": int(counts.sum()),
        "probes_per_example": int(counts[probed].max()) if len(probed) else 0,
        "flips": int(flips.sum()),
        "flip_rate": mean_share(share),
        "ci_low": lo,
        "ci_high": hi,
        "ci_stratified": strata_or_none(strata) is not None,
        "ever_flipped": mean_share(ever),
    }
    if correct is not None:
        row["train_mode_accuracy"] = mean_share(correct[probed] / counts[probed])
    return row
