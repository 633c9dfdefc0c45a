"""The learning-rate sweep: validation split, choice of rate, paired differences, by value."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats as sps

from bnstudy.base.config import ConfigError, check_cross_fields
from bnstudy.evaluation import accuracy
from bnstudy.evaluation.families import declared
from bnstudy.paper.latex import ALIKE
from bnstudy.studies.lr_sweep import report as lr_sweep_report
from bnstudy.studies.lr_sweep import science as lr_sweep
from conftest import ROOT

LABELS = {"none": "none", "batchnorm": "batch norm"}
ADJUSTMENTS = ("bonferroni", "unadjusted")


def declared_families(adjustment: str | None = None) -> dict:
    """The test config's ``families`` section, every family declared with ``adjustment`` where given."""
    families = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())["families"]
    return {name: d | ({"adjustment": adjustment} if adjustment else {}) for name, d in families.items()}


FAMILIES = declared_families()  # as the test config declares them
GAP = declared(FAMILIES, "lr_gap")


def test_validation_split_is_stratified_disjoint_sorted_and_seeded():
    y = np.array([0] * 10 + [1] * 10 + [2] * 5)
    fit, val = lr_sweep.validation_split(y, 0.2, 0)
    assert sorted(np.concatenate([fit, val]).tolist()) == list(range(len(y)))
    assert list(fit) == sorted(fit) and list(val) == sorted(val)
    assert np.bincount(y[val], minlength=3).tolist() == [2, 2, 1]  # 20% of each class
    again, _ = lr_sweep.validation_split(y, 0.2, 0)
    assert np.array_equal(fit, again)
    assert any(not np.array_equal(lr_sweep.validation_split(y, 0.2, s)[1], val) for s in range(1, 6))


def test_split_table_round_trips():
    fit, val = np.array([0, 2, 3]), np.array([1, 4])
    table = lr_sweep.split_table(fit, val)
    assert table["row"].tolist() == [0, 1, 2, 3, 4]
    assert table["subset"].tolist() == ["fit", "validation", "fit", "fit", "validation"]
    back = lr_sweep.read_split(table)
    assert back[0].tolist() == [0, 2, 3] and back[1].tolist() == [1, 4]


def runs_table():
    """Two normalisers, batch sizes 2 and 8, rates 1e-3 / 1e-2 / 1e-1, seeds 0-2."""
    val = {  # (norm, b, lr): validation accuracies of seeds 0, 1, 2
        ("none", 2, 1e-3): [0.90, 0.92, 0.94],  # mean 0.92, best at b 2 (lowest rate)
        ("none", 2, 1e-2): [0.80, 0.82, 0.84],
        ("none", 2, 1e-1): [0.50, 0.50, 0.50],
        ("none", 8, 1e-3): [0.80, 0.80, 0.80],
        ("none", 8, 1e-2): [0.85, 0.85, 0.85],  # tie with 1e-1: the lower rate wins
        ("none", 8, 1e-1): [0.85, 0.85, 0.85],
        ("batchnorm", 2, 1e-3): [0.70, 0.70, 0.70],
        ("batchnorm", 2, 1e-2): [0.75, 0.75, 0.75],
        ("batchnorm", 2, 1e-1): [0.80, 0.81, 0.82],  # best at the highest rate
        ("batchnorm", 8, 1e-3): [0.90, 0.90, 0.90],
        ("batchnorm", 8, 1e-2): [0.95, 0.95, 0.96],  # best inside
        ("batchnorm", 8, 1e-1): [0.60, 0.60, 0.60],
    }
    rows = []
    for (norm, b, lr), accs in val.items():
        for seed, v in enumerate(accs):
            # test accuracy: a value that does not follow validation, so a choice on test would differ
            test = 0.5 + 0.1 * seed + (0.2 if lr == 1e-1 else 0.0) + (0.05 if norm == "batchnorm" else 0.0)
            rows.append(
                dict(normaliser=norm, batch_size=b, lr=lr, seed=seed, validation_accuracy=v)
                | {"test_accuracy": test, "final_loss": 0.1}
            )
    return pd.DataFrame(rows).sample(frac=1, random_state=0)  # any row order


