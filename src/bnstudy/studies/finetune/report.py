"""The fine-tuning study's summary over seeds, its macros and its table.

Input: the per-network rows of :func:`bnstudy.studies.finetune.science.finetune_cell`. Levels are
means over seeds with Student-t intervals, an accuracy's on the logit scale and a distance's on the
log scale (:func:`level`);
comparisons are paired by seed (:func:`bnstudy.evaluation.paired.paired_interval`: the same
starting network and the same batch stream on both sides). Accuracies print as
percentages, differences as signed percentage points, distances with two decimals.
"""

from __future__ import annotations

import math

from bnstudy.base.designs import FINETUNE_MODES as MODES
from bnstudy.base.designs import FINETUNE_STREAM_WORDS
from bnstudy.base.designs import FINETUNE_STREAMS as STREAMS
from bnstudy.base.stats import adjusted_confidence, positive_interval, share_interval
from bnstudy.evaluation.paired import paired_interval
from bnstudy.paper import latex
from bnstudy.paper.latex import math_points as points
from bnstudy.paper.latex import math_points_interval as interval_points
from bnstudy.paper.latex import power_of_ten, verdict, words
from bnstudy.paper.network_prose import number_word

DIGITS = 1  # decimals of percentages and percentage points
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
STREAM_WORDS = FINETUNE_STREAM_WORDS
TABLE_WORDS = {"shuffle": "random", "class_sorted": "one-class"}


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


# ---- paper parts -------------------------------------------------------------------------


def percent(value: float) -> str:
    """An accuracy in percent; one that is not 0 or 1 never as ``0.0\\%`` or ``100.0\\%``
    (:func:`bnstudy.paper.latex.points`)."""
    text = latex.points(value, DIGITS)
    return text if text == "n/a" else text + "\\%"


def distance(value: float) -> str:
    return latex.fmt(value, 2)


def _rates(summary: dict) -> list[str]:
    return sorted(summary["by_rate"], key=float)


def macros(summary: dict, settings: dict) -> dict[str, str]:
    """``{name: TeX}``: the settings, the starting networks, and per rate (``RateOne``, ...,
    in increasing order), stream and mode every level and paired difference of the section."""
    rates = _rates(summary)
    m = {
        "finetuneSourceBatchSize": latex.fmt(int(settings["source_batch_size"])),
        "finetuneBatchSize": latex.fmt(int(settings["batch_size"])),
        "finetuneSteps": latex.fmt(int(settings["steps"])),
        "finetuneEvery": latex.fmt(int(settings["every"])),
        "finetuneRows": latex.fmt(int(settings["steps"]) * int(settings["batch_size"])),
        "finetuneTrainRows": latex.fmt(int(settings["train_rows"])),
        "finetuneMomentum": f"{settings['momentum']:g}",
        "finetuneConfidence": latex.fmt(settings["confidence"], 0, percent=True),
        "finetuneRateCount": latex.fmt(len(rates)),
        "finetuneSeeds": latex.fmt(int(summary["start"]["inference_before"]["seeds"])),
        # weight the trained running statistics keep after a live run: (1 - momentum) ** steps, as a
        # product in order (libm's pow may differ in the last bit between CPUs)
        "finetuneTrainedWeight": power_of_ten(math.prod([1.0 - settings["momentum"]] * int(settings["steps"]))),
        "finetuneRates": words([power_of_ten(float(r)) for r in rates]),
    }
    start = summary["start"]
    m["finetuneStartInference"] = percent(start["inference_before"]["mean"])
    m["finetuneStartTrainMode"] = percent(start["train_mode_before"]["mean"])
    m["finetuneStartMeanToExact"] = distance(start["start_mean_to_exact"]["mean"])
    m["finetuneStartVarToExact"] = distance(start["start_var_to_exact"]["mean"])
    for i, rate in enumerate(rates, start=1):
        cell = summary["by_rate"][rate]
        m[latex.macro_name("finetune", "rate", i)] = power_of_ten(float(rate))
        for s in STREAMS:
            for mode in MODES:
                e = cell[s][mode]
                name = lambda *parts: latex.macro_name("finetune", "rate", i, s, mode, *parts)  # noqa: E731
                m[name("after")] = percent(e["inference_after"]["mean"])
                m[name("change")] = points(e["inference_change"]["mean"])
                m[name("change", "ci")] = interval_points(e["inference_change"])
                m[name("change", "verdict")] = verdict(*e["inference_change"]["ci"])
                m[name("train", "mode")] = percent(e["train_mode_after"]["mean"])
                m[name("recomputed")] = percent(e["recomputed_after"]["mean"])
                m[name("recomputed", "gain")] = points(e["recomputed_gain"]["mean"])
                m[name("recomputed", "gain", "ci")] = interval_points(e["recomputed_gain"])
                m[name("recomputed", "gain", "verdict")] = verdict(*e["recomputed_gain"]["ci"])
                for k in ("mean_to_exact", "var_to_exact", "mean_to_start", "var_to_start"):
                    m[name(k)] = distance(e[k]["mean"])
            m[latex.macro_name("finetune", "rate", i, s, "recompute", "sentence")] = recompute_sentence(
                cell[s], percent(start["inference_before"]["mean"])
            )
            d = cell[s]["frozen_minus_live"]["inference_after"]
            m[latex.macro_name("finetune", "rate", i, s, "frozen", "minus", "live")] = points(d["mean"])
            m[latex.macro_name("finetune", "rate", i, s, "frozen", "minus", "live", "ci")] = interval_points(d)
            m[latex.macro_name("finetune", "rate", i, s, "frozen", "minus", "live", "verdict")] = verdict(*d["ci"])
        for mode in MODES:
            d = cell["class_sorted_minus_shuffle"][mode]
            m[latex.macro_name("finetune", "rate", i, mode, "sorted", "minus", "shuffle")] = points(d["mean"])
            m[latex.macro_name("finetune", "rate", i, mode, "sorted", "minus", "shuffle", "ci")] = interval_points(d)
            m[latex.macro_name("finetune", "rate", i, mode, "sorted", "minus", "shuffle", "verdict")] = verdict(
                *d["ci"]
            )
        m[latex.macro_name("finetune", "rate", i, "live", "change", "verdicts")] = latex.two_verdicts(
            cell["shuffle"]["live"]["inference_change"]["ci"], cell["class_sorted"]["live"]["inference_change"]["ci"]
        )
        m[latex.macro_name("finetune", "rate", i, "frozen", "minus", "live", "verdicts")] = latex.two_verdicts(
            cell["shuffle"]["frozen_minus_live"]["inference_after"]["ci"],
            cell["class_sorted"]["frozen_minus_live"]["inference_after"]["ci"],
        )
    return m | sentence_macros(summary)


