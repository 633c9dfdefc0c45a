"""The fine-tuning section's tables: the continuous fine-tuning's changes per rate and stream
(:func:`write_table`) and the arms' changes per rate, condition and stream (:func:`write_arms_table`).
"""

from __future__ import annotations

from bnstudy.base.designs import FINETUNE_MODES as MODES
from bnstudy.base.designs import FINETUNE_STREAMS as STREAMS
from bnstudy.evaluation.families import Family
from bnstudy.paper import latex
from bnstudy.paper.latex import math_points as points
from bnstudy.paper.latex import math_points_interval as interval_points
from bnstudy.paper.latex import power_of_ten
from bnstudy.studies.finetune.sentences import CONTROL_WORDS, adjusted_cell, family_mark, percent
from bnstudy.studies.finetune.summary import CONDITIONS, SPECIFIC, present_arms, rate_keys, specific_in

TABLE_WORDS = {"shuffle": "random", "class_sorted": "one-class"}

HEADER = ["rate", "batches", "change, live", "change, frozen", "frozen $-$ live", "live, recomputed"]


def table_rows(summary: dict) -> list[list[str]]:
    """One row per rate and stream: the inference-mode accuracy's change after fine-tuning live
    and frozen, frozen minus live (each with its interval), and the live networks' accuracy
    with the exact statistics recomputed."""
    rows = []
    for rate in rate_keys(summary):
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


ARM_WORDS = {
    "live": "batch norm, live",
    "frozen": "batch norm, frozen",
    "momentum0": "batch norm, momentum 0",
    "none": "no normaliser",
    "layernorm": "layer norm",
}

CONDITION_WORDS = {"same": "as trained", "shifted": "shifted"}


def _cell(e: dict) -> str:
    return f"{points(e['mean'])} {interval_points(e)}"


def _specific_columns(arms: dict) -> list[str]:
    """The batch-norm-specific parts the arms' summary has (:data:`SPECIFIC`), one table column each."""
    rate = sorted(arms, key=float)[0]
    return specific_in(arms[rate]["same"])


def arms_header(arms: dict, family: Family) -> list[str]:
    """The arms table's header: the keys, each arm, then each batch-norm-specific part marked by the
    declared ``family``'s adjustment (:func:`bnstudy.studies.finetune.sentences.family_mark`)."""
    return [
        "rate",
        "inputs",
        "batches",
        *(ARM_WORDS[a] for a in present_arms(arms)),
        *(f"live $-$ {CONTROL_WORDS[SPECIFIC[k]]}, {family_mark(family)}" for k in _specific_columns(arms)),
    ]


def arms_table_rows(arms: dict) -> list[list[str]]:
    """One row per rate, condition and stream: each arm's change of the inference-mode accuracy
    (points, paired by seed, with its interval), then each batch-norm-specific part (live batch norm's
    change minus a control's, with its interval at the level of the control's family)."""
    rows = []
    specific = _specific_columns(arms)
    for rate in sorted(arms, key=float):
        for c in CONDITIONS:
            for s in STREAMS:
                e, d = arms[rate][c][s]["arms"], arms[rate][c][s]["contrasts"]
                rows.append(
                    [power_of_ten(float(rate)), CONDITION_WORDS[c], TABLE_WORDS[s]]
                    + [_cell(e[a]["change"]) for a in e]
                    + [adjusted_cell(d[k]) for k in specific]
                )
    return rows


def write_arms_table(path, arms: dict, family: Family) -> None:
    header = arms_header(arms, family)
    latex.write_table(
        path, header, arms_table_rows(arms), "l" * 3 + "r" * (len(header) - 3), "fine-tuning arms: accuracy change"
    )