def test_rate_table_means_and_interval_by_hand():
    rates = lr_sweep_report.rate_table(runs_table(), 0.95)
    row = rates[(rates.normaliser == "none") & (rates.batch_size == 2) & (rates.lr == 1e-3)].iloc[0]
    assert row.validation_mean == pytest.approx(0.92, abs=1e-15)
    test = [0.5, 0.6, 0.7]
    assert row.test_mean == pytest.approx(0.6, abs=1e-15)
    # a share: the t interval on the logit scale, standard error 0.1 / sqrt(3) / (0.6 * 0.4) there
    half = sps.t.ppf(0.975, 2) * np.std(test, ddof=1) / np.sqrt(3) / (0.6 * 0.4)
    ends = [1 / (1 + 1 / (1.5 * np.exp(s * half))) for s in (-1, 1)]  # odds 0.6 / 0.4 = 1.5, moved by exp(+-half)
    assert (row.test_ci_low, row.test_ci_high) == pytest.approx(ends, abs=1e-12)
    assert 0.6 - ends[0] > ends[1] - 0.6  # skewed towards the middle, unlike the symmetric raw-scale interval
    assert len(rates) == 12 and set(rates.seeds) == {3}


def test_best_rates_use_validation_break_ties_low_and_name_edges():
    best = lr_sweep_report.best_rates(lr_sweep_report.rate_table(runs_table(), 0.95)).set_index(
        ["normaliser", "batch_size"]
    )
    assert best.loc[("none", 2)].lr == 1e-3 and best.loc[("none", 2)].edge == "lowest"
    assert best.loc[("none", 8)].lr == 1e-2 and best.loc[("none", 8)].edge == "inside"  # tie, lower rate
    assert best.loc[("batchnorm", 2)].lr == 1e-1 and best.loc[("batchnorm", 2)].edge == "highest"
    assert best.loc[("batchnorm", 8)].lr == 1e-2
    assert best.loc[("batchnorm", 8)].margin == pytest.approx(0.9533333333333333 - 0.9, abs=1e-12)
    assert best.loc[("none", 8)].margin == 0.0  # the tie
    # the test accuracy reported is the chosen rate's, though 1e-1 scores higher on test
    assert best.loc[("none", 2)].test_mean == pytest.approx(0.6, abs=1e-15)


def test_paired_differences_take_each_side_at_its_own_rate():
    runs = runs_table()
    best = lr_sweep_report.best_rates(lr_sweep_report.rate_table(runs, 0.95))
    paired = lr_sweep_report.paired_at(runs, best, "batchnorm", "none", 0.95, GAP).set_index("batch_size")
    # b 2: batch norm at 1e-1 (test 0.75, 0.85, 0.95) minus none at 1e-3 (0.5, 0.6, 0.7): +0.25 each seed
    assert paired.loc[2].gain == pytest.approx(0.25, abs=1e-12)
    assert paired.loc[2].lr_a == 1e-1 and paired.loc[2].lr_b == 1e-3
    a = [0.55, 0.65, 0.75]  # b 8: batch norm at 1e-2
    b = [0.5, 0.6, 0.7]  # none at 1e-2
    ci = sps.ttest_rel(a, b).confidence_interval(0.95) if np.ptp(np.subtract(a, b)) > 0 else None
    assert paired.loc[8].gain == pytest.approx(0.05, abs=1e-12)
    assert ci is None or paired.loc[8].ci_low == pytest.approx(ci.low)