def sentence_macros(summary: dict) -> dict[str, str]:
    """The section's generated claims: what one-class batches cost live against random ones
    (every rate) and what recomputing recovered at the smallest rate (random batches)."""
    rates = _rates(summary)
    by = summary["by_rate"]
    m = {
        "finetuneSortedCostSentence": skew_cost_sentence(
            [power_of_ten(float(r)) for r in rates], [by[r]["class_sorted_minus_shuffle"]["live"] for r in rates]
        ),
        "finetuneRateOneRecoverySentence": recovery_sentence(by[rates[0]]["shuffle"]["live"]),
    }
    for i, r in enumerate(rates, start=1):
        m[latex.macro_name("finetune rate", i, "remedy sentence")] = remedy_sentence(by[r])
    return m


def recompute_sentence(entry: dict, start: str) -> str:
    """What recomputing the statistics did for the live and the frozen networks of one rate and
    stream, generated from the paired intervals so that it claims no more than they show: the
    accuracy of each mode with the statistics recomputed and its change against the fine-tuned
    network (recomputed minus after), with the intervals' verdicts; "helps both modes" only
    when both lie wholly above zero. Then, against the starting accuracy ``start``
    (recomputed minus before, paired): modes whose interval lies wholly below zero stay below
    the start, a loss that recomputed statistics cannot remove (so, when both do, one in the
    weights); modes whose interval lies wholly above zero lie above it; the rest are not told
    apart from it."""
    live, frozen = entry["live"], entry["frozen"]
    gains = [live["recomputed_gain"], frozen["recomputed_gain"]]
    verdicts = [verdict(*g["ci"]) for g in gains]
    if verdicts[0] == verdicts[1]:
        said = f"both intervals {verdict(*gains[0]['ci'], plural=True)}"
    else:
        said = f"the live interval {verdicts[0]}, the frozen one {verdicts[1]}"
    helps = all(g["ci"][0] > 0 for g in gains)
    text = "recomputing the statistics helps both modes: it gives " if helps else "recomputing the statistics gives "
    text += (
        f"{percent(live['recomputed_after']['mean'])} for the live networks and "
        f"{percent(frozen['recomputed_after']['mean'])} for the frozen ones, changes of "
        f"{points(gains[0]['mean'])} {interval_points(gains[0])} and {points(gains[1]['mean'])} "
        f"{interval_points(gains[1])} points against the fine-tuned networks ({said})"
    )
    side = {}
    for mode in MODES:
        lo, hi = entry[mode]["recomputed_change"]["ci"]
        side[mode] = "below" if hi < 0 else "above" if lo > 0 else "apart"
    if side["live"] == side["frozen"]:
        text += {
            "below": f". Recomputed, both stay below the start ({start}): a loss that fitted statistics cannot"
            " remove lies in the weights",
            "above": f". Recomputed, both lie above the start ({start})",
            "apart": f". Recomputed, neither is told apart from the start ({start})",
        }[side["live"]]
    else:
        phrase = {"below": "stay below it", "above": "lie above it", "apart": "are not told apart from it"}
        text += f". Against the start ({start}), recomputed, the live networks {phrase[side['live']]}"
        text += f" and the frozen ones {phrase[side['frozen']]}"
    return text


