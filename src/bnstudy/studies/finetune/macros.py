"""The fine-tuning section's macros (``{name: TeX}``) from the summaries of
:mod:`bnstudy.studies.finetune.summary`: settings, levels, paired differences with their
intervals and verdicts, and the generated sentences of :mod:`bnstudy.studies.finetune.sentences`.
"""

from __future__ import annotations

import math

from bnstudy.base.designs import FINETUNE_MODES as MODES
from bnstudy.base.designs import FINETUNE_STREAMS as STREAMS
from bnstudy.evaluation.families import Family
from bnstudy.paper import latex
from bnstudy.paper.latex import math_points as points
from bnstudy.paper.latex import math_points_interval as interval_points
from bnstudy.paper.latex import power_of_ten, verdict, words
from bnstudy.paper.network_prose import number_word
from bnstudy.studies.finetune.sentences import (
    CONTROL_WORDS,
    abstract_sentence,
    adjusted,
    contrast_counts,
    distance,
    family_mark,
    family_sentence,
    percent,
    recompute_sentence,
    recovery_sentence,
    remedy_sentence,
    side_clause,
    skew_cost_sentence,
    specific_sentence,
    specific_sides_of,
)
from bnstudy.studies.finetune.summary import (
    CONDITIONS,
    SPECIFIC,
    family_cells,
    present_arms,
    rate_keys,
    specific_in,
)


def macros(summary: dict, settings: dict) -> dict[str, str]:
    """``{name: TeX}``: the settings, the starting networks, and per rate (``RateOne``, ...,
    in increasing order), stream and mode every level and paired difference of the section."""
    rates = rate_keys(summary)
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
    rates = rate_keys(summary)
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


def arms_macros(arms: dict, settings: dict, family: Family) -> dict[str, str]:
    """``{name: TeX}`` of the arms' summary: per rate (``RateOne``, ...), condition, stream and arm the
    accuracy before and after and the change with its interval and verdict; every contrast with
    its interval and verdict (a batch-norm-specific part's also at the level of the declared
    ``family``, :func:`specific_macros`); the shift; counts of contrasts whose interval lies below /
    above zero. ``settings``: its ``shift`` and ``confidence``."""
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
                        m[name("adj", "ci")] = interval_points(adjusted(d))
                        m[name("adj", "verdict")] = verdict(*d["ci_adjusted"])
                    below[(c, k)] = below.get((c, k), 0) + int(d["ci"][1] < 0)
                    above[(c, k)] = above.get((c, k), 0) + int(d["ci"][0] > 0)
    for (c, k), n in below.items():
        m[latex.macro_name("finetune", "contrast", c, k, "below", "cells")] = latex.fmt(n)
        m[latex.macro_name("finetune", "contrast", c, k, "above", "cells")] = latex.fmt(above[(c, k)])
    m["finetuneContrastCellsPerCondition"] = latex.fmt(len(rates) * len(STREAMS))
    reported = tuple(specific_in(arms[rates[0]]["same"]))  # counted at their family's level instead
    m["finetuneContrastCounts"] = contrast_counts(below, above, len(rates) * len(STREAMS), reported)
    last = arms[rates[1]]["shifted"]["class_sorted"]["contrasts"]  # rate two, as the macro names it
    if "statistics_update" in last and "gradient_path" in last:
        m["finetuneContrastRateTwoShiftedClassSortedVerdicts"] = latex.two_verdicts(
            last["statistics_update"]["ci"], last["gradient_path"]["ci"]
        )
    return m | controls_macros(present_arms(arms)) | specific_macros(arms, family, settings["confidence"])


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


def specific_macros(arms: dict, family: Family, confidence: float) -> dict[str, str]:
    """The batch-norm-specific part's macros (none where the grid trains no control): the size of each
    control's family (``finetuneSpecificFamily``), what the declared ``family`` does to its intervals
    (``finetuneSpecificFamilySentence``: :func:`family_sentence`, ``confidence`` the study's) and how the
    table marks them (``finetuneSpecificMark``: :func:`family_mark`), where those intervals lie over the
    family's cells (``finetuneSpecificCounts``), and per rate the sentence on the inputs as trained
    (``finetuneRateOneSpecificSentence``, ...: :func:`specific_sentence`)."""
    rates = sorted(arms, key=float)
    if not specific_in(arms[rates[0]]["same"]):
        return {}
    cells = [arms[r][c][s] for r in rates for c in CONDITIONS for s in STREAMS]
    keys = specific_in(arms[rates[0]]["same"])
    families = {int(e["contrasts"][k]["family"]) for e in cells for k in keys}
    if families != {len(cells)}:
        raise ValueError(f"fine-tuning: the batch-norm-specific families {families} are not the {len(cells)} cells")
    m = {
        "finetuneSpecificFamily": latex.fmt(len(cells)),
        "finetuneSpecificFamilySentence": family_sentence(family, len(cells), latex.fmt(confidence, 0, percent=True)),
        "finetuneSpecificMark": family_mark(family),
    }
    counts = []
    for k in keys:
        cis = [e["contrasts"][k]["ci_adjusted"] for e in cells]
        below, above = sum(hi < 0 for _, hi in cis), sum(lo > 0 for lo, _ in cis)
        it = " it" if counts else ""  # the section names the subject before the first
        counts.append(f"against {CONTROL_WORDS[SPECIFIC[k]]}{it} {side_clause(below, above, len(cells))}")
    m["finetuneSpecificCounts"] = "; ".join(counts)
    before = None
    for i, r in enumerate(rates, start=1):
        m[latex.macro_name("finetune rate", i, "specific sentence")] = specific_sentence(arms[r]["same"], before)
        before = (power_of_ten(float(r)), specific_sides_of(arms[r]["same"]))
    return m


def abstract_macros(arms: dict, settings: dict, family: Family) -> dict[str, str]:
    """The abstract's sentence on fine-tuning (``finetuneAbstractSentence``): at every rate, on one-class
    batches of the inputs as trained, live batch norm's change and the part of it specific to batch
    normalisation, its interval at the declared ``family``'s level (:func:`abstract_sentence`).
    ``arms``: :func:`summarise_arms`; ``settings``: its ``batch_size``."""
    rates = sorted(arms, key=float)
    cells = [(power_of_ten(float(r)), arms[r]["same"]["class_sorted"]) for r in rates]
    sentence = abstract_sentence(cells, int(settings["batch_size"]), family, family_cells(rates))
    return {"finetuneAbstractSentence": sentence}
