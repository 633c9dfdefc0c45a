"""Equivalence of the controls to no normaliser (bnstudy.studies.batch_size.equivalence): two one-sided
tests against the declared margin, Bonferroni over a control's batch sizes, and the sentences in every
variant."""

from __future__ import annotations

import pandas as pd
import pytest

from bnstudy.base.stats import seed_interval
from bnstudy.studies.batch_size import equivalence


def runs(diffs: dict[tuple[str, int], list[float]]) -> pd.DataFrame:
    """Inference-mode accuracies: none at 0.9 for every seed, each control at 0.9 + its difference."""
    rows = []
    for (name, b), ds in diffs.items():
        for s, d in enumerate(ds):
            rows.append(dict(normaliser=name, batch_size=b, seed=s, mode="inference", accuracy=0.9 + d))
            rows.append(dict(normaliser="none", batch_size=b, seed=s, mode="inference", accuracy=0.9))
    return pd.DataFrame(rows).drop_duplicates()


TIGHT = [0.001, -0.001, 0.002, 0.0, -0.002]  # mean 0, small spread: inside a one-point margin
WIDE = [0.02, -0.02, 0.015, -0.015, 0.0]  # mean 0, spread past the margin: equivalence not shown
SHIFTED = [0.012, 0.013, 0.011, 0.012, 0.012]  # a real difference beyond the margin


def test_the_tost_interval_is_the_paired_t_interval_at_one_minus_twice_the_adjusted_alpha():
    table = equivalence.equivalence_rows(runs({("groupnorm", 2): TIGHT, ("groupnorm", 8): WIDE}), 0.95, 0.01)
    alpha = 0.05 / 2  # two batch sizes: one family
    _, _, lo, hi = seed_interval(TIGHT, 1 - 2 * alpha)
    row = table[table.batch_size == 2].iloc[0]
    assert row.alpha == pytest.approx(alpha)
    assert (row.tost_low, row.tost_high) == pytest.approx((lo, hi), abs=1e-12)
    assert list(table.equivalent) == [True, False]


def test_a_difference_beyond_the_margin_is_not_equivalent_however_tight():
    table = equivalence.equivalence_rows(runs({("layernorm", 2): SHIFTED}), 0.95, 0.01)
    assert not table.equivalent.any()


@pytest.mark.parametrize(
    "diffs, expected",
    [
        ({2: TIGHT, 8: TIGHT}, "at every batch size"),
        ({2: WIDE, 8: SHIFTED}, "at no batch size"),
        ({2: WIDE, 8: TIGHT, 32: TIGHT}, "only at batches 8 and 32, not at 2"),
        ({2: TIGHT, 8: WIDE, 32: WIDE}, "only at batch 2, not at 8 and 32"),
    ],
)
def test_the_sentences_say_where_equivalence_is_shown_and_what_it_means(diffs, expected):
    table = equivalence.equivalence_rows(runs({("groupnorm", b): d for b, d in diffs.items()}), 0.95, 0.01)
    assert equivalence.where_equivalent(table, "groupnorm") == expected
    m = equivalence.macros(table, 0.95)
    verb = "is shown equivalent" if expected == "at no batch size" else "is equivalent"
    assert m["controlsEquivalence"].startswith(f"group normalisation {verb} to no normaliser {expected} (")
    assert f"each at level 5\\%/{len(diffs)}, Bonferroni over the {len(diffs)} batch sizes" in m["controlsEquivalence"]
    assert m["equivalenceMargin"] == "1.0"
    discussion = m["groupnormDiscussion"]
    assert discussion.startswith(f"On our task group normalisation {verb} to no normaliser within $\\pm1.0$ points")
    if expected == "at every batch size":
        assert discussion.endswith("so here it neither helps nor hurts by as much as the margin")
    elif expected == "at no batch size":
        assert discussion.endswith("our seeds cannot say that it does no harm here, nor that it helps")
    else:
        assert discussion.endswith("where it is not, our seeds cannot say that it does no harm")


def test_every_control_in_one_sentence_and_none_without_controls():
    table = equivalence.equivalence_rows(runs({("layernorm", 2): TIGHT, ("groupnorm", 2): WIDE}), 0.95, 0.01)
    text = equivalence.macros(table, 0.95)["controlsEquivalence"]
    assert text.startswith(
        "layer normalisation is equivalent to no normaliser at every batch size; group normalisation at no batch size ("
    )
    only_bn = runs({("batchnorm", 2): TIGHT})
    assert equivalence.macros(equivalence.equivalence_rows(only_bn, 0.95, 0.01), 0.95) == {}


@pytest.mark.parametrize(
    "sides, text",
    [
        (
            {"layernorm": TIGHT, "groupnorm": TIGHT, "rmsnorm": TIGHT},
            "layer, group and RMS normalisation are each equivalent to no normaliser at every batch size (",
        ),
        (
            {"layernorm": WIDE, "groupnorm": WIDE, "rmsnorm": WIDE},
            "layer, group and RMS normalisation are each shown equivalent to no normaliser at no batch size (",
        ),
        (
            {"layernorm": TIGHT, "groupnorm": WIDE, "rmsnorm": TIGHT},
            "layer and RMS normalisation are each equivalent to no normaliser at every batch size; "
            "group normalisation at no batch size (",
        ),
        (
            {"layernorm": WIDE, "groupnorm": TIGHT, "rmsnorm": TIGHT},
            "layer normalisation is shown equivalent to no normaliser at no batch size; "
            "group and RMS normalisation at every batch size (",
        ),
    ],
)
def test_controls_of_one_verdict_are_named_together_and_each_verdict_said_once(sides, text):
    table = equivalence.equivalence_rows(runs({(n, 2): d for n, d in sides.items()}), 0.95, 0.01)
    sentence = equivalence.macros(table, 0.95)["controlsEquivalence"]
    assert sentence.startswith(text), sentence
    assert sentence.count("batch size") - sentence.count("batch sizes") == len({id(d) for d in sides.values()})