def _side(ci) -> str:
    """``below``, ``above`` or ``zero``: where an interval lies with respect to zero."""
    lo, hi = ci
    return "below" if hi < 0 else "above" if lo > 0 else "zero"


def skew_cost_sentence(rates: list[str], differences: list[dict]) -> str:
    """What one-class batches cost against random ones (live, paired; ``differences``: one
    interval per rate of ``rates``, the rates' names in words), in words that agree with each
    interval: ``cost more`` only where it lies wholly below zero, ``cost less`` only where wholly
    above, ``cannot be told apart from them`` where it contains zero."""
    groups: dict[str, list[str]] = {}
    for rate, d in zip(rates, differences):
        groups.setdefault(_side(d["ci"]), []).append(rate)
    phrase = {"below": "cost more", "above": "cost less", "zero": "cannot be told apart from them"}
    clauses = []
    for side in ("below", "above", "zero"):
        if side in groups:
            where = f"at {words(groups[side])}"
            if len(groups[side]) == len(rates):
                where = "at either rate" if len(rates) == 2 else "at every rate"
            clauses.append(f"{phrase[side]} {where}")
    text = clauses[0] if len(clauses) == 1 else ", ".join(clauses[:-1]) + " and " + clauses[-1]
    return f"against random batches of the same size, one-class batches {text}"


def recovery_sentence(live: dict) -> str:
    """What recomputing the statistics recovered of live fine-tuning's cost, for one rate and
    stream (``live``: the live mode's entry), from two paired intervals: the change of the
    inference-mode accuracy (after minus before) and the recomputed accuracy's change from the
    start (recomputed minus before). "Recovered all" is never said: an interval that contains
    zero shows no difference from the start, not a full recovery."""
    cost, back = _side(live["inference_change"]["ci"]), _side(live["recomputed_change"]["ci"])
    change = f"{points(live['inference_change']['mean'])} {interval_points(live['inference_change'])} points"
    again = f"{points(live['recomputed_change']['mean'])} {interval_points(live['recomputed_change'])} points"
    if cost != "below":
        told = "lies wholly above zero" if cost == "above" else "contains zero"
        return (
            f"live fine-tuning showed no cost for recomputing to recover (its change, {change}, {told}); "
            f"recomputed, the networks lie {again} from the start"
        )
    if back == "below":
        return (
            f"recomputing recovered only part of what live fine-tuning had cost ({change}): recomputed, the "
            f"networks still lie {again} from the start, an interval wholly below zero"
        )
    if back == "above":
        return (
            f"recomputing recovered more than live fine-tuning had cost ({change}): recomputed, the networks "
            f"lie {again} from the start, an interval wholly above zero"
        )
    return (
        f"live fine-tuning cost {change}, and recomputed the networks can no longer be told apart from "
        f"the start ({again}, an interval that contains zero)"
    )


