"""Studies 3 and 5 by value: the estimators' errors by hand, running_stats.json, the macros and tables.

The pass itself (the compiled layer) is held against PyTorch in tests/studies/test_running_stats.py;
here each score is computed by hand on tiny inputs, and every macro and table cell of
:func:`bnstudy.studies.running_stats.report.summarise` is looked up independently in its input
tables (pandas filtering, NumPy, ``scipy.stats.t.interval``), macro names written out.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from bnstudy.base.runtime import STREAM_POPULATION, derive_seed
from bnstudy.nets.data import synthetic_population
from bnstudy.studies.running_stats import report as running_stats_report
from bnstudy.studies.running_stats import science as rs
from bnstudy.studies.running_stats import shuffles as running_stats_shuffles
from test_sentences import problems

# ---- the estimators and scores by hand -------------------------------------------------------


def test_statistics_errors_by_hand_with_a_tie_for_the_worst_feature():
    e = rs.statistics_errors(np.array([1.0, -2.0, 0.0]), np.array([3.0, 5.0, -3.0]), np.zeros(3), np.ones(3))
    # dm = 1 -2 0, dv = 2 4 -4
    assert e["mean_rmse"] == pytest.approx(math.sqrt(5 / 3), abs=1e-15)
    assert e["var_rmse"] == pytest.approx(math.sqrt(36 / 3), abs=1e-15)
    assert e["running_error"] == pytest.approx(math.sqrt(41 / 6), abs=1e-15)
    assert e["worst_mean_error"] == 2.0 and e["worst_var_error"] == 4.0
    assert e["worst_var_feature"] == 1  # |4| at features 1 and 2: the first
    assert isinstance(e["worst_var_feature"], int) and isinstance(e["worst_mean_error"], float)


def test_initial_offset_by_hand():
    # initial (0, 1) against mu = (3, -1), sigma2 = (2, 5): errors -3 1 -1 -4
    assert rs.initial_offset(np.array([3.0, -1.0]), np.array([2.0, 5.0])) == pytest.approx(math.sqrt(27 / 4), abs=1e-15)


def _result(batch_means, batch_vars, sizes, train_output=None, seen=None):
    batch_means, batch_vars = np.asarray(batch_means, float), np.asarray(batch_vars, float)
    return rs.PassResult(
        train_output=train_output,
        seen=seen,
        running_mean=None,
        running_var=None,
        batch_means=batch_means,
        batch_vars=batch_vars,
        batch_sizes=np.asarray(sizes, np.int64),
    )


def test_batch_estimate_error_by_hand():
    # two batches of 2 and 4 rows, one feature; truth mu 1, sigma2 2
    # batch 1: mean 2, biased var 1 -> unbiased 2; batch 2: mean 0, biased var 3 -> unbiased 4
    r = _result([[2.0], [0.0]], [[1.0], [3.0]], [2, 4])
    # errors: (1, 0) and (-1, 2): rms over the four = sqrt(6 / 4)
    assert rs.batch_estimate_error(r, np.array([1.0]), np.array([2.0])) == pytest.approx(math.sqrt(1.5), abs=1e-15)
    assert r.updates == 2


def test_batch_estimate_error_sums_batch_by_batch():
    """The squares are added batch by batch (its mean errors, then its variance errors), the
    documented order: here adding all the mean errors first would give another last bit."""
    # three batches of 2, one feature; truth mu 0, sigma2 2: mean errors 0, 1, 1, variance errors 1e8, 0, 0
    r = _result([[0.0], [1.0], [1.0]], [[5e7 + 1.0], [1.0], [1.0]], [2, 2, 2])
    squares = [0.0, 1e16, 1.0, 0.0, 1.0, 0.0]  # batch by batch
    total = 0.0
    for s in squares:
        total += s
    other = 0.0
    for s in [0.0, 1.0, 1.0, 1e16, 0.0, 0.0]:  # every mean error first
        other += s
    assert total != other
    assert rs.batch_estimate_error(r, np.array([0.0]), np.array([2.0])) == math.sqrt(total / 6)


def test_variance_decomposition_by_hand_with_unequal_batches():
    # rows (0, 2) and (4, 4, 4, 8): weights 1/3 and 2/3
    r = _result([[1.0], [5.0]], [[1.0], [3.0]], [2, 4])
    within, between = rs.variance_decomposition(r)
    assert within[0] == pytest.approx(1 / 3 + 2, abs=1e-15)
    grand = 1 / 3 + 10 / 3
    assert between[0] == pytest.approx((1 - grand) ** 2 / 3 + 2 * (5 - grand) ** 2 / 3, abs=1e-14)
    x = np.array([0.0, 2.0, 4.0, 4.0, 4.0, 8.0])
    assert within[0] + between[0] == pytest.approx(x.var(), abs=1e-14)


def test_train_eval_rmse_by_hand_over_the_seen_rows_only():
    x = np.array([[1.0], [3.0], [100.0]])
    out = np.array([[-1.0], [1.0], [50.0]])
    r = _result([[2.0]], [[1.0]], [2], train_output=out, seen=np.array([True, True, False]))
    # inference with mean 2, var 4 - eps: (x - 2) / 2 = -0.5, 0.5: errors -0.5, 0.5
    assert rs.train_eval_rmse(x, r, np.array([2.0]), np.array([4.0 - rs.EPS])) == pytest.approx(0.5, abs=1e-15)


def test_bias_corrected_and_pooled_by_hand():
    assert rs.bias_corrected(np.array([0.75, 1.0]), 1.0, 0.5, 2) == pytest.approx([2 / 3, 1.0], abs=1e-15)
    assert rs.bias_corrected(np.array([0.5]), 0.0, 0.5, 1) == pytest.approx([1.0], abs=1e-15)
    x = np.array([[1.0, 0.0], [3.0, 2.0], [50.0, 50.0]])
    mean, var = rs.pooled(x, np.array([True, True, False]))
    assert mean == pytest.approx([2.0, 1.0], abs=1e-15) and var == pytest.approx([1.0, 1.0], abs=1e-15)


def test_pass_batches_by_hand_for_each_order_and_shuffle():
    x = np.array([[5.0], [1.0], [4.0], [1.0], [3.0]])
    assert [b.tolist() for b in rs.pass_batches(x, 2, "sorted", 0)] == [[1, 3], [4, 2]]  # [0] dropped: one row
    assert [b.tolist() for b in rs.pass_batches(x, 3, "sorted", 0)] == [[1, 3, 4], [2, 0]]
    for shuffle, keys in ((0, (7, STREAM_POPULATION, 1, 2)), (3, (7, STREAM_POPULATION, 1, 2, 3))):
        perm = np.random.default_rng(derive_seed(*keys)).permutation(5)
        assert [b.tolist() for b in rs.pass_batches(x, 2, "shuffled", 7, shuffle=shuffle)] == [
            perm[:2].tolist(),
            perm[2:4].tolist(),
        ]
    with pytest.raises(ValueError, match="unknown order 'random'"):
        rs.pass_batches(x, 2, "random", 0)


def test_bn_layer_momentum_is_one_minus_keep():
    assert rs.bn_layer(3, 0.9).momentum == pytest.approx(0.1, abs=1e-15)
    assert rs.bn_layer(3, None).momentum is None
    assert rs.bn_layer(3, 0.9).eps == rs.EPS == 1e-5


def numpy_pass(x, batches, keep):
    """The documented running averages written out: EMA from (0, 1) with momentum 1 - keep, or the
    plain average (momentum None); unbiased batch variances."""
    mean, var = np.zeros(x.shape[1]), np.ones(x.shape[1])
    for u, rows in enumerate(batches, start=1):
        m, v = x[rows].mean(0), x[rows].var(0, ddof=1)
        if keep is None:
            mean, var = mean + (m - mean) / u, var + (v - var) / u
        else:
            mean, var = keep * mean + (1 - keep) * m, keep * var + (1 - keep) * v
    return mean, var


def test_study_rows_against_numpy_on_a_tiny_population():
    x = synthetic_population(3, 11, 3)  # 11 rows: a batch of 4 leaves 3, a batch of 5 leaves a single row
    mu, sigma2 = x.mean(0), x.var(0)
    rows = rs.study(x, [4, 5], [0.5, 0.9], "shuffled", 3, sort_feature=1)
    assert [(r["batch_size"], r["estimator"], r["keep"]) for r in rows] == [
        (b, e, k)
        for b in (4, 5)
        for e, k in (("ema", 0.5), ("bias_corrected", 0.5), ("ema", 0.9), ("bias_corrected", 0.9))
        + (("cumulative", None), ("pooled", None))
    ]
    offset = math.sqrt(np.mean(np.concatenate([mu, 1 - sigma2]) ** 2))
    for r in rows:
        b = r["batch_size"]
        batches = rs.pass_batches(x, b, "shuffled", 3)
        used = np.concatenate(batches)
        u = len(batches)
        assert r["order"] == "shuffled" and r["updates"] == u == (3 if b == 4 else 2)
        if r["estimator"] == "pooled":
            mean, var = x[used].mean(0), x[used].var(0)
        else:
            mean, var = numpy_pass(x, batches, r["keep"] if r["estimator"] != "cumulative" else None)
        w = r["keep"] ** u if r["estimator"] in ("ema", "bias_corrected") else 0.0
        if r["estimator"] == "bias_corrected":
            mean, var = mean / (1 - w), (var - w) / (1 - w)
        dm, dv = mean - mu, var - sigma2
        assert r["initial_weight"] == pytest.approx(w if r["estimator"] == "ema" else 0.0, abs=1e-15)
        assert r["predicted_error"] == pytest.approx(r["initial_weight"] * offset, abs=1e-14)
        assert r["mean_rmse"] == pytest.approx(np.sqrt(np.mean(dm**2)), rel=1e-9, abs=1e-13)
        assert r["var_rmse"] == pytest.approx(np.sqrt(np.mean(dv**2)), rel=1e-9, abs=1e-13)
        assert r["running_error"] == pytest.approx(np.sqrt(np.mean(np.concatenate([dm, dv]) ** 2)), rel=1e-9)
        assert r["worst_mean_error"] == pytest.approx(np.abs(dm).max(), rel=1e-9, abs=1e-13)
        assert r["worst_var_error"] == pytest.approx(np.abs(dv).max(), rel=1e-9, abs=1e-13)
        if r["estimator"] != "pooled":
            assert r["worst_var_feature"] == int(np.abs(dv).argmax())
        # the single batch's estimates and the divergence, from the batches themselves
        errs = np.concatenate([[x[q].mean(0) - mu, x[q].var(0, ddof=1) - sigma2] for q in batches])
        assert r["batch_estimate_error"] == pytest.approx(np.sqrt(np.mean(errs**2)), rel=1e-9)
        train = np.concatenate([(x[q] - x[q].mean(0)) / np.sqrt(x[q].var(0) + rs.EPS) for q in batches])
        inference = (x[used] - mean) / np.sqrt(var + rs.EPS)
        assert r["train_eval_rmse"] == pytest.approx(np.sqrt(np.mean((train - inference) ** 2)), rel=1e-9)
        sizes = np.array([len(q) for q in batches])
        means = np.array([x[q, 1].mean() for q in batches])
        within = np.sum(sizes * np.array([x[q, 1].var() for q in batches])) / sizes.sum()
        between = np.sum(sizes * (means - np.sum(sizes * means) / sizes.sum()) ** 2) / sizes.sum()
        assert r["sort_feature_within_var"] == pytest.approx(within, rel=1e-12)
        assert r["sort_feature_between_var"] == pytest.approx(between, rel=1e-9, abs=1e-15)


def test_study_without_keeps_takes_the_decomposition_from_the_plain_average():
    x = synthetic_population(1, 16, 2)
    rows = rs.study(x, [4], [], "sorted", 0)
    assert [r["estimator"] for r in rows] == ["cumulative", "pooled"]
    assert rows[0]["updates"] == 4 and rows[1]["initial_weight"] == 0.0


def test_replicated_study_labels_each_shuffle_and_uses_its_own_stream():
    x = synthetic_population(0, 24, 2)
    rows = rs.replicated_study(x, [4, 8], 0.5, seed=5, shuffles=2)
    assert [(r["shuffle"], r["batch_size"], r["estimator"]) for r in rows] == [
        (s, b, e) for s in (0, 1) for b in (4, 8) for e in ("ema", "bias_corrected", "cumulative", "pooled")
    ]
    assert all(r["keep"] in (0.5, None) and r["order"] == "shuffled" for r in rows)
    for s in (0, 1):
        own = [r for r in rs.study(x, [4, 8], [0.5], "shuffled", 5, 0, s)]
        assert [r | {"shuffle": s} for r in own] == [r for r in rows if r["shuffle"] == s]


def test_monotone_sentence_by_hand():
    assert rs.monotone_sentence({2: 0.5, 4: 1.0, 8: 3.0}) == "rises with every step in batch size"
    assert rs.monotone_sentence({2: 1.0, 4: 1.0, 8: 3.0}) == "never falls as the batch size grows"  # a tie
    # falling at every step is monotone too, not "not monotone"
    assert rs.monotone_sentence({2: 0.5, 4: 0.3, 8: 0.2}) == "falls with every step in batch size"
    assert rs.monotone_sentence({2: 0.5, 4: 0.5, 8: 0.2}) == "never rises as the batch size grows"
    assert rs.monotone_sentence({8: 0.4, 2: 0.1, 4: 0.3, 16: 0.2}) == (
        "is not monotone in the batch size: it falls from $b=8$ to $b=16$, and is smallest at the smallest batch $b=2$"
    )
    # the digits' shape: one fall, to the smallest value, named once (not "falls from b=8 to b=16, and is
    # smallest at b=16, not at the smallest batch b=8")
    assert rs.monotone_sentence({8: 0.12, 16: 0.09, 32: 0.2, 256: 1.0}) == (
        "is not monotone in the batch size: it falls from $b=8$ to $b=16$, where it is smallest"
    )
    assert rs.monotone_sentence({2: 0.5, 4: 0.3, 8: 0.6, 16: 0.4, 32: 0.7, 64: 0.65}) == (
        "is not monotone in the batch size: it falls from $b=2$ to $b=4$, where it is smallest, from $b=8$ to "
        "$b=16$ and from $b=32$ to $b=64$"
    )
    assert rs.monotone_sentence({2: 0.5, 4: 0.6, 8: 0.3, 16: 0.4}) == (
        "is not monotone in the batch size: it falls from $b=4$ to $b=8$, where it is smallest"
    )
    assert rs.monotone_sentence({2: 0.5, 4: 0.3, 8: 0.6, 16: 0.4}) == (
        "is not monotone in the batch size: it falls from $b=2$ to $b=4$, where it is smallest, and from $b=8$ to "
        "$b=16$"
    )


@pytest.mark.parametrize("values", list(itertools.product((0.1, 0.2, 0.3), repeat=4)))
def test_monotone_sentence_in_every_variant_is_true_and_reads(values):
    """Every ordering of four means: the sentence's claim holds of them and it reads once rendered."""
    means = dict(zip((2, 4, 8, 16), values, strict=True))
    text = rs.monotone_sentence(means)
    steps = [(means[b] - means[a]) for a, b in zip((2, 4, 8), (4, 8, 16))]
    if text == "rises with every step in batch size":
        assert all(d > 0 for d in steps)
    elif text == "falls with every step in batch size":
        assert all(d < 0 for d in steps)
    elif text == "never falls as the batch size grows":
        assert all(d >= 0 for d in steps) and not all(d > 0 for d in steps)
    elif text == "never rises as the batch size grows":
        assert all(d <= 0 for d in steps) and not all(d < 0 for d in steps)
    else:
        assert text.startswith("is not monotone") and any(d > 0 for d in steps) and any(d < 0 for d in steps)
        best = min(means, key=lambda b: means[b])
        # the smallest named once: at the end of the fall that reaches it, or as the smallest batch
        named = f"to $b={best}$, where it is smallest" in text or text.endswith(f"smallest batch $b={best}$")
        assert named and text.count("is smallest") == 1 and text.count(f"$b={best}$") <= 2, text
    assert not problems("The error " + text + "."), text


