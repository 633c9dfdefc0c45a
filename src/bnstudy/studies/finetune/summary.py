"""The fine-tuning study's summary over seeds: levels and paired differences of the continuous
fine-tuning (:func:`summarise`, :func:`along_means`) and of its arms, conditions and controls
(:func:`summarise_arms`).

Input: the per-network rows of :func:`bnstudy.studies.finetune.science.finetune_cell`. Levels are
means over seeds with Student-t intervals, an accuracy's on the logit scale and a distance's on the
log scale (:func:`level`);
comparisons are paired by seed (:func:`bnstudy.evaluation.paired.paired_interval`: the same
starting network and the same batch stream on both sides).
"""

from __future__ import annotations

import math

from bnstudy.base.designs import FINETUNE_MODES as MODES
from bnstudy.base.designs import FINETUNE_STREAMS as STREAMS
from bnstudy.base.stats import positive_interval, share_interval
from bnstudy.evaluation.families import Family
from bnstudy.evaluation.paired import paired_interval

LEVELS = (
    "inference_after",
    "train_mode_after",
    "recomputed_after",
    "mean_to_exact",
    "var_to_exact",
    "mean_to_start",
    "var_to_start",
)

START = ("inference_before", "train_mode_before", "start_mean_to_exact", "start_var_to_exact")


def _is_share(key: str) -> bool:
    """Whether a measure of :data:`LEVELS` or :data:`START` is an accuracy (else a distance)."""
    return "to_exact" not in key and "to_start" not in key


def level(values, confidence: float, share: bool = True) -> dict:
    """Mean over seeds with its interval: an accuracy's (``share``) on the logit scale
    (:func:`bnstudy.base.stats.share_interval`), a distance's on the log scale
    (:func:`bnstudy.base.stats.positive_interval`), so neither leaves the values' range."""
    interval = share_interval if share else positive_interval
    mean, sd, lo, hi = interval([float(v) for v in values], confidence)
    return {"mean": mean, "sd": sd, "ci": [lo, hi], "seeds": len(values)}


def paired(a, b, confidence: float, bound: float = 1.0) -> dict:
    """``a - b`` seed by seed: ``{"mean", "sd", "ci", "seeds"}`` (``bound``:
    :func:`bnstudy.evaluation.paired.paired_interval`'s)."""
    p = paired_interval(a, b, confidence, bound)
    return {"mean": p["gain"], "sd": p["sd"], "ci": [p["ci_low"], p["ci_high"]], "seeds": p["seeds"]}


def seed_rows(rows: list[dict], what: str) -> list[dict]:
    """``rows`` sorted by seed; a ValueError naming ``what`` if a seed appears twice."""
    rows = sorted(rows, key=lambda r: int(r["seed"]))
    seeds = [int(r["seed"]) for r in rows]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"{what}: a seed appears more than once: {seeds}")
    return rows


def paired_rows(a: list[dict], b: list[dict], key: str, confidence: float, what: str, bound: float = 1.0) -> dict:
    """:func:`paired` of ``key`` between two cells' rows, matched by seed: a ValueError naming
    ``what`` unless both cells hold the same seeds (a seed missing on each side would
    otherwise pair two different networks). ``bound``: :func:`paired`'s."""
    a, b = seed_rows(a, what), seed_rows(b, what)
    sa, sb = [int(r["seed"]) for r in a], [int(r["seed"]) for r in b]
    if sa != sb:
        raise ValueError(f"{what}: the two sides hold different seeds: {sa} and {sb}")
    return paired([r[key] for r in a], [r[key] for r in b], confidence, bound)


def rate_key(lr: float) -> str:
    return f"{float(lr):g}"


