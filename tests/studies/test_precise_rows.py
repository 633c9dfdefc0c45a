"""PreciseBN on a budget (bnstudy.studies.precise_rows): the batches a budget pools, its arms against
the remedies' and the grid's own numbers, the summary against SciPy, the running averages' verdict
the batch-size study's adjusted one, every generated clause, the config check, and the test config's
build against the batch-size study's files."""

import itertools
import math
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from batch_size_families import ADJUSTED
from bnstudy.base.config import ConfigError, parts
from bnstudy.evaluation import accuracy as scores
from bnstudy.evaluation import recompute
from bnstudy.evaluation.families import declared
from bnstudy.paper import latex
from bnstudy.studies.batch_size import evaluation, paired
from bnstudy.studies.batch_size import macros as batch_size_macros
from bnstudy.studies.precise_rows import checks, report, science
from conftest import hashed_outputs
from test_lr_sweep import ADJUSTMENTS, FAMILIES, declared_families
from test_remedies import SPEC, _data, _trained_stack
from test_sentences import in_place, problems

SETTINGS = {"budgets": [8, 16], "replicates": 2, "seed": 3, "last_batch": "drop"}
FAMILY, REMEDIES = declared(FAMILIES, "precise_rows"), declared(FAMILIES, "remedies")  # none; Bonferroni
NOTE = report.intervals(REMEDIES, FAMILY, 2, [8, 16])


def _split():
    x, y = _data(41, seed=0)
    x_test, y_test = _data(30, seed=1)
    return {"x_train": x, "y_train": y, "x_test": x_test, "y_test": y_test}


def test_a_budget_pools_the_first_batches_of_its_pass_and_the_whole_pass_is_the_remedies():
    y = _data()[1]
    whole = recompute.pass_batches(y, 4, 5, "drop")
    first = science.budget_batches(y, 4, 12, 5, "drop")
    assert [b.tolist() for b in first] == [b.tolist() for b in whole[:3]]
    assert [b.tolist() for b in science.budget_batches(y, 4, science.ALL, 5, "drop")] == [b.tolist() for b in whole]
    assert [b.tolist() for b in science.budget_batches(y, 4, 12, 6, "drop")] != [b.tolist() for b in first]
    for rows in (3, 4 * (len(whole) + 1)):
        with pytest.raises(ValueError, match="batches of 4"):
            science.budget_batches(y, 4, rows, 5, "drop")


def test_the_arms_in_order_replicates_from_consecutive_seeds_and_no_budget_below_one_batch():
    assert science.arms([16, 8], 2, 3, 8) == [
        ("ema", 0, 0, 3), ("exact", 0, 0, 3), ("rows", 8, 0, 3), ("rows", 8, 1, 4), ("rows", 16, 0, 3),
        ("rows", 16, 1, 4), ("rows", science.ALL, 0, 3),
    ]  # fmt: skip
    assert science.arms([16, 8], 1, 0, 16) == [
        ("ema", 0, 0, 0), ("exact", 0, 0, 0), ("rows", 16, 0, 0), ("rows", science.ALL, 0, 0)
    ]  # fmt: skip