def test_summary_json_takes_each_key_from_its_own_rows():
    """Distinct values in every row: each key must come from its order, estimator and keep."""
    rows = []
    for i, (order, estimator, keep) in enumerate(
        (o, e, k)
        for o in ("shuffled", "sorted")
        for e, k in (("ema", 0.9), ("ema", 0.5), ("bias_corrected", 0.9), ("cumulative", None))
    ):
        for b in (16, 4):
            rows.append(
                {
                    "order": order,
                    "estimator": estimator,
                    "keep": keep,
                    "batch_size": b,
                    "updates": 100 * i + b,
                    "running_error": 1000 + 10 * i + b,
                    "batch_estimate_error": 2000 + 10 * i + b,
                    "train_eval_rmse": 3000 + 10 * i + b,
                    "worst_var_error": 4000 + 10 * i + (20 - b),
                }
            )
    assert rs.summary_json(rows) == {
        "updates": {"4": 4, "16": 16},
        "running_error": {"4": 1004, "16": 1016},
        "batch_estimate_error": {"4": 2004, "16": 2016},
        "train_eval_rmse": {"4": 3004, "16": 3016},
        "train_eval_rmse_sorted": {"4": 3044, "16": 3056},
        "worst_feature_var_error": 4016,
    }
    assert rs.summary_json(rows, keep=0.5)["running_error"] == {"4": 1014, "16": 1026}


