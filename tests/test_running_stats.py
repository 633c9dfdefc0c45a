"""Properties of the running-statistics study on the enumerated population."""

import numpy as np
import pytest

from bnstudy import running_stats as rs
from bnstudy.data import synthetic_population


@pytest.fixture(scope="module")
def x():
    return synthetic_population(0, 512, 16)


@pytest.fixture(scope="module")
def rows(x):
    sizes, keeps = [8, 16, 32, 64, 128, 256], [0.5, 0.9, 0.99]
    return rs.study(x, sizes, keeps, "shuffled", 0) + rs.study(x, sizes, keeps, "sorted", 0)


def pick(rows, order, estimator, keep=0.9):
    return {r["batch_size"]: r for r in rows if r["order"] == order and r["estimator"] == estimator
            and (r["keep"] == keep or estimator in ("cumulative", "pooled"))}


def test_population_statistics_are_far_from_zero_and_one(x):
    mu, var = rs.population_stats(x)
    assert var.max() >= 5 and var.min() <= 0.15
    assert np.sum(np.abs(mu) > 1) >= len(mu) // 2


@pytest.mark.parametrize("order", rs.ORDERS)
def test_batches_partition_the_population(x, order):
    batches = rs.pass_batches(x, 32, order, 0)
    assert sorted(np.concatenate(batches).tolist()) == list(range(len(x)))
    assert [len(b) for b in batches] == [32] * 16


def test_sorted_batches_ascend_in_the_sort_feature(x):
    values = x[np.concatenate(rs.pass_batches(x, 8, "sorted", 0, sort_feature=3)), 3]
    assert np.all(np.diff(values) >= 0)


def test_single_row_tail_batch_is_dropped(x):
    assert [len(b) for b in rs.pass_batches(x[:17], 8, "shuffled", 0)] == [8, 8]
    assert [len(b) for b in rs.pass_batches(x[:18], 8, "shuffled", 0)] == [8, 8, 2]


def test_shuffled_order_is_seeded(x):
    a, b = rs.pass_batches(x, 8, "shuffled", 0), rs.pass_batches(x, 8, "shuffled", 0)
    c = rs.pass_batches(x, 8, "shuffled", 1)
    assert all(np.array_equal(p, q) for p, q in zip(a, b))
    assert not all(np.array_equal(p, q) for p, q in zip(a, c))


def test_initial_value_keeps_weight_keep_to_the_updates():
    # Every batch has the same mean: the running mean is exactly (1 - keep^u) * mean.
    base = np.array([[1.0, 5.0], [3.0, 9.0]])
    x = np.tile(base, (8, 1))  # 8 batches of 2 identical rows pairs
    batches = [np.array([2 * i, 2 * i + 1]) for i in range(8)]
    result = rs.run_pass(x, batches, keep=0.9)
    np.testing.assert_allclose(result.running_mean, (1 - 0.9 ** 8) * base.mean(0), rtol=1e-12)
    corrected = rs.bias_corrected(result.running_mean, rs.INITIAL_MEAN, 0.9, result.updates)
    np.testing.assert_allclose(corrected, base.mean(0), rtol=1e-12)


@pytest.mark.parametrize("order", rs.ORDERS)
def test_pooled_statistics_are_exact(rows, order):
    for r in pick(rows, order, "pooled").values():
        assert r["running_error"] < 1e-10


def test_cumulative_average_gets_the_mean_exactly_on_equal_batches(rows):
    for r in pick(rows, "shuffled", "cumulative").values():
        assert r["mean_rmse"] < 1e-12


def test_within_plus_between_variance_is_the_population_variance(x):
    for order in rs.ORDERS:
        result = rs.run_pass(x, rs.pass_batches(x, 16, order, 0), None)
        within, between = rs.variance_decomposition(result)
        np.testing.assert_allclose(within + between, x.var(0), rtol=1e-12)


def test_averages_of_batch_variances_miss_the_between_batch_variance_when_sorted(rows):
    # Sorted by feature 0, the cumulative average's error on feature 0 is about the
    # between-batch variance; pooling adds it back.
    for b, r in pick(rows, "sorted", "cumulative").items():
        assert r["worst_var_feature"] == 0
        assert r["worst_var_error"] == pytest.approx(r["sort_feature_between_var"], rel=0.25)


def test_running_error_grows_an_order_of_magnitude_while_batch_estimate_improves(rows):
    ema = pick(rows, "shuffled", "ema")
    assert ema[256]["running_error"] > 10 * ema[16]["running_error"]
    assert ema[256]["running_error"] > 5 * ema[8]["running_error"]
    estimates = [ema[b]["batch_estimate_error"] for b in sorted(ema)]
    assert all(a > b for a, b in zip(estimates, estimates[1:]))


def test_measured_error_approaches_keep_to_the_updates_prediction_when_updates_are_few(rows):
    ema = pick(rows, "shuffled", "ema")
    for b in (64, 128, 256):
        assert ema[b]["running_error"] == pytest.approx(ema[b]["predicted_error"], rel=0.1)


def test_bias_correction_removes_the_large_batch_error(rows):
    ema, corrected = pick(rows, "shuffled", "ema"), pick(rows, "shuffled", "bias_corrected")
    assert corrected[256]["running_error"] < 0.1 * ema[256]["running_error"]


def test_sorted_divergence_exceeds_shuffled_at_small_batches(rows):
    sh, so = pick(rows, "shuffled", "ema"), pick(rows, "sorted", "ema")
    assert so[8]["train_eval_rmse"] > 2 * sh[8]["train_eval_rmse"]


def test_summary_has_exactly_the_issue_keys(rows):
    summary = rs.summary_json(rows, keep=0.9)
    assert set(summary) == {"updates", "running_error", "batch_estimate_error", "train_eval_rmse",
                            "train_eval_rmse_sorted", "worst_feature_var_error"}
    assert summary["updates"] == {"8": 64, "16": 32, "32": 16, "64": 8, "128": 4, "256": 2}