def remedy_sentence(cell: dict) -> str:
    """Frozen minus live after fine-tuning, for one rate (``cell``: the rate's entry), on both
    streams, in words that agree with each paired interval."""
    sides = [_side(cell[s]["frozen_minus_live"]["inference_after"]["ci"]) for s in STREAMS]
    phrase = {
        "above": "does better than live fine-tuning",
        "below": "does worse than live fine-tuning",
        "zero": "cannot be told apart from live fine-tuning",
    }
    if len(set(sides)) == 1:
        return f"the remedy {phrase[sides[0]]} on either stream"
    short = {"above": "does better", "below": "does worse", "zero": "cannot be told apart from it"}
    return (
        f"against live fine-tuning, the remedy {short[sides[0]]} on random batches and {short[sides[1]]} "
        "on one-class batches"
    )


HEADER = ["rate", "batches", "change, live", "change, frozen", "frozen $-$ live", "live, recomputed"]


def table_rows(summary: dict) -> list[list[str]]:
    """One row per rate and stream: the inference-mode accuracy's change after fine-tuning live
    and frozen, frozen minus live (each with its interval), and the live networks' accuracy
    with the exact statistics recomputed."""
    rows = []
    for rate in _rates(summary):
        for s in STREAMS:
            e = summary["by_rate"][rate][s]
            change = [e[mode]["inference_change"] for mode in MODES]
            d = e["frozen_minus_live"]["inference_after"]
            rows.append(
                [power_of_ten(float(rate)), TABLE_WORDS[s]]
                + [f"{points(c['mean'])} {interval_points(c)}" for c in change]
                + [f"{points(d['mean'])} {interval_points(d)}", percent(e["live"]["recomputed_after"]["mean"])]
            )
    return rows


def write_table(path, summary: dict) -> None:
    latex.write_table(path, HEADER, table_rows(summary), "llrrrr", "fine-tuning: inference accuracy change")


# ---- arms, conditions and controls (issue 29, item 10) -----------------------------------

ARMS = ("live", "frozen", "momentum0", "none", "layernorm")  # bnstudy.studies.finetune.science.ARMS
CONDITIONS = ("same", "shifted")  # bnstudy.studies.finetune.science.CONDITIONS
ARM_WORDS = {
    "live": "batch norm, live",
    "frozen": "batch norm, frozen",
    "momentum0": "batch norm, momentum 0",
    "none": "no normaliser",
    "layernorm": "layer norm",
}
CONDITION_WORDS = {"same": "as trained", "shifted": "shifted"}
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
# (the contrasts above of what "change"), one family per control. A family is every rate, input
# condition and stream cell of that control: each of its intervals is at
# ``1 - (1 - confidence) / family`` (Bonferroni, :func:`bnstudy.base.stats.adjusted_confidence`), so a
# claim about any one cell (the abstract's, the section's) holds with the study's confidence whichever
# cell it is.
SPECIFIC = {"live_minus_none": "none", "live_minus_layernorm": "layernorm"}


def summarise_arms(arms: list[dict], confidence: float) -> dict:
    """``{rate: {condition: {stream: {"arms": {arm: {...}}, "contrasts": {name: paired}}}}}``.

    Per arm the inference-mode accuracy before and after (levels over seeds), the change
    (after - before, paired by seed) and for batch norm the accuracy with the statistics
    recomputed after; per :data:`CONTRASTS` entry the paired (by seed) difference. The
    batch-norm-specific parts (:data:`SPECIFIC`) also carry ``family`` (the rate, condition and
    stream cells of their control) and ``ci_adjusted``, the paired interval Bonferroni-adjusted over
    that family.
    """
    out: dict = {}
    present = [a for a in ARMS if any(r["arm"] == a for r in arms)]
    for a in ("live", "frozen", "momentum0"):
        if a not in present:
            raise ValueError(f"fine-tuning arms: no rows of arm {a}")
    contrasts_present = [c for c in CONTRASTS if c[1] in present and c[2] in present]
    rates = sorted({float(r["lr"]) for r in arms})
    family = len(rates) * len(CONDITIONS) * len(STREAMS)
    adjusted = adjusted_confidence(confidence, family)
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
                            contrasts[name] |= {"family": family, "ci_adjusted": adj["ci"]}
                by_stream[s] = {"arms": entry, "contrasts": contrasts}
            by_condition[c] = by_stream
        out[rate_key(lr)] = by_condition
    return out


def _cell(e: dict) -> str:
    return f"{points(e['mean'])} {interval_points(e)}"