# ---- running_stats_report.summarise on a tiny study ---------------------------------------

SIZES = [4, 8, 16]
KEEPS = [0.5, 0.9]
P = {"keep": 0.5, "sort_feature": 1, "rows": 48, "features": 4, "seed": 2, "confidence": 0.95}
PUBLISHED = {
    "keep": 0.9,
    "running_error": {8: 0.1036, 32: 0.1754, 256: 1.3771},
    "train_eval_rmse_shuffled": 0.3219,
    "train_eval_rmse_sorted": 0.6648,
    "worst_feature_var_error": 5.36,
}
NAME = {4: "BFour", 8: "BEight", 16: "BOneSix"}
ORDERS = ("sorted", "shuffled")
SHUFFLES = 3


@pytest.fixture(scope="module")
def population():
    return synthetic_population(2, 48, 4)


@pytest.fixture(scope="module")
def tables(population):
    x = population
    passes = rs.study(x, SIZES, KEEPS, "shuffled", 2, 1) + rs.study(x, SIZES, KEEPS, "sorted", 2, 1)
    passes = pd.DataFrame(passes).assign(keep=lambda d: d["keep"].astype(float))  # None -> NaN, as read from CSV
    checks = pd.DataFrame(
        [
            {"order": o, "batch_size": b, "keep": 0.9}
            | {"train_mean": 1e-6 * (i + 1), "train_mean_pass": True, "train_var": 2e-7, "train_var_pass": i != 4}
            | {"inference_repeatable": 0.0, "inference_repeatable_pass": True, "shape": 1.0, "shape_pass": True}
            | {"train_eval_rmse": 0.25 + i, "differential_rmse": 0.05 * (i + 1), "differential_pass": i < 2}
            for i, (b, o) in enumerate((b, o) for b in SIZES for o in ("sorted", "shuffled"))
        ]
    )
    trained = pd.DataFrame(
        [
            {"normaliser": "batchnorm", "batch_size": b, "order": o, "seed": s}
            | {
                "inference_accuracy": 0.9 - 0.01 * s - (0.2 if o == "sorted" else 0.0) + 0.001 * b,
                "train_mode_accuracy": 0.8 + 0.02 * s + 0.002 * b,
                "label_disagreement": 0.05 * (s + 1) + (0.3 if o == "sorted" else 0.0),
                "train_eval_rmse": 1.0 + 0.1 * s * s + (2.0 if o == "sorted" else 0.0) + 0.01 * b,
            }
            for b in (16, 64)
            for o in ("shuffled", "sorted")
            for s in (0, 1, 2)
        ]
    )
    shuffles = pd.DataFrame(rs.replicated_study(x, SIZES, 0.9, 2, SHUFFLES))
    return passes, checks, trained, shuffles


