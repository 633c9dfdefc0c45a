"""Equivalence of the controls to no normaliser (bnstudy.studies.batch_size.equivalence): two one-sided
tests against the margin the family ``normalisers`` declares (its smallest effect), at the family's
level (Bonferroni over a control's batch sizes, or unadjusted), and the sentences in every variant."""

from __future__ import annotations

import pandas as pd
import pytest

from batch_size_families import ADJUSTED, family, section
from bnstudy.base.stats import seed_interval
from bnstudy.studies.batch_size import equivalence
from test_sentences import problems

NORMALISERS = family("normalisers")  # Bonferroni, smallest effect 0.01
UNADJUSTED = family("normalisers", "unadjusted")


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
    table = equivalence.equivalence_rows(runs({("groupnorm", 2): TIGHT, ("groupnorm", 8): WIDE}), 0.95, NORMALISERS)
    alpha = 0.05 / 2  # two batch sizes: one family
    _, _, lo, hi = seed_interval(TIGHT, 1 - 2 * alpha)
    row = table[table.batch_size == 2].iloc[0]
    assert row.alpha == pytest.approx(alpha) and row.alpha == pytest.approx(1 - NORMALISERS.level(0.95, 2))
    assert (row.tost_low, row.tost_high) == pytest.approx((lo, hi), abs=1e-12)
    assert list(table.equivalent) == [True, False]
    assert list(table.margin) == [0.01, 0.01]  # the family's smallest effect


def test_a_family_declared_without_adjustment_tests_each_batch_size_at_the_unadjusted_level():
    """Unadjusted, each one-sided test is at 1 - confidence, and the TOST interval narrows: a spread
    that the adjusted family cannot call equivalent, the unadjusted one can."""
    near = [-0.003, 0.011, 0.001, 0.007, 0.004]  # mean 0.4 points; the 95% interval reaches past 1, the 90% not
    diffs = runs({("groupnorm", 2): near, ("groupnorm", 8): near})
    adjusted = equivalence.equivalence_rows(diffs, 0.95, NORMALISERS)
    unadjusted = equivalence.equivalence_rows(diffs, 0.95, UNADJUSTED)
    _, _, lo, hi = seed_interval(near, 1 - 2 * 0.05)
    row = unadjusted.iloc[0]
    assert row.alpha == pytest.approx(0.05) and (row.tost_low, row.tost_high) == pytest.approx((lo, hi), abs=1e-12)
    assert list(adjusted.equivalent) == [False, False] and list(unadjusted.equivalent) == [True, True]


def test_a_margin_is_the_declared_smallest_effect_and_none_is_refused():
    wider = family("normalisers", smallest_effect=0.02)
    assert equivalence.equivalence_rows(runs({("layernorm", 2): SHIFTED}), 0.95, wider).equivalent.all()
    with pytest.raises(ValueError, match="families.normalisers.smallest_effect: none declared"):
        equivalence.equivalence_rows(runs({("layernorm", 2): TIGHT}), 0.95, family("normalisers", smallest_effect=None))
    # no control in the grid: nothing is tested, so no margin is needed
    none = equivalence.equivalence_rows(
        runs({("batchnorm", 2): TIGHT}), 0.95, family("normalisers", smallest_effect=None)
    )
    assert none.empty


def test_a_difference_beyond_the_margin_is_not_equivalent_however_tight():
    table = equivalence.equivalence_rows(runs({("layernorm", 2): SHIFTED}), 0.95, NORMALISERS)
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
    table = equivalence.equivalence_rows(runs({("groupnorm", b): d for b, d in diffs.items()}), 0.95, NORMALISERS)
    assert equivalence.where_equivalent(table, "groupnorm") == expected
    m = equivalence.macros(table, 0.95, NORMALISERS)
    verb = "is shown equivalent" if expected == "at no batch size" else "is equivalent"
    assert m["controlsEquivalence"].startswith(f"group normalisation {verb} to no normaliser {expected} (")
    k = len(diffs)
    assert m["controlsEquivalence"].endswith(f"each at level 5\\%/{k}, Bonferroni-adjusted over the {k} batch sizes)")
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
    table = equivalence.equivalence_rows(runs({("layernorm", 2): TIGHT, ("groupnorm", 2): WIDE}), 0.95, NORMALISERS)
    text = equivalence.macros(table, 0.95, NORMALISERS)["controlsEquivalence"]
    assert text.startswith(
        "layer normalisation is equivalent to no normaliser at every batch size; group normalisation at no batch size ("
    )
    only_bn = runs({("batchnorm", 2): TIGHT})
    assert equivalence.macros(equivalence.equivalence_rows(only_bn, 0.95, NORMALISERS), 0.95, NORMALISERS) == {}


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
    table = equivalence.equivalence_rows(runs({(n, 2): d for n, d in sides.items()}), 0.95, NORMALISERS)
    sentence = equivalence.macros(table, 0.95, NORMALISERS)["controlsEquivalence"]
    assert sentence.startswith(text), sentence
    verdicts = sentence[: sentence.index(" (")]  # before the protocol, which names its family's one batch size
    assert verdicts.count("batch size") - verdicts.count("batch sizes") == len({id(d) for d in sides.values()})