def arms_macros(arms: dict, settings: dict) -> dict[str, str]:
    """``{name: TeX}`` of the arms' summary: per rate (``RateOne``, ...), condition, stream and arm the
    accuracy before and after and the change with its interval and verdict; every contrast with
    its interval and verdict; the shift; counts of contrasts whose interval lies below / above zero."""
    rates = sorted(arms, key=float)
    m = {
        "finetuneShiftScale": f"{float(settings['shift']['scale']):g}",
        "finetuneShiftOffset": f"{float(settings['shift']['offset']):g}",
        "finetuneArmCells": latex.fmt(len(rates) * len(CONDITIONS) * len(STREAMS)),
    }
    below: dict = {}
    above: dict = {}
    for i, rate in enumerate(rates, start=1):
        for c in CONDITIONS:
            for s in STREAMS:
                e = arms[rate][c][s]
                for a in e["arms"]:
                    name = lambda *parts: latex.macro_name("finetune", "arm", "rate", i, c, s, a, *parts)  # noqa: E731
                    m[name("before")] = percent(e["arms"][a]["before"]["mean"])
                    m[name("after")] = percent(e["arms"][a]["after"]["mean"])
                    m[name("change")] = points(e["arms"][a]["change"]["mean"])
                    m[name("change", "ci")] = interval_points(e["arms"][a]["change"])
                    m[name("change", "verdict")] = verdict(*e["arms"][a]["change"]["ci"])
                    if "recomputed" in e["arms"][a]:
                        m[name("recomputed")] = percent(e["arms"][a]["recomputed"]["mean"])
                for k, d in e["contrasts"].items():
                    name = lambda *parts: latex.macro_name("finetune", "contrast", "rate", i, c, s, k, *parts)  # noqa: E731
                    m[name()] = points(d["mean"])
                    m[name("ci")] = interval_points(d)
                    m[name("verdict")] = verdict(*d["ci"])
                    if "ci_adjusted" in d:
                        m[name("adj", "ci")] = interval_points(_adjusted(d))
                        m[name("adj", "verdict")] = verdict(*d["ci_adjusted"])
                    below[(c, k)] = below.get((c, k), 0) + int(d["ci"][1] < 0)
                    above[(c, k)] = above.get((c, k), 0) + int(d["ci"][0] > 0)
    for (c, k), n in below.items():
        m[latex.macro_name("finetune", "contrast", c, k, "below", "cells")] = latex.fmt(n)
        m[latex.macro_name("finetune", "contrast", c, k, "above", "cells")] = latex.fmt(above[(c, k)])
    m["finetuneContrastCellsPerCondition"] = latex.fmt(len(rates) * len(STREAMS))
    m["finetuneContrastCounts"] = contrast_counts(below, above, len(rates) * len(STREAMS))
    last = arms[rates[1]]["shifted"]["class_sorted"]["contrasts"]  # rate two, as the macro names it
    if "statistics_update" in last and "gradient_path" in last:
        m["finetuneContrastRateTwoShiftedClassSortedVerdicts"] = latex.two_verdicts(
            last["statistics_update"]["ci"], last["gradient_path"]["ci"]
        )
    return m | controls_macros(_present(arms)) | specific_macros(arms)


def controls_macros(present: list[str]) -> dict[str, str]:
    """The controls with no running statistics the build fine-tunes (the grid's normalisers among
    none and layer norm), named in the section's sentence and the arms table's caption."""
    controls = [a for a in ("none", "layernorm") if a in present]
    phrases = {"none": "without a normaliser", "layernorm": "with layer norm"}
    what = words([phrases[a] for a in controls])
    count = f"{number_word(len(controls)).capitalize()} control{'s' if len(controls) > 1 else ''}"
    m = {
        "finetuneControlsSentence": f"{count} with no running statistics, the grid's networks {what},",
        "finetuneControlsCaption": f"the networks {what}",
    }
    if len(controls) == 1:
        m["finetuneOneControl"] = "1"
    return m


# ---- the batch-norm-specific part: live batch norm's change minus each control's ------------

# the controls as the section's sentences name them
CONTROL_WORDS = {"none": "no normaliser", "layernorm": "layer norm"}


def _adjusted(d: dict) -> dict:
    """A batch-norm-specific part (:data:`SPECIFIC`) with its adjusted interval as ``ci``, for the printers."""
    return d | {"ci": d["ci_adjusted"]}


