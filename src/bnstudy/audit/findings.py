"""What the audit's numbers say, in plain words: one finding per topic, each ok, a note or a warning.

:func:`findings` reads an :class:`bnstudy.audit.core.AuditResult`: whether labels depend on
their companions (random batches, the serving batch), on one-group batches, whether each layer's
running statistics are stale (beyond :data:`STALE`, or its noise band) or never updated, and what
recomputing them gains in accuracy. The report (:mod:`bnstudy.audit.report`) prints them first.
"""

from __future__ import annotations

import math

SEVERITY = ("ok", "note", "warn")
STALE = 0.1  # distance above which running statistics are called stale (about a 10% error)


def pct(v) -> str:
    return "n/a" if v is None or v != v else f"{100 * v:.1f}%"


def interval(r) -> str:
    return "" if r["ci_low"] != r["ci_low"] else f" [{pct(r['ci_low'])}, {pct(r['ci_high'])}]"


def _level(rate) -> str:
    return "ok" if rate == 0 else "note" if rate < 0.01 else "warn"


def _ever(share: float) -> str:
    """How many sampled examples change with some companion, in words where a percentage would
    print a degenerate ``100.0%`` or ``0.0%`` for all or none."""
    if share == 1:
        return "every one of them changes"
    if share == 0:
        return "none of them changes"
    return f"{pct(share)} of them change"


def findings(result) -> list[dict]:
    """One dict per finding: ``topic``, ``level`` (ok, note, warn) and ``text``."""
    return _companion_findings(result) + _group_findings(result) + _layer_findings(result) + _accuracy_findings(result)


def _companion_findings(result) -> list[dict]:
    """No batch statistics at all; the serving batch; random batches."""
    out = []
    s = result.settings
    conf = f"{100 * s['confidence']:g}% interval over examples"
    random = sorted((r for r in result.flips if r["design"] == "random"), key=lambda r: r["batch_size"])
    batch_kinds = sorted({n["kind"] for n in result.normalisers if n["batch_statistics"]})
    if result.batch_free:
        kinds = ", ".join(sorted({n["kind"] for n in result.normalisers}))
        measured = sum(r["flips"] for r in result.flips)
        probes = sum(r["probes"] for r in result.flips)
        out.append(
            {
                "topic": "companions",
                "level": "ok" if measured == 0 else "warn",
                "text": f"No layer reads batch statistics ({kinds}: each example is normalised by itself), so no "
                f"label can depend on its companions; measured: {measured} of {probes} labels changed.",
            }
        )
    serving = s.get("serving_batch")
    out += _headline(result, conf)
    if serving and result.flip(serving) is not None and not result.batch_free:
        r = result.flip(serving)
        out.append(
            {
                "topic": "serving",
                "level": _level(r["flip_rate"]),
                "text": f"At your serving batch of {serving}, {pct(r['flip_rate'])} of labels depend on the "
                f"companions{interval(r)} ({conf}), if the model is run in training mode.",
            }
        )
    if random and not result.batch_free:
        parts = ", ".join(f"{pct(r['flip_rate'])} at b={r['batch_size']}" for r in random)
        worst = max(random, key=lambda r: r["flip_rate"])
        out.append(
            {
                "topic": "random",
                "level": _level(worst["flip_rate"]),
                "text": f"In random batches, the label changes between inference and training mode for {parts} "
                f"({', '.join(batch_kinds)}); largest at b={worst['batch_size']}{interval(worst)}.",
            }
        )
    return out


def _headline(result, conf: str) -> list[dict]:
    """With group ids and a serving batch: the flip rate in batches of one group at the serving batch,
    the batches a server of grouped traffic (one customer, source or day at a time) really sees."""
    s = result.settings
    serving = s.get("serving_batch")
    if not (s.get("groups") and serving) or result.batch_free:
        return []
    r = result.flip(serving, "group")
    if r is None:
        return [
            {
                "topic": "serving_groups",
                "level": "note",
                "text": f"No group holds {serving} rows: one-group batches of your serving batch were not "
                "measured (the notes say how many rows each size left out).",
            }
        ]
    base = result.flip(serving)
    against = f", against {pct(base['flip_rate'])} in random batches" if base else ""
    level = _level(r["flip_rate"])
    advice = (
        "No label changed: grouped batches leave this model's labels alone at that size."
        if level == "ok"
        else "Serve in evaluation mode (model.eval(), and a test that says so), never with the statistics of "
        "a batch of one group; if batches must be normalised together, mix groups within each batch, "
        "or use group or layer norm, which normalise each example by itself."
    )
    return [
        {
            "topic": "serving_groups",
            "level": level,
            "text": f"At your serving batch of {serving} with every batch from one group (one customer, source "
            f"or day, as your group ids say), {pct(r['flip_rate'])} of labels depend on the companions"
            f"{interval(r)} ({conf}){against}, if the model is run in training mode. {advice}",
        }
    ]