# Function scope on purpose: mutmut runs, for a mutant, only the tests during which the mutated
# function ran; a module-scoped result would be computed during the first test alone.
@pytest.fixture
def result(tables, population):
    passes, checks, trained, shuffles = tables
    return running_stats_report.summarise(passes, checks, population, trained, shuffles, PUBLISHED, P)


def row(passes, order, estimator, b, keep=P["keep"]):
    r = passes[(passes.order == order) & (passes.estimator == estimator) & (passes.batch_size == b)]
    if estimator in ("ema", "bias_corrected"):
        r = r[r.keep == keep]
    assert len(r) == 1
    return r.iloc[0]


def f4(v):
    """Four decimals; exact zero in words; a nonzero value with the decimals it needs."""
    if v == 0:
        return "exactly 0"
    d = 4
    while float(f"{v:.{d}f}") == 0:
        d += 1
    return f"{v:.{d}f}"


def t_interval(v):
    v = np.asarray(v, float)
    if v.std() == 0:  # no spread: the interval is the point
        return v.mean(), 0.0, v.mean(), v.mean()
    lo, hi = sps.t.interval(P["confidence"], len(v) - 1, loc=v.mean(), scale=sps.sem(v))
    return v.mean(), v.std(ddof=1), lo, hi


def log_t_interval(v):
    """The shuffles' errors (never negative): the t interval on the log scale, written out (delta
    method, standard error of the log ``sem / mean``), mapped back; the point where all are equal."""
    v = np.asarray(v, float)
    if v.std() == 0 or v.mean() == 0:
        return v.mean(), v.std(ddof=1), v.mean(), v.mean()
    half = sps.t.ppf(0.5 + P["confidence"] / 2, len(v) - 1) * sps.sem(v) / v.mean()
    return v.mean(), v.std(ddof=1), v.mean() * np.exp(-half), v.mean() * np.exp(half)