def summarise(networks: list[dict], confidence: float) -> dict:
    """``{"start": {...}, "by_rate": {rate: {stream: {mode: {...}, "frozen_minus_live": ...},
    "class_sorted_minus_shuffle": {mode: ...}}}}`` over seeds (see the module's docstring)."""
    rows = sorted(networks, key=lambda r: int(r["seed"]))
    first = {}
    for r in rows:
        start = first.setdefault(int(r["seed"]), r)
        if any(r[m] != start[m] for m in START):  # every run of a seed starts from the same network
            raise ValueError(f"seed {r['seed']}: the start levels differ between its rows")
    out: dict = {
        "start": {m: level([r[m] for r in first.values()], confidence, _is_share(m)) for m in START},
        "by_rate": {},
    }
    for lr in sorted({float(r["lr"]) for r in rows}):
        cell = {}
        get = {(s, m): [r for r in rows if float(r["lr"]) == lr and r["stream"] == s and r["mode"] == m]
               for s in STREAMS for m in MODES}  # fmt: skip
        for s in STREAMS:
            entry: dict = {}
            for m in MODES:
                g = seed_rows(get[(s, m)], f"lr {rate_key(lr)}, {s}, {m}")
                col = lambda k: [r[k] for r in g]  # noqa: E731
                e = {k: level(col(k), confidence, _is_share(k)) for k in LEVELS}
                e["inference_change"] = paired(col("inference_after"), col("inference_before"), confidence)
                e["train_mode_change"] = paired(col("train_mode_after"), col("train_mode_before"), confidence)
                e["recomputed_gain"] = paired(col("recomputed_after"), col("inference_after"), confidence)
                e["recomputed_change"] = paired(col("recomputed_after"), col("inference_before"), confidence)
                entry[m] = e
            live, frozen = get[(s, "live")], get[(s, "frozen")]
            entry["frozen_minus_live"] = {
                k: paired_rows(frozen, live, k, confidence, f"lr {rate_key(lr)}, {s}: frozen - live")
                for k in ("inference_after", "train_mode_after")
            }
            cell[s] = entry
        cell["class_sorted_minus_shuffle"] = {
            m: paired_rows(
                get[("class_sorted", m)],
                get[("shuffle", m)],
                "inference_after",
                confidence,
                f"lr {rate_key(lr)}, {m}: one-class - random",
            )
            for m in MODES
        }
        out["by_rate"][rate_key(lr)] = cell
    return out


def along_means(along: list[dict]) -> list[dict]:
    """Mean over seeds at each step: rows ``lr, stream, mode, step`` and each measure (``math.fsum``)."""
    groups: dict = {}
    for r in along:
        key = (float(r["lr"]), STREAMS.index(r["stream"]), MODES.index(r["mode"]), int(r["step"]))
        groups.setdefault(key, []).append(r)
    measures = ("inference_accuracy", "mean_to_exact", "var_to_exact")
    return [
        {"lr": lr, "stream": STREAMS[s], "mode": MODES[m], "step": k}
        | {v: math.fsum(r[v] for r in g) / len(g) for v in measures}
        for (lr, s, m, k), g in sorted(groups.items())
    ]


def rate_keys(summary: dict) -> list[str]:
    return sorted(summary["by_rate"], key=float)


ARMS = ("live", "frozen", "momentum0", "none", "layernorm")  # bnstudy.studies.finetune.science.ARMS

CONDITIONS = ("same", "shifted")  # bnstudy.studies.finetune.science.CONDITIONS

# paired by seed (the same batch stream): (name, a, b, what) with a and b arms; "change" compares the
# arms' changes (after - before, each on its own network), "after" their accuracies after (the same
# batch-norm network on both sides)
CONTRASTS = (
    ("statistics_update", "live", "momentum0", "after"),  # only the running statistics' update differs
    ("gradient_path", "momentum0", "frozen", "after"),  # batch vs running statistics in the forward/backward
    ("live_minus_frozen", "live", "frozen", "after"),
    ("live_minus_none", "live", "none", "change"),
    ("live_minus_layernorm", "live", "layernorm", "change"),
)

# The part of live batch norm's change specific to batch normalisation: its change minus a control's
# (the contrasts above of what "change"), one family per control, each the config's declared family
# :data:`FAMILY` (its members the control's every rate, input condition and stream cell: the cells
# every claim about the part, the abstract's and the section's, is picked from). Each of its intervals
# is at the family's level (:meth:`bnstudy.evaluation.families.Family.level`): with Bonferroni
# declared, ``1 - (1 - confidence) / cells``, so a claim about any one cell holds with the study's
# confidence whichever cell it is; with none, the study's confidence, each cell exploratory.
SPECIFIC = {"live_minus_none": "none", "live_minus_layernorm": "layernorm"}

FAMILY = "finetune_specific"  # the config's families.finetune_specific, declared for each control


def family_cells(rates) -> int:
    """The members of each control's :data:`FAMILY`: its rate, input condition and stream cells."""
    return len(rates) * len(CONDITIONS) * len(STREAMS)