@pytest.mark.parametrize("adjustment", ADJUSTMENTS)
def test_the_gap_familys_declaration_sets_the_level_of_the_quoted_intervals(adjustment):
    """Batch norm minus none at the chosen rates, its quoted interval (``ci_low_adj``) at the level the
    family ``lr_gap`` declares: Bonferroni over the 2 batch sizes, or the unadjusted interval; and the
    summary records it."""
    runs = runs_table()
    runs["test_accuracy"] += np.where(runs.normaliser == "batchnorm", 0.01 * runs.seed**2, 0.0)  # pairs differ
    family = declared(declared_families(adjustment), "lr_gap")
    best = lr_sweep_report.best_rates(lr_sweep_report.rate_table(runs, 0.95))
    paired = lr_sweep_report.paired_at(runs, best, "batchnorm", "none", 0.95, family).set_index("batch_size")
    d = [0.25 + 0.01 * s**2 for s in range(3)]  # b 2: batch norm at 1e-1 minus none at 1e-3, seed by seed
    level = 1 - 0.05 / 2 if adjustment == "bonferroni" else 0.95
    ci = sps.ttest_1samp(d, 0.0).confidence_interval(level)
    assert (paired.loc[2].ci_low_adj, paired.loc[2].ci_high_adj) == pytest.approx((ci.low, ci.high), abs=1e-12)
    plain = sps.ttest_1samp(d, 0.0).confidence_interval(0.95)
    assert (paired.loc[2].ci_low, paired.loc[2].ci_high) == pytest.approx((plain.low, plain.high), abs=1e-12)
    design = dict(fit_rows=8, validation_rows=2, epochs=1, grid_seeds=5)
    out = lr_sweep_report.report(runs, 1e-2, 0.95, LABELS, design, declared_families(adjustment))
    assert out["summary"]["families"] == {"lr_gap": family.record(0.95, 2)}
    assert out["summary"]["families"]["lr_gap"]["level"] == level
    tag = "adjusted" if adjustment == "bonferroni" else "unadjusted"
    assert out["macros"]["lrPairedBestSignSentence"].startswith(f"the {tag} paired intervals lie")


def test_verdict():
    assert lr_sweep_report.verdict(-0.03, -0.01) == "lies wholly below zero"
    assert lr_sweep_report.verdict(0.01, 0.03) == "lies wholly above zero"
    assert lr_sweep_report.verdict(-0.01, 0.01) == "contains zero"


def test_report_macros_and_tables_follow_the_choice():
    out = lr_sweep_report.report(
        runs_table(), 1e-2, 0.95, LABELS, dict(fit_rows=8, validation_rows=2, epochs=1, grid_seeds=5), FAMILIES
    )
    m = out["macros"]
    assert m["lrBestBatchnormBTwo"] == "$1 \\times 10^{-1}$"
    assert m["lrBestNoneBTwo"] == "$1 \\times 10^{-3}$"
    assert m["lrPairedBestMinGain"] == "+25.00"
    # batch norm ahead at the smallest batch at the grid's rate and at the chosen ones: an advantage that survives
    assert m["lrGapNoun"] == "advantage" and m["lrDeficitAnswer"] == "survives"
    assert m["lrBestBatchnormMin"] == m["lrBestBatchnormBTwo"] and m["lrBestNoneMax"] == "$1 \\times 10^{-2}$"
    assert m["lrAccGridNoneMin"] == "60.0" and m["lrAccNoneMin"] == "60.0"
    assert all(m[k].endswith("\\%]") or m[k] == ALIKE for k in m if k.startswith("lrCi"))  # ends with their %
    assert m["lrEdgeCells"] == "batch norm at batch 2 (highest) and no normaliser at batch 2 (lowest)"
    # at the grid's rate 1e-2 both sides: batch norm minus none = +0.05 every seed at b 2
    assert m["lrPairedGridMinGain"] == "+5.00"
    assert out["summary"]["best"]["none"]["8"]["lr"] == 1e-2
    header, rows, align, _ = out["tables"]["validation_table"]
    assert rows[0][:2] == ["none", "2"] and rows[0][2] == "\\textbf{92.0}"
    assert len(header) == len(align) == 5