def test_summary_json_of_the_report_is_the_shuffled_ema_at_the_keep(result, tables):
    passes = tables[0]
    out = result["summary"]
    for b in SIZES:
        sh, so = row(passes, "shuffled", "ema", b), row(passes, "sorted", "ema", b)
        assert out["updates"][str(b)] == sh.updates
        assert out["running_error"][str(b)] == sh.running_error
        assert out["batch_estimate_error"][str(b)] == sh.batch_estimate_error
        assert out["train_eval_rmse"][str(b)] == sh.train_eval_rmse
        assert out["train_eval_rmse_sorted"][str(b)] == so.train_eval_rmse
    assert out["worst_feature_var_error"] == max(row(passes, "shuffled", "ema", b).worst_var_error for b in SIZES)


def expected_macros(passes, checks, population, trained, shuffles):
    m = {
        "rsRows": "48",
        "rsFeatures": "4",
        "rsSeed": "2",
        "rsKeep": "0.50",
        "rsBatchMin": "4",
        "rsBatchMax": "16",
        "rsKeeps": "0.50, 0.90",
        "rsBatchSizes": "4, 8, 16",
        "rsMeanTol": "$10^{-4}$",
        "rsVarTol": "$10^{-3}$",
        "rsDifferentialTol": "0.1",
        "rsSortFeature": "1",
        "rsPasses": "3",
        "rsPopVarHigh": "5",
        "rsPopVarLow": "0.5",
    }
    ema = {(o, b): row(passes, o, "ema", b) for o in ("shuffled", "sorted") for b in SIZES}
    m["rsUpdatesMin"] = str(ema[("shuffled", 16)].updates)
    m["rsUpdatesMax"] = str(ema[("shuffled", 4)].updates)
    assert (m["rsUpdatesMin"], m["rsUpdatesMax"]) == ("3", "12")
    ratio = {b: ema[("sorted", b)].train_eval_rmse / ema[("shuffled", b)].train_eval_rmse for b in SIZES}
    for b in SIZES:
        sh, so = ema[("shuffled", b)], ema[("sorted", b)]
        ends = [NAME[b]] + (["Min"] if b == 4 else []) + (["Max"] if b == 16 else [])
        for end in ends:
            m[f"rsInitialWeight{end}"] = f4(sh.initial_weight)
            m[f"rsPredictedError{end}"] = f4(sh.predicted_error)
            m[f"rsRunningError{end}"] = f4(sh.running_error)
            m[f"rsBatchEstimateError{end}"] = f4(sh.batch_estimate_error)
            m[f"rsTrainEvalShuffled{end}"] = f4(sh.train_eval_rmse)
            m[f"rsTrainEvalSorted{end}"] = f4(so.train_eval_rmse)
            m[f"rsDivergenceRatio{end}"] = f"{ratio[b]:.1f}"
        m[f"rsUpdates{NAME[b]}"] = str(sh.updates)
    running = {b: ema[("shuffled", b)].running_error for b in SIZES}
    best = min(SIZES, key=running.get)
    m["rsRunningErrorGrowth"] = f"{running[16] / running[4]:.1f}"
    m["rsBatchEstimateGain"] = (
        f"{ema[('shuffled', 4)].batch_estimate_error / ema[('shuffled', 16)].batch_estimate_error:.1f}"
    )
    m["rsRunningErrorBestBatch"] = str(best)
    m["rsRunningErrorBest"] = f4(running[best])
    m["rsDivergenceRatioLow"] = f"{min(ratio.values()):.1f}"
    m["rsDivergenceRatioHigh"] = f"{max(ratio.values()):.1f}"
    worst_b = max(SIZES, key=lambda b: ema[("shuffled", b)].worst_var_error)
    worst = ema[("shuffled", worst_b)]
    assert worst_b != max(SIZES)  # the worst variance error is not at the largest batch
    m["rsWorstVarError"] = f"{worst.worst_var_error:.2f}"
    m["rsWorstVarBatch"] = str(worst_b)
    m["rsWorstVarFeature"] = str(int(worst.worst_var_feature))
    words = {"ema": "Ema", "bias_corrected": "BiasCorrected", "cumulative": "Cumulative", "pooled": "Pooled"}
    for order, b in (("shuffled", 16), ("sorted", 4)):
        for e, w in words.items():
            r = row(passes, order, e, b)
            stem = f"rsRemedy{order.capitalize()}{w}"
            m[stem] = f4(r.running_error)
            m[stem + "Var"] = f"{r.worst_var_error:.2f}"
            m[stem + "Divergence"] = f4(r.train_eval_rmse)
    so = ema[("sorted", 4)]
    m["rsSortedWithinVar"] = f"{so.sort_feature_within_var:.3f}"
    m["rsSortedBetweenVar"] = f"{so.sort_feature_between_var:.3f}"
    m["rsSortFeatureVar"] = f"{so.sort_feature_within_var + so.sort_feature_between_var:.3f}"
    mu, sigma2 = population.mean(0), population.var(0)
    m["rsPopVarMin"] = f"{sigma2.min():.2f}"
    m["rsPopVarMax"] = f"{sigma2.max():.2f}"
    m["rsPopMeanAbsMax"] = f"{np.abs(mu).max():.2f}"
    m["rsPopVarAboveFive"] = str(int((sigma2 >= 5).sum()))
    m["rsPopVarBelowHalf"] = str(int((sigma2 <= 0.5).sum()))
    m["rsInitialOffset"] = f4(math.sqrt(np.mean(np.concatenate([mu, 1 - sigma2]) ** 2)))
    m["rsWorstVarTrue"] = f"{sigma2[int(worst.worst_var_feature)]:.2f}"
    # self-checks: six rows, four checks each; train_var fails once; differential passes twice
    m["rsSelfCheckPasses"] = "23"
    m["rsSelfCheckTotal"] = "24"
    m["rsSelfCheckPassesAll"] = "not all"
    m["rsDifferentialPassesShuffled"] = "1"  # rows 0 (sorted, 4) and 1 (shuffled, 4)
    m["rsDifferentialPassesSorted"] = "1"
    m["rsPublishedRunningErrorMin"] = "0.1036"
    m["rsPublishedRunningErrorMax"] = "1.3771"
    m["rsPublishedBatchMin"] = "8"
    m["rsPublishedBatchMax"] = "256"
    m["rsPublishedGrowth"] = f"{1.3771 / 0.1036:.1f}"
    m["rsPublishedTrainEvalShuffled"] = "0.3219"
    m["rsPublishedTrainEvalSorted"] = "0.6648"
    m["rsPublishedDivergenceRatio"] = f"{0.6648 / 0.3219:.1f}"
    m["rsPublishedWorstVarError"] = "5.36"
    metrics = {
        "inference_accuracy": "InferenceAccuracy",
        "train_mode_accuracy": "TrainModeAccuracy",
        "label_disagreement": "LabelDisagreement",
        "train_eval_rmse": "TrainEvalRmse",
    }
    for b in (16, 64):
        for o in ("shuffled", "sorted"):
            for metric, w in metrics.items():
                v = trained[(trained.batch_size == b) & (trained.order == o)][metric].mean()
                text = f"{100 * v:.1f}\\%" if metric == "label_disagreement" else f"{v:.3f}"  # a share: percent
                m[f"rsTrained{o.capitalize()}{w}B{'OneSix' if b == 16 else 'SixFour'}"] = text
                if b == 16:
                    m[f"rsTrained{o.capitalize()}{w}"] = text
    m["rsTrainedSeeds"] = "3"
    m["rsTrainedBatch"] = "16"
    m["rsTrainedBatchSizes"] = "batch sizes 16 and 64"  # "batch size 16" for one
    m["rsShuffles"] = "3"
    m["rsConfidence"] = "95\\%"
    reps = {}
    for e, w in words.items():
        for b in SIZES:
            for metric, mw in (("running_error", "RunningError"), ("train_eval_rmse", "TrainEvalRmse")):
                v = shuffles[(shuffles.estimator == e) & (shuffles.batch_size == b)][metric]
                assert len(v) == SHUFFLES
                mean, _, lo, hi = log_t_interval(v)
                for end in [NAME[b]] + (["Min"] if b == 4 else []) + (["Max"] if b == 16 else []):
                    if mean == lo == hi == 0:  # zero in every shuffle: said in words, no interval
                        m[f"rsRep{w}{mw}{end}"], m[f"rsRep{w}{mw}{end}Ci"] = "exactly 0 in every shuffle", ""
                    else:
                        m[f"rsRep{w}{mw}{end}"] = f4(mean)
                        m[f"rsRep{w}{mw}{end}Ci"] = f"[{f4(lo)}, {f4(hi)}]"
                if e == "ema" and metric == "running_error":
                    reps[b] = (mean, lo, hi)
    rep_best = min(SIZES, key=lambda b: reps[b][0])
    m["rsRepMonotone"] = rs.monotone_sentence({b: reps[b][0] for b in SIZES})
    m["rsRepBestBatch"] = str(rep_best)
    for end, b in (("Min", 4), ("Max", 16), ("Best", rep_best)):
        m[f"rsRepRunningError{end}"] = f4(reps[b][0])
        m[f"rsRepRunningError{end}Ci"] = f"[{f4(reps[b][1])}, {f4(reps[b][2])}]"
    return m


