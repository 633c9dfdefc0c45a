"""Study 2's paired comparisons: paired t interval and exact McNemar test against SciPy and by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from batch_size_families import ADJUSTED
from bnstudy.evaluation import paired as pairing
from bnstudy.studies.batch_size import paired
from bnstudy.studies.batch_size import summary as batch_size_summary


def test_paired_interval_is_scipys_paired_t_interval():
    a = [0.91, 0.87, 0.95, 0.90, 0.88]
    b = [0.89, 0.88, 0.90, 0.86, 0.87]
    r = pairing.paired_interval(a, b, 0.95)
    ci = sps.ttest_rel(a, b).confidence_interval(0.95)
    assert r["gain"] == pytest.approx(np.mean(np.subtract(a, b)), abs=1e-15)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx((ci.low, ci.high), abs=1e-12)


def test_paired_interval_is_narrower_than_welch_when_seeds_share_their_luck():
    a = [0.80, 0.90, 0.85, 0.95]
    b = [0.79, 0.88, 0.84, 0.93]  # the same seed effect plus a small constant gain
    r = pairing.paired_interval(a, b, 0.95)
    welch = sps.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert r["ci_low"] > 0 and welch.low < 0


def test_mcnemar_counts_discordant_rows_and_matches_binomtest():
    a = np.array([1, 1, 1, 0, 0, 1, 1, 0, 1, 1], bool)
    b = np.array([1, 0, 0, 1, 0, 0, 0, 0, 1, 0], bool)
    a_only, b_only, p = pairing.mcnemar(a, b)
    assert (a_only, b_only) == (5, 1)
    # by hand: P(X <= 1 or X >= 5), X ~ Bin(6, 1/2) = 2 * (1 + 6) / 64
    assert p == pytest.approx(14 / 64, abs=1e-12)
    assert p == pytest.approx(sps.binomtest(5, 6, 0.5).pvalue, rel=1e-11)


def test_mcnemar_without_discordant_rows_has_p_one():
    a = np.array([1, 0, 1], bool)
    assert pairing.mcnemar(a, a) == (0, 0, 1.0)


def test_net_rows_are_the_accuracy_difference_times_the_rows():
    rng = np.random.default_rng(0)
    n, seeds = 50, [0, 1, 2]
    rows, runs = [], []
    for norm in ("batchnorm", "none"):
        for s in seeds:
            c = rng.integers(0, 2, n)
            rows += [
                {"normaliser": norm, "batch_size": 4, "seed": s, "mode": "inference", "row": i, "correct": int(v)}
                for i, v in enumerate(c)
            ]
            runs.append(
                {"normaliser": norm, "batch_size": 4, "seed": s, "mode": "inference", "accuracy": int(c.sum()) / n}
            )
    runs, correct = pd.DataFrame(runs), pd.DataFrame(rows)
    per_seed = paired.per_seed(runs, correct)
    assert list(per_seed.comparison.unique()) == ["batchnorm_vs_none"]
    for r in per_seed.itertuples():
        assert r.net_rows == round((r.accuracy_a - r.accuracy_b) * n)
    summary = paired.summarise(per_seed, 0.95, ADJUSTED)
    assert summary.iloc[0]["a_only"] == per_seed.a_only.sum()


def test_standard_error_of_difference_uses_each_cells_own_sd():
    assert batch_size_summary.standard_error_of_difference(0.03, 0.04, 3) == pytest.approx(0.05 / np.sqrt(3))


def test_networks_trained_with_leftover_rows_kept_pair_with_the_grids_by_seed():
    n = 4
    grid = [
        {"normaliser": "batchnorm", "batch_size": 64, "seed": 0, "mode": "inference", "row": i, "correct": c}
        for i, c in enumerate([1, 1, 0, 0])
    ]
    keep = pd.DataFrame([r | {"correct": c} for r, c in zip(grid, [1, 0, 1, 1])])
    correct = pd.concat([pd.DataFrame(grid), batch_size_summary.kept(keep)], ignore_index=True)
    runs = pd.DataFrame(
        [
            {"normaliser": "batchnorm", "batch_size": 64, "seed": 0, "mode": m, "accuracy": a / n}
            for m, a in (("inference", 2), ("inference_keep", 3))
        ]
    )
    r = paired.per_seed(runs, correct).set_index("comparison").loc["batchnorm_keep_vs_drop"]
    assert (r.a_only, r.b_only, r.net_rows) == (2, 1, 1)


def test_mcnemar_reads_0_1_numbers_as_correct_and_wrong():
    """Any 0/1 vector is a vector of correct rows: integers, floats (a column read back with a
    missing value becomes float), lists, not only booleans."""
    a = np.array([1, 1, 1, 0, 0, 1, 1, 0, 1, 1])
    b = np.array([1, 0, 0, 1, 0, 0, 0, 0, 1, 0])
    expected = pairing.mcnemar(a.astype(bool), b.astype(bool))
    assert expected[:2] == (5, 1)
    assert pairing.mcnemar(a, b) == expected
    assert pairing.mcnemar(a.astype(float), b.astype(float)) == expected
    assert pairing.mcnemar(list(b.astype(float)), list(a.astype(float)))[:2] == (1, 5)


def test_summary_keeps_the_comparisons_in_the_order_they_come():
    """Rows follow the order of the comparisons in the per-seed table (the paper's table order),
    not an alphabetical or numeric sort, and each row pools its seeds whatever their order."""
    rows = []
    for name, b in [("exact_vs_ema", 16), ("batchnorm_vs_none", 2), ("exact_vs_ema", 4)]:
        for seed, (acc_a, acc_b) in [(1, (0.9, 0.8)), (0, (0.7, 0.75))]:
            rows.append(
                dict(
                    comparison=name,
                    batch_size=b,
                    seed=seed,
                    accuracy_a=acc_a,
                    accuracy_b=acc_b,
                    a_only=3,
                    b_only=1,
                    net_rows=2,
                    mcnemar_p=0.5,
                )
            )
    out = paired.summarise(pd.DataFrame(rows), 0.95, ADJUSTED)
    assert list(zip(out.comparison, out.batch_size)) == [
        ("exact_vs_ema", 16),
        ("batchnorm_vs_none", 2),
        ("exact_vs_ema", 4),
    ]
    assert out.gain.tolist() == pytest.approx([0.025] * 3, abs=1e-12)
    assert out.a_only.tolist() == [6, 6, 6]


def test_mcnemar_p_is_the_exact_binomial_tail_rounded_once():
    """The p-value as an exact fraction (twice the smaller tail over 2**n, at most 1), rounded
    once: the same float on every machine, and scipy's binomtest to its own rounding."""
    from fractions import Fraction

    def tail(n, small):  # sum of C(n, i) for i <= small, each coefficient exactly from the one before
        term, total = 1, 1
        for i in range(small):
            term = term * (n - i) // (i + 1)
            total += term
        return total

    for n, k in [(1, 0), (6, 5), (171, 103), (171, 68), (4000, 1900), (10000, 5000), (9999, 0), (2, 1)]:
        small = min(k, n - k)
        exact = min(Fraction(1), Fraction(2 * tail(n, small), 2**n))
        assert pairing.mcnemar_p(k, n) == float(exact), (n, k)
        assert pairing.mcnemar_p(k, n) == pytest.approx(sps.binomtest(k, n, 0.5).pvalue, rel=1e-11, abs=1e-300)
    assert pairing.mcnemar_p(0, 0) == 1.0 and pairing.mcnemar_p(5000, 10000) == 1.0


def test_one_difference_rounded_two_ways_has_no_spread():
    """6/899 - 2/899 and 4/899 - 0/899 are the same four rows of 899, but differ in the last bit as
    floats: no spread, a point interval, as for exactly equal differences; a real spread stays."""
    a, b = [6 / 899, 4 / 899], [2 / 899, 0 / 899]
    assert (a[0] - b[0]) != (a[1] - b[1])  # the case: the float differences are not equal
    r = pairing.paired_interval(a, b, 0.95)
    assert r["sd"] == 0.0 and r["ci_low"] == r["gain"] == r["ci_high"]
    r = pairing.paired_interval([6 / 899, 5 / 899], [2 / 899, 0 / 899], 0.95)
    assert r["sd"] > 0 and r["ci_low"] < r["gain"] < r["ci_high"]
    one = pairing.paired_interval([0.5], [0.25], 0.95)
    assert one["ci_low"] != one["ci_low"]  # one seed: still NaN


def test_a_mean_of_differences_that_cancel_is_zero_not_a_rounding_residue():
    """Counts over 899 rows whose differences cancel over seeds: the float mean is a residue of about
    1e-19, which the paper printed as its order of magnitude; the mean of the shares' differences is 0."""
    from bnstudy.evaluation.paired import nil_if_rounding, paired_interval

    a = [4 / 899, 5 / 899, 7 / 899, 1 / 899, 3 / 899]
    b = [5 / 899, 4 / 899, 8 / 899, 3 / 899, 0 / 899]
    diffs = [x - y for x, y in zip(a, b)]
    assert sum(diffs) != 0  # the residue this guards against
    got = paired_interval(a, b, 0.95)
    assert got["gain"] == 0.0 and got["ci_low"] < 0 < got["ci_high"]
    # the smallest mean a share's difference can have here is kept: one row over 899 rows and 5 seeds
    one_row = [1 / 899, 0, 0, 0, 0]
    assert nil_if_rounding(sum(one_row) / 5, one_row) == sum(one_row) / 5
    assert paired_interval([x + 0 for x in one_row], [0.0] * 5, 0.95)["gain"] == pytest.approx(1 / 899 / 5, rel=1e-12)