def test_sweep_trains_on_the_fit_rows_and_scores_each_split(configured):
    from bnstudy.nets import model, train
    from bnstudy.nets.recipe import Recipe

    rng = np.random.default_rng(0)
    x = rng.random((30, 64)).astype(np.float32)
    y = np.arange(30) % 3
    fit, val = np.arange(0, 30, 3).tolist() + np.arange(1, 30, 3).tolist(), np.arange(2, 30, 3)
    fit = np.sort(np.array(fit))
    spec = model.NetSpec(normaliser="batchnorm", widths=(64, 8, 8, 10), groups=2, eps=1e-5, momentum=0.1)
    recipe = Recipe(epochs=1)
    runs, epochs = lr_sweep.sweep(spec, recipe, [4], [1e-3, 1e-1], [0, 1], x, y, fit, val, x[:6], y[:6])
    assert runs[["lr", "seed"]].values.tolist() == [[1e-3, 0], [1e-3, 1], [1e-1, 0], [1e-1, 1]]
    stacked, _ = train.train_models(spec, Recipe(epochs=1, batch_size=4, lr=1e-1), [0, 1], x[fit], y[fit])
    want = accuracy.inference_accuracy(stacked, spec, x[val], y[val])
    assert runs.validation_accuracy.tolist()[2:] == want.tolist()
    want_test = accuracy.inference_accuracy(stacked, spec, x[:6], y[:6])
    assert runs.test_accuracy.tolist()[2:] == want_test.tolist()
    assert len(epochs) == 4 and set(epochs.lr) == {1e-3, 1e-1}


@pytest.mark.parametrize(
    "key, value, words",
    [
        ("normalisers", ["batchnorm", "layernorm"], "none is missing"),
        ("lrs", [3e-4, 3e-3], "grid.lr"),
        ("first_sweep_choice", 3e-4, "first_sweep_choice: 0.0003 is not one of lr_sweep.lrs above the lowest"),
        ("first_sweep_choice", 1e-3, "first_sweep_choice: 0.001 is not one of lr_sweep.lrs above the lowest"),
    ],
)
def test_cross_field_checks_of_the_sweep(test_config, key, value, words):
    check_cross_fields(test_config)
    cfg = copy.deepcopy(test_config)
    cfg["lr_sweep"][key] = value
    with pytest.raises(ConfigError, match=words):
        check_cross_fields(cfg)


def test_sweep_normalisers_must_be_grid_normalisers(test_config):
    cfg = copy.deepcopy(test_config)
    cfg["normalisers"] = ["none", "layernorm"]
    del cfg["families"]["renorm"]  # formed only with batch renormalisation in the grid
    with pytest.raises(ConfigError, match="batchnorm is not a grid normaliser"):
        check_cross_fields(cfg)


def test_the_paper_tells_a_sweeps_history_only_where_the_config_records_it(test_config):
    """The sentence on rates added after a first sweep is the config's record (lr_sweep.first_sweep_choice),
    not a guess from the rates: the test config (1e-3 and 1e-2) has none; the paper config's names 3e-4."""
    from bnstudy.paper.design import first_sweep_macros

    assert first_sweep_macros(test_config) == {}
    cfg = copy.deepcopy(test_config)
    cfg["lr_sweep"]["first_sweep_choice"] = 1e-2
    check_cross_fields(cfg)
    assert first_sweep_macros(cfg) == {
        "lrFirstSweepSentence": "The lowest rate, $1 \\times 10^{-3}$, was added after a first sweep from "
        "$1 \\times 10^{-2}$ upwards, in which batch normalisation at batch 4 chose $1 \\times 10^{-2}$, the lowest "
        "rate then swept."
    }
    paper = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    assert first_sweep_macros(paper)["lrFirstSweepSentence"].startswith("The lowest rate, $1 \\times 10^{-4}$, was")