@pytest.mark.parametrize("declared", [NORMALISERS, UNADJUSTED], ids=["bonferroni", "unadjusted"])
def test_the_protocol_names_the_familys_adjustment_in_both_sentences(declared):
    """Both sentences state the tests' level as the family declares it: Bonferroni-adjusted over the
    batch sizes, or unadjusted (exploratory) with each test at the unadjusted level."""
    table = equivalence.equivalence_rows(runs({("groupnorm", 2): TIGHT, ("groupnorm", 8): WIDE}), 0.95, declared)
    m = equivalence.macros(table, 0.95, declared)
    protocol = (
        "each at level 5\\%/2, Bonferroni-adjusted over the 2 batch sizes)"
        if declared.adjusted
        else "each at level 5\\%, unadjusted and exploratory)"
    )
    assert m["controlsEquivalence"] == (
        "group normalisation is equivalent to no normaliser only at batch 2, not at 8 (two one-sided paired $t$ "
        f"tests against the margin declared before the build, {protocol}"
    )
    assert m["groupnormDiscussion"].startswith(
        "On our task group normalisation is equivalent to no normaliser within $\\pm1.0$ points only at batch 2, "
        f"not at 8 (two one-sided paired $t$ tests against the margin declared before the build, {protocol}: "
    )
    assert ("Bonferroni" in m["controlsEquivalence"]) == declared.adjusted
    for text in m.values():  # a parenthesis opened inside another reads as a typo
        assert not problems(text), text


def test_the_config_check_refuses_controls_without_a_declared_margin(test_config):
    """A grid with a control tests it against the family normalisers' smallest effect: null is
    refused in one line; a grid without a control needs none."""
    from bnstudy.base.config import ConfigError, check_cross_fields

    check_cross_fields(test_config)
    test_config["families"]["normalisers"]["smallest_effect"] = None
    with pytest.raises(ConfigError) as e:
        check_cross_fields(test_config)
    message = str(e.value)
    assert message.startswith("config error: families.normalisers.smallest_effect: null, but the equivalence of ")
    assert "layernorm, groupnorm, rmsnorm" in message and "\n" not in message
    from bnstudy.studies.batch_size.checks import check

    test_config["normalisers"] = ["none", "batchnorm"]
    check(test_config, None)


def _gain_rows(comparisons, sizes=(2, 4, 8)):
    return pd.DataFrame([{"comparison": c, "batch_size": b} for c in comparisons for b in sizes])


@pytest.mark.parametrize(
    "declared, comparisons, text",
    [
        (
            ADJUSTED,
            ["batchnorm_vs_none", "batchrenorm_vs_batchnorm", "exact_vs_ema", "cumulative_vs_ema"],
            "batch normalisation minus none, batch renormalisation minus batch normalisation and each remedy "
            "minus the trained EMA, each Bonferroni-adjusted over the 3 batch sizes",
        ),
        (
            ADJUSTED,
            ["batchnorm_vs_none", "exact_vs_ema"],
            "batch normalisation minus none and each remedy minus the trained EMA, each Bonferroni-adjusted "
            "over the 3 batch sizes",
        ),
        (
            section(normalisers={"adjustment": "unadjusted"}),
            ["batchnorm_vs_none", "batchrenorm_vs_batchnorm", "exact_vs_ema"],
            "batch normalisation minus none unadjusted (exploratory); batch renormalisation minus batch "
            "normalisation and each remedy minus the trained EMA, each Bonferroni-adjusted over the 3 batch sizes",
        ),
        (
            section("unadjusted"),
            ["batchnorm_vs_none", "batchrenorm_vs_batchnorm", "exact_vs_ema"],
            "batch normalisation minus none, batch renormalisation minus batch normalisation and each remedy "
            "minus the trained EMA, each unadjusted (exploratory)",
        ),
    ],
    ids=["all alike", "no renorm", "one unadjusted", "all unadjusted"],
)
def test_the_gains_captions_names_each_adjustment_once_with_the_comparisons_it_covers(declared, comparisons, text):
    from bnstudy.studies.batch_size import macros as batch_size_macros

    clause = batch_size_macros.gain_families_clause(_gain_rows(comparisons), declared)
    assert clause == text
    for phrase in ("Bonferroni-adjusted over", "unadjusted (exploratory)"):
        assert clause.count(phrase) <= 1, clause