def _group_findings(result) -> list[dict]:
    """Batches of one label or one group; the exact design at b = 2."""
    out = []
    s = result.settings
    serving = s.get("serving_batch")
    for design, what in (("label", "one label"), ("group", "one group")):
        rows = sorted((r for r in result.flips if r["design"] == design), key=lambda r: r["batch_size"])
        if not rows or result.batch_free or (design == "group" and result.flip(serving or 0, "group")):
            continue  # the one-group rate at the serving batch is the headline
        at_serving = [r for r in rows if r["batch_size"] == serving]
        r = at_serving[0] if at_serving else max(rows, key=lambda r: r["flip_rate"])
        base = result.flip(r["batch_size"])
        against = f", against {pct(base['flip_rate'])} in random batches of that size" if base else ""
        out.append(
            {
                "topic": design,
                "level": _level(r["flip_rate"]),
                "text": f"In batches of {what} at b={r['batch_size']} (what sorted or grouped traffic does), "
                f"{pct(r['flip_rate'])}{interval(r)} of labels change{against}.",
            }
        )
    ex = result.flip(2, "exact")
    if ex is not None and not result.batch_free:
        out.append(
            {
                "topic": "exact",
                "level": _level(ex["flip_rate"]),
                "text": f"Exactly, at b=2 with every one of the {s['exact_pool'] - 1} other rows as companion: "
                f"{pct(ex['flip_rate'])} of labels change for {ex['examples']} sampled examples"
                f"{interval(ex)}; {_ever(ex['ever_flipped'])} with at least one companion.",
            }
        )
    return out


def _layer_findings(result) -> list[dict]:
    """Running statistics never updated, or stale for the data (or all within bounds)."""
    out = []
    bn = [r for r in result.layers if r["batch_statistics"]]
    never = [r for r in bn if r.get("never_updated")]
    if never:
        names = ", ".join(r["name"] for r in never[:5]) + (", ..." if len(never) > 5 else "")
        out.append(
            {
                "topic": "never_updated",
                "level": "warn",
                "text": f"Running statistics never updated in {len(never)} of {len(bn)} batch-norm layers ({names}): "
                "0 updates or still mean 0 and variance 1 as initialised, so inference mode normalises with the "
                "wrong statistics. Recompute them.",
            }
        )
    checked = [r for r in bn if r.get("mean_distance") is not None]
    rows = checked[0].get("statistics_rows") if checked else None
    banded = [r for r in checked if r.get("mean_noise") is not None]
    beyond = f" beyond the sampling noise of the data's {rows} rows" if banded else ""
    allowing = f", once the sampling noise of its {rows} rows is allowed for" if banded else ""
    stale = sorted(
        (r for r in checked if r["stale"] and not r["never_updated"]),
        key=lambda r: -max(r["mean_distance"], r["var_distance"]),
    )
    if stale:
        worst = "; ".join(
            f"{r['name']}: mean off by {r['mean_distance']:.2f} standard deviations, variance by a factor "
            f"{math.exp(r['var_distance']):.2f}"
            for r in stale[:3]
        )
        updates = sorted({r["updates"] for r in stale if r["updates"] is not None})
        carried = f"; they carry {', '.join(map(str, updates[:3]))}{'...' if len(updates) > 3 else ''} updates"
        carried = carried if updates else ""
        out.append(
            {
                "topic": "stale",
                "level": "warn",
                "text": f"Running statistics are stale for this data in {len(stale)} of {len(bn)} batch-norm layers "
                f"(RMS distance from the exact statistics above {STALE:g}{beyond}; worst: {worst}){carried}.",
            }
        )
    elif checked and not never:
        worst = max(checked, key=lambda r: max(r["mean_distance"], r["var_distance"]))
        out.append(
            {
                "topic": "stale",
                "level": "ok",
                "text": f"All {len(checked)} batch-norm layers hold running statistics within {STALE:g} of the exact "
                f"statistics of the data{allowing} (largest: {worst['name']}, mean {worst['mean_distance']:.3f}, "
                f"variance {worst['var_distance']:.3f}).",
            }
        )
    noisy = [r for r in banded if max(r["mean_noise"], r["var_noise"]) > STALE]
    if noisy:
        top = max(noisy, key=lambda r: max(r["mean_noise"], r["var_noise"]))
        out.append(
            {
                "topic": "noise",
                "level": "note",
                "text": f"With {rows} rows the exact statistics are themselves uncertain by up to "
                f"{max(top['mean_noise'], top['var_noise']):.2f} ({top['name']}, 95% band): staleness below that "
                "cannot be told from sampling noise. More rows (--stats-data) narrow the band.",
            }
        )
    return out


def _accuracy_findings(result) -> list[dict]:
    """Accuracy with the stored running statistics, and with recomputed ones."""
    out = []
    a = result.accuracy
    if a is not None and a.get("recomputed") is not None:
        gain = 100 * a["gain"]
        ci = (
            ""
            if a["gain_ci_low"] != a["gain_ci_low"]
            else f" [{100 * a['gain_ci_low']:+.1f}, {100 * a['gain_ci_high']:+.1f}]"
        )
        level = "warn" if a["gain_ci_low"] == a["gain_ci_low"] and a["gain_ci_low"] > 0 else "ok"
        out.append(
            {
                "topic": "accuracy",
                "level": level,
                "text": f"Accuracy with the stored running statistics {pct(a['running'])}; with statistics "
                f"recomputed on the {a['statistics_data']} ({a['statistics_rows']} rows, PreciseBN-style) "
                f"{pct(a['recomputed'])}: {gain:+.1f} points{ci}; {a['changed_labels']} labels change.",
            }
        )
    elif a is not None:
        out.append({"topic": "accuracy", "level": "ok", "text": f"Inference-mode accuracy {pct(a['running'])}."})
    return out