def test_a_grid_rate_per_batch_size_is_the_reference_of_each_batch_size_and_must_be_swept():
    import copy

    import yaml

    from bnstudy.base.config import ConfigError
    from bnstudy.studies.lr_sweep import checks
    from bnstudy.studies.lr_sweep.report import at_rate, grid_rate_words
    from bnstudy.studies.lr_sweep.sentences import lift_rows

    rates = pd.DataFrame({"normaliser": ["none"] * 4, "batch_size": [2, 2, 8, 8], "lr": [1e-4, 1e-3, 1e-4, 1e-3]})
    picked = at_rate(rates, {"2": 1e-4, "8": 1e-3})
    assert list(zip(picked.batch_size, picked.lr)) == [(2, 1e-4), (8, 1e-3)]
    assert grid_rate_words({"2": 1e-4}) == "the grid's rate of each batch size"
    assert lift_rows(0.008, 5500) == "about 44 of the 5{,}500 validation rows"
    assert lift_rows(0.001, 180).startswith("a fraction of a validation row per seed")

    config = yaml.safe_load((ROOT / "config" / "fashion-mlp.yaml").read_text())
    checks.check(config, None)
    bad = copy.deepcopy(config)
    bad["lr_sweep"]["lrs"] = [1.0e-3, 3.0e-3]
    with pytest.raises(ConfigError, match=r"grid.lr_by_batch_size\[0\].lr 0.0001 \(batch 2\) is not swept"):
        checks.check(bad, None)


def test_edge_sentence_in_each_variant():
    """No edge cell; one cell, by its margin; several, by the largest; under one validation row per
    seed a near tie, else the rows it is worth (never "n/a points" nor "about 0 rows")."""
    from bnstudy.studies.lr_sweep.sentences import edge_sentence

    assert edge_sentence([], 0.0, 898) == "No cell's chosen rate lies at an end of the swept list"
    one = edge_sentence(["no normaliser at batch 64 (highest)"], 0.00001, 898)
    assert "no normaliser at batch 64 (highest); there the chosen rate beats the next best by 0.001 points" in one
    assert "(less than one of the 898 validation rows per seed: a near tie)" in one
    two = edge_sentence(["batch norm at batch 2 (lowest)", "no normaliser at batch 64 (highest)"], 0.02, 5500)
    assert "by at most 2.00 points" in two and "(about 110 of the 5{,}500 validation rows per seed)" in two
    assert "n/a" not in one + two and "about 0 " not in one + two


def _paired(rows):
    return pd.DataFrame(
        [dict(batch_size=b, gain=g, ci_low_adj=lo, ci_high_adj=hi, family=len(rows)) for b, g, lo, hi in rows]
    )


def test_a_difference_the_chosen_and_the_grids_rates_share_is_said_once():
    """Where the chosen rates are the grid's at the smallest batch (the same networks, so the same
    difference and interval), the paper gives the number once; and a verdict that holds at both rates
    is one sentence, not the same clause twice."""
    same = _paired([(2, -0.19, -0.67, 0.29), (8, 0.01, -0.02, 0.03)])
    m = lr_sweep_report.paired_macros(same, same.copy(), GAP)
    assert (
        m["lrPairedMinBoth"]
        == "$-19.00$ points $[-67.00, +29.00]$ at the chosen rates, which at this batch size are the grid's"
    )
    assert m["lrSignSentences"].startswith("At the chosen rates and at \\lrGridRate{} alike, ")
    assert m["lrSignSentences"].count("contain") == 1
    other = _paired([(2, -0.10, -0.20, -0.01), (8, 0.01, -0.02, 0.03)])
    m = lr_sweep_report.paired_macros(same, other, GAP)
    assert m["lrPairedMinBoth"] == (
        "$-19.00$ points $[-67.00, +29.00]$ at the chosen rates and $-10.00$ points $[-20.00, -1.00]$ at \\lrGridRate{}"
    )
    assert m["lrSignSentences"].startswith("At the chosen rates ") and "; at \\lrGridRate{} " in m["lrSignSentences"]