def test_every_macro_by_value(result, tables, population):
    got, want = result["macros"], expected_macros(*tables[:1], tables[1], population, *tables[2:])
    assert sorted(set(got) - set(want)) == [] and sorted(set(want) - set(got)) == []
    for name in sorted(want):
        assert got[name] == want[name], name


def test_self_checks_all_passing_are_said_so(tables, population):
    passes, checks, trained, shuffles = tables
    checks = checks.assign(train_var_pass=True)
    m = running_stats_report.summarise(passes, checks, population, trained, shuffles, PUBLISHED, P)["macros"]
    assert (m["rsSelfCheckPassesAll"], m["rsSelfCheckPasses"]) == ("all", "24")


def test_self_check_divergence_is_the_swept_pass_of_its_keep_or_its_own(tables, population):
    """The self-check table's divergence is the swept pass's of the check's order, size and keep-factor
    (as the other tables print it); a check at a keep-factor no pass swept keeps its own value."""
    passes, checks, trained, shuffles = tables

    def divergences(checks):
        rows = running_stats_report.summarise(passes, checks, population, trained, shuffles, PUBLISHED, P)[
            "table_selfchecks"
        ][1]
        return {(int(r[0]), r[1]): r[6] for r in rows}

    for keep in KEEPS:  # both swept: each its own pass, and the two differ
        got = divergences(checks.assign(keep=keep))
        assert got == {(b, o): f4(row(passes, o, "ema", b, keep=keep).train_eval_rmse) for b in SIZES for o in ORDERS}
    assert divergences(checks.assign(keep=0.5)) != divergences(checks.assign(keep=0.9))
    got = divergences(checks.assign(keep=0.7))  # not swept
    assert got == {(int(r.batch_size), r.order): f4(r.train_eval_rmse) for r in checks.itertuples()}