def _specific_in(cell: dict) -> list[str]:
    """The batch-norm-specific contrasts of one rate and condition (``cell``: ``{stream: entry}``), in
    :data:`SPECIFIC`'s order: one per control the grid trains."""
    return [k for k in SPECIFIC if all("ci_adjusted" in cell[s]["contrasts"].get(k, {}) for s in STREAMS)]


def specific_macros(arms: dict) -> dict[str, str]:
    """The batch-norm-specific part's macros (none where the grid trains no control): the size of each
    control's family (``finetuneSpecificFamily``), where its adjusted intervals lie over the family's
    cells (``finetuneSpecificCounts``), and per rate the sentence on the inputs as trained
    (``finetuneRateOneSpecificSentence``, ...: :func:`specific_sentence`)."""
    rates = sorted(arms, key=float)
    if not _specific_in(arms[rates[0]]["same"]):
        return {}
    cells = [arms[r][c][s] for r in rates for c in CONDITIONS for s in STREAMS]
    keys = _specific_in(arms[rates[0]]["same"])
    families = {int(e["contrasts"][k]["family"]) for e in cells for k in keys}
    if families != {len(cells)}:
        raise ValueError(f"fine-tuning: the batch-norm-specific families {families} are not the {len(cells)} cells")
    m = {"finetuneSpecificFamily": latex.fmt(len(cells))}
    counts = []
    for k in keys:
        cis = [e["contrasts"][k]["ci_adjusted"] for e in cells]
        below, above = sum(hi < 0 for _, hi in cis), sum(lo > 0 for lo, _ in cis)
        it = " it" if counts else ""  # the section names the subject before the first
        counts.append(f"against {CONTROL_WORDS[SPECIFIC[k]]}{it} {side_clause(below, above, len(cells))}")
    m["finetuneSpecificCounts"] = "; ".join(counts)
    for i, r in enumerate(rates, start=1):
        m[latex.macro_name("finetune rate", i, "specific sentence")] = specific_sentence(arms[r]["same"])
    return m


def specific_verdict(sides: list[str], controls: int = 2) -> str:
    """Where the adjusted intervals of the batch-norm-specific parts (``sides``: ``below``, ``above`` or
    ``zero`` each) against ``controls`` controls lie, and what that lets one put down to batch
    normalisation: a part of the loss only where an interval lies wholly below zero."""
    n = len(sides)
    whom = "the controls" if controls > 1 else "the control"
    whose = "the controls'" if controls > 1 else "the control's"
    if len(set(sides)) == 1:
        subject = "the interval" if n == 1 else "both intervals" if n == 2 else f"all {number_word(n)} intervals"
        side = sides[0]
        said = verdict(*{"below": (-1, -1), "above": (1, 1), "zero": (-1, 1)}[side], plural=n > 1)
        then = {
            "below": f"the loss beyond {whose} can be put down to batch normalisation",
            "above": f"batch norm changes less for the worse than {whom}",
            "zero": f"batch norm's change cannot be told apart from {whose}, and no part of it can be put"
            " down to batch normalisation",
        }[side]
        return f"{subject} {said}, so {then}"
    parts = []
    for side, one, many in (
        ("below", "lies wholly below zero", "lie wholly below zero"),
        ("above", "lies wholly above zero", "lie wholly above zero"),
        ("zero", "contains zero", "contain zero"),
    ):
        k = sides.count(side)
        if k:
            parts.append(f"{number_word(k)} {one if k == 1 else many}")
    return (
        f"of these intervals {words(parts)}, and only where an interval lies wholly below zero can a part of the"
        " loss be put down to batch normalisation"
    )


def specific_sentence(cell: dict) -> str:
    """One rate's batch-norm-specific parts with the inputs as trained (``cell``: ``{stream: entry}`` of
    :func:`summarise_arms`): the range of the controls' changes, live batch norm's change minus each
    control's on random and on one-class batches with its adjusted interval, and
    :func:`specific_verdict` of those intervals."""
    keys = _specific_in(cell)
    changes = [cell[s]["arms"][SPECIFIC[k]]["change"]["mean"] for k in keys for s in STREAMS]
    lo, hi = points(min(changes)), points(max(changes))
    span = lo if lo == hi else f"{lo} to {hi}"
    head = "the controls change" if len(keys) > 1 else "the control changes"
    whose = "theirs" if len(keys) > 1 else "the control's"
    parts = []
    for j, k in enumerate(keys):
        d = [cell[s]["contrasts"][k] for s in STREAMS]
        on = (" on random", " on one-class batches") if j == 0 else ("", "")
        parts.append(
            f"{_adjusted_cell(d[0])}{on[0]} and {_adjusted_cell(d[1])}{on[1]} against {CONTROL_WORDS[SPECIFIC[k]]}"
        )
    sides = [_side(cell[s]["contrasts"][k]["ci_adjusted"]) for k in keys for s in STREAMS]
    return (
        f"{head} by {span} points, and live batch norm's change minus {whose}, the part specific to batch"
        f" normalisation, is {words(parts)}: {specific_verdict(sides, len(keys))}"
    )