def test_every_arm_scores_as_the_stack_and_the_remedies_do():
    stacked, data = _trained_stack(seeds=(0, 1)), _split()
    rows = pd.DataFrame(science.evaluate(stacked, SPEC, [0, 1], data, 4, SETTINGS))
    assert len(rows) == 2 * (2 + 2 * 2 + 1)
    ema = rows[rows.arm == "ema"].sort_values("seed")
    assert ema.accuracy.tolist() == scores.inference_accuracy(stacked, SPEC, data["x_test"], data["y_test"]).tolist()
    accuracy, _ = evaluation.remedy_rows(stacked, SPEC, [0, 1], *data.values(), 4, 3)
    by_mode = pd.DataFrame(accuracy).set_index(["mode", "seed"]).accuracy
    whole = rows[rows.rows == "all"].sort_values("seed")
    assert whole.accuracy.tolist() == [by_mode["precise_bn", s] for s in (0, 1)]
    assert rows[rows.arm == "exact"].accuracy.tolist() == [by_mode["exact", s] for s in (0, 1)]
    assert (rows[rows.arm == "exact"][["mean_distance", "var_distance"]] == 0).all().all()
    assert rows[rows.rows == "8"].rows_used.unique().tolist() == [8]
    assert whole.rows_used.unique().tolist() == [40]  # 41 rows in batches of 4, the last row dropped
    # a budget's statistics: the pooled moments of its batches (replicate 1: the pass of seed 4)
    stats8 = recompute.precise_statistics(
        stacked, SPEC, data["x_train"], science.budget_batches(data["y_train"], 4, 8, 4, "drop")
    )
    hits = scores.inference_correct(recompute.with_statistics(stacked, stats8), SPEC, data["x_test"], data["y_test"])
    got = rows[(rows.rows == "8") & (rows.replicate == 1)].sort_values("seed").accuracy.tolist()
    assert got == scores.share(hits).tolist()


def _rows(gaps: dict, seeds=(0, 1, 2), replicates=2) -> pd.DataFrame:
    """Rows of one batch size whose accuracy is 0.8 for exact and 0.8 + gap (+- 0.01 over replicates,
    + 0.002 * seed) for the others."""
    out = []
    for s in seeds:
        out.append({"batch_size": 4, "seed": s, "arm": "exact", "rows": "0", "rows_used": 40, "replicate": 0,
                    "accuracy": 0.8, "mean_distance": 0.0, "var_distance": 0.0})  # fmt: skip
        for key, gap in gaps.items():
            arm = "ema" if key == "ema" else "rows"
            reps = replicates if key not in ("ema", "all") else 1
            for r in range(reps):
                wobble = 0.01 * (1 if r else -1) if reps > 1 else 0.0
                out.append({"batch_size": 4, "seed": s, "arm": arm, "rows": "0" if arm == "ema" else key,
                            "rows_used": 0 if arm == "ema" else (40 if key == "all" else int(key)), "replicate": r,
                            "accuracy": 0.8 + gap + wobble + 0.002 * s, "mean_distance": 0.1 * (r + 1),
                            "var_distance": 0.2})  # fmt: skip
    return pd.DataFrame(out)


def test_cells_average_replicates_then_pair_by_seed_as_scipy_does():
    table = report.cells(
        report.per_seed(_rows({"ema": -0.01, "8": -0.05, "16": 0.0, "all": 0.01})), [8, 16], 0.95, FAMILY
    )
    assert table.key.tolist() == ["ema", "8", "16", "all"]
    eight = table[table.key == "8"].iloc[0]
    diffs = np.array([-0.05 + 0.002 * s for s in (0, 1, 2)])
    assert eight.gap == pytest.approx(diffs.mean(), abs=1e-12)
    half = stats.t.ppf(0.975, 2) * diffs.std(ddof=1) / math.sqrt(3)
    assert (eight.ci_low, eight.ci_high) == pytest.approx((diffs.mean() - half, diffs.mean() + half), abs=1e-12)
    assert eight.vs_ema == pytest.approx(-0.04, abs=1e-12)
    assert eight.mean_distance == pytest.approx(0.15, abs=1e-12)  # mean over the two replicates
    assert eight.rows_used == 8 and eight.seeds == 3