def test_trained_macros_of_a_missing_metric_are_na(tables, population):
    passes, checks, trained, shuffles = tables
    trained = trained[~((trained.order == "sorted") & (trained.batch_size == 16))]
    out = running_stats_report.summarise(passes, checks, population, trained, shuffles, PUBLISHED, P)
    m = out["macros"]
    assert m["rsTrainedSortedInferenceAccuracy"] == "n/a" and m["rsTrainedShuffledInferenceAccuracy"] != "n/a"
    rows = out["table_sorted"][1]
    assert rows[1] == ["16", "sorted", "--", "--", "--", "--"] and "--" not in rows[0]


def test_shuffle_summary_is_the_t_interval_over_shuffles(result, tables):
    shuffles = tables[3]
    s = result["shuffle_summary"]
    assert len(s) == 4 * len(SIZES) * 2
    assert list(s.columns) == [
        "estimator",
        "batch_size",
        "updates",
        "metric",
        "shuffles",
        "mean",
        "sd",
        "ci_low",
        "ci_high",
    ]
    for r in s.itertuples(index=False):
        v = shuffles[(shuffles.estimator == r.estimator) & (shuffles.batch_size == r.batch_size)][r.metric]
        mean, sd, lo, hi = log_t_interval(v)
        assert 0 <= lo <= mean <= hi
        assert r.shuffles == SHUFFLES and r.updates == shuffles[shuffles.batch_size == r.batch_size].updates.iloc[0]
        assert (r.mean, r.sd, r.ci_low, r.ci_high) == pytest.approx((mean, sd, lo, hi), abs=1e-12)


def test_sorted_training_is_the_t_interval_over_seeds(result, tables):
    trained = tables[2]
    s = result["sorted_training"]
    assert len(s) == 2 * 2 * 4
    for r in s.itertuples(index=False):
        v = trained[(trained.batch_size == r.batch_size) & (trained.order == r.order)][r.metric]
        mean, sd, lo, hi = t_interval(v)
        assert r.seeds == 3 and r.normaliser == "batchnorm"
        assert (r.mean, r.sd, r.ci_low, r.ci_high) == pytest.approx((mean, sd, lo, hi), abs=1e-12)


def test_tables_by_value(result, tables):
    passes, checks, trained, shuffles = tables
    header, rows, align, _ = result["table_errors"]
    assert header == ["$b$", "updates", "$k^u$", "predicted", "running", "one batch", "shuffled", "sorted"] + [
        "ratio",
        "publ.",
    ]
    assert align == "rrrrrrrrrr"
    want = []
    for b in SIZES:
        sh, so = row(passes, "shuffled", "ema", b), row(passes, "sorted", "ema", b)
        want.append(
            [str(b), str(sh.updates)]
            + [f4(v) for v in (sh.initial_weight, sh.predicted_error, sh.running_error, sh.batch_estimate_error)]
            + [f4(sh.train_eval_rmse), f4(so.train_eval_rmse), f"{so.train_eval_rmse / sh.train_eval_rmse:.1f}"]
            + ["0.1036" if b == 8 else "--"]
        )
    assert rows == want

    header, rows, align, _ = result["table_selfchecks"]
    assert align == "rlllllrl"
    assert header == [
        "$b$",
        "order",
        "mean $\\approx\\beta$",
        "var $\\approx\\gamma^2$",
        "repeatable",
        "shape",
        "divergence",
        "vs.\\ reference",
    ]
    want = []
    for b in SIZES:
        for o in ("sorted", "shuffled"):
            r = checks[(checks.batch_size == b) & (checks.order == o)].iloc[0]

            def mark(ok):
                return "pass" if ok else "\\textbf{fail}"

            def sci(v):
                mantissa, exponent = f"{v:.0e}".split("e")
                return f"${mantissa} \\times 10^{{{int(exponent)}}}$"

            want.append(
                [
                    str(b),
                    o,
                    f"{mark(r.train_mean_pass)} ({sci(r.train_mean)})",
                    f"{mark(r.train_var_pass)} ({sci(r.train_var)})",
                    "pass",
                    "pass",
                    # the divergence of the swept pass of the check's order, size and keep-factor (0.9), as the
                    # tables of the passes print it; not the check row's own value
                    f4(row(passes, o, "ema", b, keep=0.9).train_eval_rmse),
                    f"{mark(r.differential_pass)} ({r.differential_rmse:.3f})",
                ]
            )
    assert rows == want
    assert rows[4][3] == "\\textbf{fail} ($2 \\times 10^{-7}$)"  # a minus sign in math, no hyphen-minus
    assert not any("e-" in cell for line in rows for cell in line[2:4]), rows

    header, rows, align, _ = result["table_remedies"]
    assert header == ["order", "$b$", "EMA", "bias-corr.", "cumulative", "pooled", "div.\\ EMA", "div.\\ pooled"]
    assert align == "lrrrrrrr"
    want = [
        [o, str(b)]
        + [f4(row(passes, o, e, b).running_error) for e in ("ema", "bias_corrected", "cumulative", "pooled")]
        + [f4(row(passes, o, e, b).train_eval_rmse) for e in ("ema", "pooled")]
        for o in ("shuffled", "sorted")
        for b in SIZES
    ]
    assert rows == want

    header, rows, align, _ = result["table_sorted"]
    assert header == ["$b$", "batches", "inference acc.", "training-mode acc.", "label disagreement", "logit RMSE"]
    assert align == "rlllll"
    want = []
    for b in (16, 64):
        for o in ("shuffled", "sorted"):
            cells = []
            for metric in ("inference_accuracy", "train_mode_accuracy", "label_disagreement", "train_eval_rmse"):
                v = trained[(trained.batch_size == b) & (trained.order == o)][metric]
                cells.append(f"{v.mean():.3f} $\\pm$ {v.std(ddof=1):.3f}")
            want.append([str(b), o] + cells)
    assert rows == want

    header, rows, align, _ = result["table_shuffles"]
    assert header == ["$b$", "updates", "EMA error", "bias-corr.\\ error", "pooled error", "div.\\ EMA"]
    assert align == "rrllll"
    want = []
    for b in SIZES:
        cells = []
        for e, metric in (
            ("ema", "running_error"),
            ("bias_corrected", "running_error"),
            ("pooled", "running_error"),
            ("ema", "train_eval_rmse"),
        ):
            mean, _, lo, hi = log_t_interval(shuffles[(shuffles.estimator == e) & (shuffles.batch_size == b)][metric])
            cells.append("exactly 0" if mean == lo == hi == 0 else f"{f4(mean)} [{f4(lo)}, {f4(hi)}]")
        want.append([str(b), str(shuffles[shuffles.batch_size == b].updates.iloc[0])] + cells)
    assert rows == want