def _adjusted_cell(d: dict) -> str:
    return f"{points(d['mean'])} {interval_points(_adjusted(d))}"


# the controls of the abstract's sentence, as it names them (never "none")
ABSTRACT_CONTROLS = {"none": "no normaliser's", "layernorm": "layer normalisation's"}


def abstract_macros(arms: dict, settings: dict) -> dict[str, str]:
    """The abstract's sentence on fine-tuning (``finetuneAbstractSentence``): at every rate, on one-class
    batches of the inputs as trained, live batch norm's change and the part of it specific to batch
    normalisation (:func:`abstract_sentence`). ``arms``: :func:`summarise_arms`; ``settings``: its
    ``batch_size``."""
    rates = sorted(arms, key=float)
    cells = [(power_of_ten(float(r)), arms[r]["same"]["class_sorted"]) for r in rates]
    family = len(rates) * len(CONDITIONS) * len(STREAMS)
    return {"finetuneAbstractSentence": abstract_sentence(cells, int(settings["batch_size"]), family)}


def _difference(e: dict) -> str:
    return f"{points(e['mean'])} points {interval_points(e)}"


def _verdicts(cis: list) -> str:
    """Where one interval per rate lies, each verdict said once."""
    if len(cis) == 1:
        return f"an interval that {verdict(*cis[0])}"
    if len(cis) == 2:
        return latex.two_verdicts(*cis)
    said = [verdict(*ci) for ci in cis]
    if len(set(said)) == 1:
        return f"all {number_word(len(cis))} intervals {verdict(*cis[0], plural=True)}"
    return ", ".join(f"the {ordinal} {v}" for ordinal, v in zip(("first", "second", "third", "fourth"), said))


def _specific_phrase(live: dict, parts: list[tuple[str, dict]]) -> str:
    """What one rate's batch-norm-specific parts (``parts``: ``(the control's name, part)``) show: a loss
    put down to batch normalisation only where live batch norm's change and every part lie wholly below
    zero (adjusted); else the change's place against each control, each verdict said once."""
    sides = {name: _side(d["ci_adjusted"]) for name, d in parts}
    if live["ci"][1] < 0 and set(sides.values()) == {"below"}:
        return f"a loss beyond {words(list(sides))}, which can be put down to batch normalisation"
    said = {"below": "below {}", "above": "above {}", "zero": "not told apart from {}"}
    groups = [said[side].format(words([n for n, s in sides.items() if s == side]))
              for side in ("below", "above", "zero") if side in sides.values()]  # fmt: skip
    return "a change " + " and ".join(groups)


def abstract_sentence(cells: list[tuple[str, dict]], batch_size: int, family: int) -> str:
    """Live batch norm's change of the inference-mode accuracy after fine-tuning in batches of
    ``batch_size`` at each rate (``cells``: ``(the rate printed, one condition and stream of
    :func:`summarise_arms`)`` in increasing order) with its verdicts, and the part of it specific to batch
    normalisation, that change minus each control's (paired by seed, adjusted over ``family`` cells), with
    what it shows at each rate (:func:`_specific_phrase`): the loss is put down to batch normalisation
    only where the change and every adjusted part lie wholly below zero."""
    lives = [cell["arms"]["live"]["change"] for _, cell in cells]
    changes = words([f"{_difference(live)} at rate {rate}" for live, (rate, _) in zip(lives, cells)])
    text = (
        f"Fine-tuned live in one-class batches of {batch_size} rows, batch normalisation's inference-mode "
        f"accuracy changes by {changes} ({_verdicts([live['ci'] for live in lives])})"
    )
    keys = [k for k in SPECIFIC if all("ci_adjusted" in cell["contrasts"].get(k, {}) for _, cell in cells)]
    if not keys:
        return text
    names = [ABSTRACT_CONTROLS[SPECIFIC[k]] for k in keys]
    minus = " and minus ".join(names)
    per_rate = [
        f"{words([_difference(_adjusted(cell['contrasts'][k])) for k in keys])} at {rate}" for rate, cell in cells
    ]
    text += (
        f"; its change minus {minus}, the part specific to batch normalisation (paired by seed, Bonferroni-adjusted"
        f" over the {family} fine-tuning settings), is {words(per_rate)}"
    )
    phrases: dict[str, list[str]] = {}
    for live, (rate, cell) in zip(lives, cells):
        phrase = _specific_phrase(live, [(ABSTRACT_CONTROLS[SPECIFIC[k]], cell["contrasts"][k]) for k in keys])
        phrases.setdefault(phrase, []).append(rate)
    text += ": " + "; ".join(f"at {words(rates)} {phrase}" for phrase, rates in phrases.items())
    return text