def summarise_arms(arms: list[dict], confidence: float, family: Family) -> dict:
    """``{rate: {condition: {stream: {"arms": {arm: {...}}, "contrasts": {name: paired}}}}}``.

    Per arm the inference-mode accuracy before and after (levels over seeds), the change
    (after - before, paired by seed) and for batch norm the accuracy with the statistics
    recomputed after; per :data:`CONTRASTS` entry the paired (by seed) difference. The
    batch-norm-specific parts (:data:`SPECIFIC`) also carry ``family`` (the members of their
    control's ``family``, the declared :data:`FAMILY`: :func:`family_cells`) and ``ci_adjusted``, the
    paired interval at the family's level (Bonferroni-adjusted over the cells where the family
    declares it; the interval at ``confidence`` where it declares no adjustment).
    """
    out: dict = {}
    present = [a for a in ARMS if any(r["arm"] == a for r in arms)]
    for a in ("live", "frozen", "momentum0"):
        if a not in present:
            raise ValueError(f"fine-tuning arms: no rows of arm {a}")
    contrasts_present = [c for c in CONTRASTS if c[1] in present and c[2] in present]
    rates = sorted({float(r["lr"]) for r in arms})
    cells = family_cells(rates)
    adjusted = family.level(confidence, cells)
    for lr in rates:
        by_condition = {}
        for c in CONDITIONS:
            by_stream = {}
            for s in STREAMS:
                get = {
                    a: seed_rows(
                        [
                            r
                            for r in arms
                            if float(r["lr"]) == lr and r["condition"] == c and r["stream"] == s and r["arm"] == a
                        ],
                        f"lr {rate_key(lr)}, {c}, {s}, {a}",
                    )  # fmt: skip
                    for a in present
                }
                entry = {}
                for a, g in get.items():
                    if not g:
                        raise ValueError(f"fine-tuning arms: lr {rate_key(lr)}, {c}, {s}: no rows of arm {a}")
                    col = lambda k: [r[k] for r in g]  # noqa: E731
                    e = {
                        "before": level(col("inference_before"), confidence),
                        "after": level(col("inference_after"), confidence),
                        "change": paired(col("inference_after"), col("inference_before"), confidence),
                    }
                    if a in ("live", "frozen", "momentum0"):
                        e["recomputed"] = level(col("recomputed_after"), confidence)
                    entry[a] = e
                contrasts = {}
                for name, a, b, what in contrasts_present:
                    if what == "after":
                        contrasts[name] = paired_rows(get[a], get[b], "inference_after", confidence, name)
                    else:
                        ca = [{"seed": r["seed"], "d": r["inference_after"] - r["inference_before"]} for r in get[a]]
                        cb = [{"seed": r["seed"], "d": r["inference_after"] - r["inference_before"]} for r in get[b]]
                        contrasts[name] = paired_rows(ca, cb, "d", confidence, name, bound=2.0)  # two changes
                        if name in SPECIFIC:
                            adj = paired_rows(ca, cb, "d", adjusted, name, bound=2.0)
                            contrasts[name] |= {"family": cells, "ci_adjusted": adj["ci"]}
                by_stream[s] = {"arms": entry, "contrasts": contrasts}
            by_condition[c] = by_stream
        out[rate_key(lr)] = by_condition
    return out


def specific_in(cell: dict) -> list[str]:
    """The batch-norm-specific contrasts of one rate and condition (``cell``: ``{stream: entry}``), in
    :data:`SPECIFIC`'s order: one per control the grid trains."""
    return [k for k in SPECIFIC if all("ci_adjusted" in cell[s]["contrasts"].get(k, {}) for s in STREAMS)]


def families(arms: dict, confidence: float, family: Family) -> dict:
    """The summary's ``families`` key: ``{FAMILY: family.record(confidence, cells)}`` where the arms'
    summary (:func:`summarise_arms`) has a batch-norm-specific part, else empty (no control trained,
    no such family formed)."""
    rates = sorted(arms, key=float)
    if not specific_in(arms[rates[0]]["same"]):
        return {}
    return {FAMILY: family.record(confidence, family_cells(rates))}


def present_arms(arms: dict) -> list[str]:
    first = next(iter(next(iter(arms.values())).values()))
    return list(next(iter(first.values()))["arms"])