def test_table_sorted_without_spread_has_no_plus_minus(tables, population):
    passes, checks, trained, shuffles = tables
    one_seed = trained[trained.seed == 0]
    out = running_stats_report.summarise(passes, checks, population, one_seed, shuffles, PUBLISHED, P)
    assert out["table_sorted"][1][0][2] == f"{one_seed.inference_accuracy.iloc[0]:.3f}"
    assert out["macros"]["rsTrainedSeeds"] == "1"


def test_shuffle_table_cell_missing_is_a_dash(result):
    summary = result["shuffle_summary"]
    header, rows, _, _ = running_stats_shuffles.shuffle_table(summary[summary.estimator != "pooled"])
    assert all(r[4] == "--" for r in rows) and all(r[2] != "--" for r in rows)


def test_table_comments(result):
    assert {k: result[k][3] for k in result if k.startswith("table_")} == {
        "table_shuffles": "Study 3 over replicate shuffles: mean [interval]",
        "table_errors": "Study 3: running-statistics error and train/inference divergence",
        "table_selfchecks": "Study 5: the four self-checks, the divergence and the differential check",
        "table_remedies": "Study 3: remedies on the same passes",
        "table_sorted": "Study 3 in trained networks: class-sorted versus shuffled training batches",
    }


def test_differential_passes_are_counted_per_order(tables, population):
    passes, checks, trained, shuffles = tables
    checks = checks.assign(
        differential_pass=(checks.order == "sorted") | (checks.batch_size == checks.batch_size.min())
    )
    m = running_stats_report.summarise(passes, checks, population, trained, shuffles, PUBLISHED, P)["macros"]
    sizes = checks.batch_size.nunique()
    assert (m["rsDifferentialPassesSorted"], m["rsDifferentialPassesShuffled"]) == (str(sizes), "1")


def test_population_variances_exactly_on_the_thresholds_are_counted(tables, population):
    """A feature of variance exactly 5 is at least 5; one of exactly 0.5 is at most 0.5."""
    passes, checks, trained, shuffles = tables
    x = np.array(population, dtype=np.float64, copy=True)
    n = len(x)
    assert n % 4 == 0
    x[:, 0] = np.tile([1.0, 3.0, -1.0, -3.0], n // 4)  # mean 0, mean square (1 + 9 + 1 + 9) / 4 = 5
    x[:, 1] = np.tile([1.0, -1.0, 0.0, 0.0], n // 4)  # mean 0, mean square 2 / 4 = 0.5
    x = x.astype(population.dtype)
    _, sigma2 = rs.population_stats(x)
    assert (sigma2[0], sigma2[1]) == (5.0, 0.5)
    m = running_stats_report.summarise(passes, checks, x, trained, shuffles, PUBLISHED, P)["macros"]
    assert m["rsPopVarAboveFive"] == str(int((sigma2 >= 5.0).sum())) and int(m["rsPopVarAboveFive"]) >= 1
    assert m["rsPopVarBelowHalf"] == str(int((sigma2 <= 0.5).sum())) and int(m["rsPopVarBelowHalf"]) >= 1
    assert int(m["rsPopVarAboveFive"]) == int((sigma2 > 5.0).sum()) + 1
    assert int(m["rsPopVarBelowHalf"]) == int((sigma2 < 0.5).sum()) + 1


def test_trained_networks_columns_beside_the_metrics_are_not_summarised(result, tables, population):
    passes, checks, trained, shuffles = tables
    wider = trained.assign(epochs=3)
    out = running_stats_report.summarise(passes, checks, population, wider, shuffles, PUBLISHED, P)
    pd.testing.assert_frame_equal(out["sorted_training"], result["sorted_training"])
    assert out["macros"] == result["macros"]


def test_a_shuffle_interval_prints_four_decimals_or_says_every_shuffle_alike():
    assert running_stats_shuffles._shuffle_interval(0.12344, 0.56786) == "[0.1234, 0.5679]"
    # one point: no spread over the shuffles
    assert running_stats_shuffles._shuffle_interval(0.25, 0.25) == "(every shuffle alike)"