# the contrasts the section counts, in its order, as its sentence names them
COUNTED = (
    ("statistics_update", "the interval of the statistics update (live minus momentum~0)"),
    ("gradient_path", "that of the gradient path (momentum~0 minus frozen)"),
    ("live_minus_none", "that of live batch norm's change minus no normaliser's"),
    ("live_minus_layernorm", "that of live batch norm's change minus layer norm's"),
)


def side_clause(below: int, above: int, cells: int) -> str:
    """Where ``cells`` intervals lie, in words, each count once and only where it is not zero:
    ``lies below zero in 3, above zero in 1 and contains zero in 4 cells``; ``contains zero in all 8 cells``."""
    held = cells - below - above
    if held == cells:
        return f"contains zero in all {cells} cells"
    parts = [f"below zero in {n}" for n in [below] if n] + [f"above zero in {n}" for n in [above] if n]
    parts[0] = "lies " + parts[0]
    parts += [f"contains zero in {held}" for n in [held] if n]
    return words(parts) + " cells"


def contrast_counts(below: dict, above: dict, cells: int) -> str:
    """The section's counts of contrasts by side of zero, one clause per contrast and condition, for
    the contrasts the build has (no layer-norm control where the grid has no layer norm)."""
    out = []
    for key, label in COUNTED:
        if ("same", key) not in below:
            continue
        same = side_clause(below[("same", key)], above[("same", key)], cells)
        shifted = side_clause(below[("shifted", key)], above[("shifted", key)], cells)
        # one verdict once: the same clause for both conditions is said of both together
        out.append(
            f"{label} {same} in both conditions"
            if same == shifted
            else f"{label} {same} as trained and {shifted} shifted"
        )
    return "; ".join(out)


def _present(arms: dict) -> list[str]:
    first = next(iter(next(iter(arms.values())).values()))
    return list(next(iter(first.values()))["arms"])


def _specific_columns(arms: dict) -> list[str]:
    """The batch-norm-specific parts the arms' summary has (:data:`SPECIFIC`), one table column each."""
    rate = sorted(arms, key=float)[0]
    return _specific_in(arms[rate]["same"])


def arms_header(arms: dict) -> list[str]:
    return [
        "rate",
        "inputs",
        "batches",
        *(ARM_WORDS[a] for a in _present(arms)),
        *(f"live $-$ {CONTROL_WORDS[SPECIFIC[k]]}, adj." for k in _specific_columns(arms)),
    ]


def arms_table_rows(arms: dict) -> list[list[str]]:
    """One row per rate, condition and stream: each arm's change of the inference-mode accuracy
    (points, paired by seed, with its interval), then each batch-norm-specific part (live batch norm's
    change minus a control's, with its interval adjusted over the control's family)."""
    rows = []
    specific = _specific_columns(arms)
    for rate in sorted(arms, key=float):
        for c in CONDITIONS:
            for s in STREAMS:
                e, d = arms[rate][c][s]["arms"], arms[rate][c][s]["contrasts"]
                rows.append(
                    [power_of_ten(float(rate)), CONDITION_WORDS[c], TABLE_WORDS[s]]
                    + [_cell(e[a]["change"]) for a in e]
                    + [_adjusted_cell(d[k]) for k in specific]
                )
    return rows


def write_arms_table(path, arms: dict) -> None:
    header = arms_header(arms)
    latex.write_table(
        path, header, arms_table_rows(arms), "l" * 3 + "r" * (len(header) - 3), "fine-tuning arms: accuracy change"
    )