@pytest.mark.parametrize("adjustment", ADJUSTMENTS)
def test_the_sign_sentences_name_the_intervals_as_the_gap_family_is_declared(adjustment):
    """Under either declaration of ``lr_gap`` the sentences name the intervals by its tag, and only so."""
    from test_sentences import problems

    family = declared(declared_families(adjustment), "lr_gap")
    best = _paired([(2, -0.19, -0.67, -0.01), (8, 0.01, -0.02, 0.03)])
    grid = _paired([(2, -0.10, -0.20, 0.01), (8, 0.01, 0.005, 0.03)])
    m = lr_sweep_report.paired_macros(best, grid, family)
    tag = {"bonferroni": "adjusted", "unadjusted": "unadjusted"}[adjustment]
    assert m["lrSignSentences"] == (
        f"At the chosen rates the {tag} paired intervals lie wholly below zero at batch 2, and contain zero at the "
        f"other batch size; at \\lrGridRate{{}} the {tag} paired intervals lie wholly above zero at batch 8, and "
        "contain zero at the other batch size"
    )
    assert ("unadjusted" in m["lrSignSentences"]) == (adjustment == "unadjusted") and not problems(m["lrSignSentences"])


FAMILY_USES = {  # family -> its members in the test config, the sections that name its intervals
    "lr_gap": (2, ("lr_sweep.tex", "abstract.tex")),
    "lr_margin": (4, ("lr_sweep.tex",)),
    "precise_rows": (3, ("precise_rows.tex",)),
    "remedies": (2, ("precise_rows.tex",)),
    "equal_steps": (2, ("equal_steps.tex",)),
}


@pytest.mark.parametrize("adjustment", ADJUSTMENTS)
def test_the_sections_name_each_familys_intervals_as_declared(adjustment):
    """The static text of the learning-rate, budget and equal-steps sections (and the abstract) words
    each family's intervals only through its macros (``\\family<Name>Phrase``, ``...Tag``), and reads
    under either declaration: no grammar fault, no nested parentheses, and no claim of an adjustment
    (or of intervals holding together) where the family is declared unadjusted."""
    from bnstudy.paper.families import macros
    from test_sentences import in_place, problems

    families = declared_families(adjustment)
    for name, (members, sections) in FAMILY_USES.items():
        family = declared(families, name)
        m = macros([(family, family.record(0.95, members))])
        uses = 0
        for section in sections:
            for key in (k for k in m if k.endswith(("Phrase", "Tag"))):
                for window in in_place(section, key, m[key]):
                    uses += 1
                    assert not problems(window), (section, key, window)
                    if adjustment == "unadjusted":
                        assert "Bonferroni" not in window and "hold together" not in window, (section, window)
        assert uses, name
    sections = "".join((ROOT / "paper" / "sections" / s).read_text() for s in ("lr_sweep.tex", "precise_rows.tex"))
    sections += (ROOT / "paper" / "sections" / "equal_steps.tex").read_text()
    assert "Bonferroni" not in sections and "not adjusted for" not in sections  # the words come from the families


def test_the_result_paragraph_gives_each_test_accuracy_its_unit():
    """The accuracies of the Result paragraph are percentages: each macro followed by its ``\\%``
    (the macros stay plain numbers, as pinned), each interval's ends carrying theirs."""
    from pathlib import Path

    section = (Path(__file__).resolve().parents[2] / "paper/sections/lr_sweep.tex").read_text()
    for name in ("lrAccBatchnormMin", "lrAccNoneMin", "lrAccGridBatchnormMin", "lrAccGridNoneMin"):
        assert f"\\{name}\\%" in section and f"\\{name}{{}}" not in section and f"\\{name}." not in section