def _t_interval(d: np.ndarray, confidence: float) -> tuple[float, float]:
    half = stats.t.ppf(1 - (1 - confidence) / 2, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    return d.mean() - half, d.mean() + half


def _gains(rows: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """The batch-size study's paired summary (gains.csv) for the networks of ``rows``, by SciPy: per batch
    size the exact statistics' accuracy minus the running averages' (exact_vs_ema), its t interval and the
    Bonferroni-adjusted one over the batch sizes of ``rows``; and a row of another comparison, to be left alone."""
    sizes = sorted(int(b) for b in set(rows.batch_size))
    out = []
    for b in sizes:
        at = rows[rows.batch_size == b]
        d = at[at.arm == "exact"].sort_values("seed").accuracy.to_numpy() - (
            at[at.arm == "ema"].sort_values("seed").accuracy.to_numpy()
        )
        lo, hi = _t_interval(d, confidence)
        lo_adj, hi_adj = _t_interval(d, 1 - (1 - confidence) / len(sizes))
        out.append({"comparison": "exact_vs_ema", "batch_size": b, "seeds": len(d), "gain": d.mean(), "ci_low": lo,
                    "ci_high": hi, "family": len(sizes), "ci_low_adj": lo_adj, "ci_high_adj": hi_adj})  # fmt: skip
    out.append(out[0] | {"comparison": "precise_bn_vs_ema", "gain": 0.5, "ci_low_adj": 0.4, "ci_high_adj": 0.6})
    return pd.DataFrame(out)


def test_the_running_averages_take_the_batch_size_studys_adjusted_interval_sign_reversed():
    rows = pd.concat([_rows({"ema": -0.01, "8": -0.05, "16": 0.0, "all": 0.01}),
                      _rows({"ema": 0.03, "8": -0.05, "16": 0.0, "all": 0.01}).assign(batch_size=8)])  # fmt: skip
    table = report.adjusted(report.cells(report.per_seed(rows), [8, 16], 0.95, FAMILY), _gains(rows))
    ema = table[table.key == "ema"].set_index("batch_size")
    for b in (4, 8):
        d = np.array([-0.01 if b == 4 else 0.03] * 3) + np.array([0.0, 0.002, 0.004])  # running minus exact
        # family 2 (two batch sizes): each interval at 97.5 %, the t quantile of 0.9875 on 2 degrees of freedom
        lo, hi = _t_interval(d, 0.975)
        assert (ema.ci_low_adj[b], ema.ci_high_adj[b]) == pytest.approx((lo, hi), abs=1e-12)
        assert ema.family[b] == 2
        assert (ema.ci_low[b], ema.ci_high[b]) == pytest.approx(_t_interval(d, 0.95), abs=1e-12)  # kept, unprinted
    others = table[table.key != "ema"]
    assert (others.family == 1).all()
    assert others.ci_low_adj.tolist() == others.ci_low.tolist()
    assert others.ci_high_adj.tolist() == others.ci_high.tolist()


@pytest.mark.parametrize("adjustment", ADJUSTMENTS)
def test_the_budgets_take_the_level_their_family_declares_and_say_so(adjustment):
    """The budgets' and the whole pass's intervals (``ci_low_adj``, ``ci_high_adj``) at the level the family
    ``precise_rows`` declares, its members the 2 budgets and the whole pass: Bonferroni over 3, or
    unadjusted; the unadjusted ones kept beside them; the generated words, the table's and the summary's,
    name them as declared, the running averages' as the family ``remedies`` is declared."""
    families = declared_families(adjustment)
    family, remedies = declared(families, "precise_rows"), declared(families, "remedies")
    rows = pd.concat([_rows({"ema": -0.01, "8": -0.05, "16": 0.0, "all": 0.01}),
                      _rows({"ema": 0.03, "8": -0.05, "16": 0.0, "all": 0.01}).assign(batch_size=8)])  # fmt: skip
    table = report.adjusted(report.cells(report.per_seed(rows), [8, 16], 0.95, family), _gains(rows))
    level = 1 - 0.05 / 3 if adjustment == "bonferroni" else 0.95
    for key, gap in (("8", -0.05), ("16", 0.0), ("all", 0.01)):
        r = table[(table.key == key) & (table.batch_size == 4)].iloc[0]
        d = gap + np.array([0.0, 0.002, 0.004])
        assert (r.ci_low_adj, r.ci_high_adj) == pytest.approx(_t_interval(d, level), abs=1e-12)
        assert (r.ci_low, r.ci_high) == pytest.approx(_t_interval(d, 0.95), abs=1e-12)
        assert r.family == (3 if adjustment == "bonferroni" else 1)
    note = report.intervals(remedies, family, 2, [8, 16])
    phrase = {"bonferroni": "Bonferroni-adjusted over the 3 budgets", "unadjusted": "unadjusted (exploratory)"}[
        adjustment
    ]
    ema_phrase = {"bonferroni": "Bonferroni-adjusted over the 2 batch sizes", "unadjusted": "unadjusted (exploratory)"}
    assert note == (
        "the running averages' interval is the batch-size study's exact_vs_ema (exact minus running averages), "
        f"{ema_phrase[adjustment]}, sign reversed; the others are {phrase}"
    )
    header, _, _, comment = report.latex_table(table, [8, 16], note, remedies.tag)
    assert header[1] == f"running averages ({remedies.tag})" and comment.endswith(note)
    summary = report.summary_json(table, [8, 16], 2, 3, 0.95, note, family)
    assert summary["intervals"] == note and summary["families"] == {"precise_rows": family.record(0.95, 3)}
    assert summary["families"]["precise_rows"]["level"] == level
    sentence = report.macros(table, [8, 16], 2, 3, family)["preciseRowsAbstractSentence"]
    assert f"the {family.tag} paired interval" in sentence and not problems(sentence)
    assert ("unadjusted" in sentence) == (adjustment == "unadjusted")


def test_the_running_averages_refuse_a_batch_size_study_of_other_networks():
    rows = _rows({"ema": -0.01, "8": -0.05, "16": 0.0, "all": 0.01})
    table = report.cells(report.per_seed(rows), [8, 16], 0.95, FAMILY)
    gains = _gains(rows)
    report.adjusted(table, gains)  # the same networks: no complaint
    shifted = gains.assign(gain=gains.gain + 0.001)
    with pytest.raises(ValueError, match="batch 4: the batch-size study's exact_vs_ema .* sign reversed"):
        report.adjusted(table, shifted)
    with pytest.raises(ValueError, match="batch 4: the batch-size study's exact_vs_ema"):
        report.adjusted(table, gains.assign(seeds=5))
    with pytest.raises(ValueError, match="batch 4: the batch-size study has no exact_vs_ema row"):
        report.adjusted(table, gains[gains.comparison != "exact_vs_ema"])


# exact minus running averages per batch size: the mean in units of W, each seed's value W * (-2 .. 2) off it
W = 0.004
SIDES = {  # batch size: (mean / W, the adjusted verdict of exact minus running averages)
    2: (2.5, "contains zero"),  # the unadjusted interval lies wholly above zero, the adjusted one does not
    4: (6.0, "lies wholly above zero"),
    8: (-6.0, "lies wholly below zero"),
    16: (0.0, "contains zero"),
}
MIRROR = {"lies wholly above zero": "lies wholly below zero", "lies wholly below zero": "lies wholly above zero",
          "contains zero": "contains zero"}  # fmt: skip


def _one_family():
    """The same 5 networks per batch size as both studies see them: the budget study's evaluation rows
    and the batch-size study's per-seed pairs (exact statistics A, running averages B)."""
    rows, pairs = [], []
    for b, (mean, _) in SIDES.items():
        for s, k in enumerate((-2, -1, 0, 1, 2)):
            exact, ema = 0.9, 0.9 - W * (mean + k)
            for arm, rows_, used, acc in (("ema", "0", 0, ema), ("exact", "0", 40, exact), ("rows", "16", 16, 0.9),
                                          ("rows", "all", 40, 0.9)):  # fmt: skip
                rows.append({"batch_size": b, "seed": s, "arm": arm, "rows": rows_, "rows_used": used, "replicate": 0,
                             "accuracy": acc, "mean_distance": 0.0, "var_distance": 0.0})  # fmt: skip
            pairs.append({"comparison": "exact_vs_ema", "batch_size": b, "seed": s, "accuracy_a": exact,
                          "accuracy_b": ema, "rows": 100, "a_only": 3, "b_only": 1, "net_rows": 2,
                          "mcnemar_p": 0.5})  # fmt: skip
    return pd.DataFrame(rows), pd.DataFrame(pairs)


def test_one_comparison_one_verdict_the_budget_study_and_the_batch_size_study_agree_at_every_batch_size():
    """The running averages' verdict in the budget section is the mirror of the batch-size study's
    adjusted verdict of exact minus running averages, batch size by batch size: below zero where it
    is above, above where it is below, holding zero where it holds zero (every verdict rendered)."""
    rows, pairs = _one_family()
    gains = paired.summarise(pairs, 0.95, ADJUSTED)  # the batch-size study's own family (gains.csv)
    table = report.adjusted(report.cells(report.per_seed(rows), [16], 0.95, FAMILY), gains)
    ema = table[table.key == "ema"].set_index("batch_size")
    theirs = gains.set_index("batch_size")
    for b, (_, said) in SIDES.items():
        assert latex.verdict(theirs.ci_low_adj[b], theirs.ci_high_adj[b]) == said
        assert latex.verdict(ema.ci_low_adj[b], ema.ci_high_adj[b]) == MIRROR[said], b
    # at batch 2 the unadjusted interval alone would give another verdict: the adjusted one is quoted
    assert latex.verdict(ema.ci_low[2], ema.ci_high[2]) == "lies wholly below zero"
    # the section's words, and the batch-size study's
    m = report.macros(table, [16], 1, 0, FAMILY)
    text = m["preciseRowsEmaVsExact"]
    assert (
        text
        == "lies wholly above zero at batch 8, lies wholly below zero at batch 4, and contains zero at batches 2 and 16"
    )
    assert m["preciseRowsEmaFamily"] == "4"
    theirs_m = batch_size_macros.interval_sign_macros(gains, ADJUSTED)
    assert (
        theirs_m["pairedExactVsEmaAboveSizes"] == "at batch 4"
        and theirs_m["pairedExactVsEmaBelowSizes"] == "at batch 8"
    )
    for window in in_place("precise_rows.tex", "preciseRowsEmaVsExact", text):
        assert not problems(window), window
    # the table prints the batch-size study's adjusted ends, negated, in the running averages' column
    header, body, _, comment = report.latex_table(
        table, [16], report.intervals(REMEDIES, FAMILY, 4, [16]), REMEDIES.tag
    )
    assert header[1] == "running averages (adjusted)" and "Bonferroni-adjusted" in comment
    for line in body:
        g = theirs.loc[int(line[0])]
        ends = f"[{latex.signed_points(-g.ci_high_adj)}, {latex.signed_points(-g.ci_low_adj)}]"
        assert line[1] == f"${latex.signed_points(-g.gain)}$ ${ends}$", line


def test_cells_refuse_a_statistic_missing_a_seed():
    rows = _rows({"ema": 0.0, "8": 0.0, "16": 0.0, "all": 0.0})
    rows = rows[~((rows.rows == "16") & (rows.seed == 2))]
    with pytest.raises(ValueError, match="batch 4, 16: seeds"):
        report.cells(report.per_seed(rows), [8, 16], 0.95, FAMILY)


def test_the_sides_clause_in_every_variant():
    assert report.sides_clause({"above": [], "below": ["2"], "neither": ["4", "8"]}) == (
        "lies wholly below zero at batch 2, and contains zero at batches 4 and 8"
    )
    assert report.sides_clause({"above": ["2"], "below": ["4"], "neither": ["8"]}) == (
        "lies wholly above zero at batch 2, lies wholly below zero at batch 4 and contains zero at batch 8"
    )
    assert report.sides_clause({"above": [], "below": [], "neither": ["2", "4"]}) == "contains zero at batches 2 and 4"
    # where a list of batch sizes has its own "and", the clauses are set apart by a comma
    assert report.sides_clause({"above": ["2"], "below": ["4", "32", "64"], "neither": ["8", "16"]}) == (
        "lies wholly above zero at batch 2, lies wholly below zero at batches 4, 32 and 64, and contains zero "
        "at batches 8 and 16"
    )
    for above, below, neither in itertools.product(([], ["2"], ["2", "4"]), ([], ["8"], ["8", "16"]), ([], ["32"])):
        if not (above or below or neither):
            continue
        text = report.sides_clause({"above": above, "below": below, "neither": neither})
        assert not problems("Its interval " + text + "."), text
        lists = any(len(x) > 1 for x in (above, below, neither))
        assert not (lists and re.search(r"\d and (lies|contains)", text)), text  # "4 and 8, and contains"


def test_macros_read_from_the_table_and_a_range_of_one_value():
    rows = pd.concat([_rows({"ema": -0.01, "8": -0.05, "16": 0.0, "all": 0.01}),
                      _rows({"ema": 0.03, "8": -0.05, "16": 0.0, "all": 0.01}).assign(batch_size=8)])  # fmt: skip
    table = report.adjusted(report.cells(report.per_seed(rows), [8, 16], 0.95, FAMILY), _gains(rows))
    m = report.macros(table, [8, 16], 2, 3, FAMILY)
    assert m["preciseRowsBudgets"] == "8 and 16" and m["preciseRowsSeeds"] == "3 and 4"
    assert m["preciseRowsEmaFamily"] == "2"
    assert m["preciseRowsSmallestGaps"] == "$-4.80$ points"  # -5 + 0.2 (the mean seed's 0.002)
    assert m["preciseRowsEmaGaps"] == "from $-0.80$ to $+3.20$ points"
    assert m["preciseRowsSmallestVsExact"] == "lies wholly below zero at batches 4 and 8"
    assert m["preciseRowsEmaVsExact"] == "lies wholly above zero at batch 8 and lies wholly below zero at batch 4"
    # the whole pass has its verdict too, from its own interval at the family's level
    assert m["preciseRowsAllGaps"] == "$+1.20$ points"
    assert m["preciseRowsAllVsExact"] == "lies wholly above zero at batches 4 and 8"
    for window in in_place("precise_rows.tex", "preciseRowsAllVsExact", m["preciseRowsAllVsExact"]):
        assert not problems(window), window
    # 8 rows lie below the exact statistics at both batch sizes, 16 rows (0 + 0.002 a seed) at neither
    assert m["preciseRowsAbstractSentence"] == (
        "With statistics recomputed by PreciseBN from 16 training rows, inference-mode accuracy minus that with "
        "the exact statistics is $+0.20$ points and the unadjusted paired interval contains zero at batches 4 "
        "and 8; with 8 "
        "rows it lies wholly below zero at batches 4 and 8"
    )
    header, body, align, _ = report.latex_table(table, [8, 16], NOTE, REMEDIES.tag)
    assert header == ["batch", "running averages (adjusted)", "8 rows", "16 rows", "whole pass"]
    assert [r[0] for r in body] == ["4", "8"] and align == "rllll"
    assert body[0][2].startswith("$-4.80$ $[")


def test_a_budget_below_a_batch_size_is_left_out_there_and_said_so():
    rows = pd.concat([_rows({"ema": 0.0, "8": -0.05, "16": 0.0, "all": 0.0}),
                      _rows({"ema": 0.0, "16": -0.01, "all": 0.0}).assign(batch_size=16)])  # fmt: skip
    table = report.adjusted(report.cells(report.per_seed(rows), [8, 16], 0.95, FAMILY), _gains(rows))
    assert table[table.batch_size == 16].key.tolist() == ["ema", "16", "all"]
    _, body, _, _ = report.latex_table(table, [8, 16], NOTE, REMEDIES.tag)
    assert body[1][2] == "--" and body[1][3].startswith("$-0.80$")  # -1 + 0.2: the seeds' 0.002 * seed
    m = report.macros(table, [8, 16], 1, 0, FAMILY)
    assert m["preciseRowsSmallestGaps"] == "$-4.80$ points"
    assert m["preciseRowsSmallestOver"] == "training batches 4 (the batch sizes of which it holds at least one batch)"
    same = _rows({"ema": 0.0, "8": 0.0, "16": 0.0, "all": 0.0})
    full = report.macros(
        report.adjusted(report.cells(report.per_seed(same), [8, 16], 0.95, FAMILY), _gains(same)),
        [8, 16],
        1,
        0,
        FAMILY,
    )
    assert full["preciseRowsSmallestOver"] == "the training batch sizes"


def _config(**changes):
    cfg = {"normalisers": ["none", "batchnorm"], "grid": {"batch_sizes": [2, 4, 16]},
           "split": {"test_size": 899, "seed": 0},
           "precise_rows": {"rows": [16, 64], "replicates": 2, "seed": 0}}  # fmt: skip
    cfg["precise_rows"] |= changes
    return cfg


@pytest.mark.parametrize(
    "changes, normalisers, message",
    [
        ({"rows": [64, 16]}, None, r"precise_rows.rows: \[64, 16\] is not increasing"),
        (
            {"rows": [1, 24]},
            None,
            r"precise_rows.rows\[0\]: 1 is less than one batch of every grid batch size "
            r"\(the smallest is 2\)",
        ),
        ({"rows": [16, 912]}, None, r"precise_rows.rows\[1\]: 912 is more than the 898 training rows"),
        ({}, ["none", "layernorm"], "the grid's normalisers do not include batchnorm"),
    ],
)
def test_the_config_check_names_the_key(changes, normalisers, message):
    cfg = _config(**changes)
    if normalisers:
        cfg["normalisers"] = normalisers
    with pytest.raises(ConfigError, match=message):
        checks.check(cfg, parts(cfg))


def test_a_good_section_passes_the_check():
    cfg = _config()
    checks.check(cfg, parts(cfg))


@pytest.mark.pipeline
def test_the_builds_running_averages_and_whole_pass_are_the_grids_and_the_remedies_numbers(runs):
    files = [f"results/precise_rows/b{b}_seeds0-1.csv" for b in (4, 16)]
    files += [f"results/batch_size/remedies/batchnorm_b{b}_seeds0-1.csv" for b in (4, 16)]
    files += [f"results/batch_size/cells/batchnorm_b{b}_seeds0-1.csv" for b in (4, 16)]
    root = hashed_outputs(runs, files).parent
    for b in (4, 16):
        ours = pd.read_csv(root / files[0 if b == 4 else 1])
        remedy = pd.read_csv(root / f"results/batch_size/remedies/batchnorm_b{b}_seeds0-1.csv").set_index(
            ["mode", "seed"]
        )
        grid = pd.read_csv(root / f"results/batch_size/cells/batchnorm_b{b}_seeds0-1.csv")
        grid = grid[grid["mode"] == "inference"].set_index("seed").accuracy
        for s in (0, 1):
            at = ours[ours.seed == s]
            assert at[at.rows.astype(str) == "all"].accuracy.item() == remedy.accuracy["precise_bn", s]
            assert at[at.arm == "exact"].accuracy.item() == remedy.accuracy["exact", s]
            assert at[at.arm == "ema"].accuracy.item() == grid[s]
        assert sorted(set(ours[ours.arm == "rows"].rows.astype(str))) == ["16", "64", "all"]
