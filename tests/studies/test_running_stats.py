"""Properties of the running-statistics study on the enumerated population."""

import numpy as np
import pytest

from bnstudy.nets.data import synthetic_population
from bnstudy.studies.running_stats import science as rs


@pytest.fixture(scope="module")
def x():
    return synthetic_population(0, 512, 16)


@pytest.fixture(scope="module")
def rows(x):
    sizes, keeps = [8, 16, 32, 64, 128, 256], [0.5, 0.9, 0.99]
    return rs.study(x, sizes, keeps, "shuffled", 0) + rs.study(x, sizes, keeps, "sorted", 0)


def pick(rows, order, estimator, keep=0.9):
    return {
        r["batch_size"]: r
        for r in rows
        if r["order"] == order
        and r["estimator"] == estimator
        and (r["keep"] == keep or estimator in ("cumulative", "pooled"))
    }


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
    np.testing.assert_allclose(result.running_mean, (1 - 0.9**8) * base.mean(0), rtol=1e-12)
    corrected = rs.bias_corrected(result.running_mean, rs.INITIAL_MEAN, 0.9, result.updates)
    np.testing.assert_allclose(corrected, base.mean(0), rtol=1e-12)


@pytest.mark.parametrize("order", rs.ORDERS)
def test_pooled_statistics_are_the_seen_rows_moments_against_numpy(x, order):
    """The pooled estimate's error, recomputed with NumPy from the rows the pass saw: zero when every
    row is seen (512 rows in batches of 32), the dropped row's effect when one is not (17 rows of 8)."""
    for population, b in ((x, 32), (x[:17], 8)):
        (r,) = [r for r in rs.study(population, [b], [], order, 0) if r["estimator"] == "pooled"]
        seen = np.concatenate(rs.pass_batches(population, b, order, 0))
        dm = population[seen].mean(0) - population.mean(0)
        dv = population[seen].var(0) - population.var(0)
        want = np.sqrt(np.mean(np.concatenate([dm, dv]) ** 2))
        assert r["running_error"] == pytest.approx(want, rel=1e-9, abs=1e-13)
        assert (want == pytest.approx(0, abs=1e-13)) == (len(seen) == len(population))


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
    assert set(summary) == {
        "updates",
        "running_error",
        "batch_estimate_error",
        "train_eval_rmse",
        "train_eval_rmse_sorted",
        "worst_feature_var_error",
    }
    assert summary["updates"] == {"8": 64, "16": 32, "32": 16, "64": 8, "128": 4, "256": 2}


# ---- the fixed-order port: against independent computations, and the same bytes twice --
KEEPS = [0.9, 0.5, None]


def _torch_pass(x, batches, keep):
    """The same pass through ``torch.nn.BatchNorm1d`` (float64): the reference implementation."""
    import torch

    layer = torch.nn.BatchNorm1d(x.shape[1], eps=rs.EPS, momentum=None if keep is None else 1.0 - keep)
    layer = layer.double().train()
    out = np.zeros_like(x)
    with torch.no_grad():
        for rows in batches:
            out[rows] = layer(torch.from_numpy(x[rows])).numpy()
    return out, layer.running_mean.numpy(), layer.running_var.numpy()


@pytest.mark.parametrize("order", rs.ORDERS)
@pytest.mark.parametrize("b, keep", [(2, 0.9), (8, 0.9), (8, None), (64, 0.5), (256, 0.9), (256, None)])
def test_run_pass_agrees_with_torch_batchnorm1d_float64_within_1e_12(x, order, b, keep):
    batches = rs.pass_batches(x, b, order, 0)
    result = rs.run_pass(x, batches, keep)
    out, running_mean, running_var = _torch_pass(x, batches, keep)
    np.testing.assert_allclose(result.train_output, out, rtol=0, atol=1e-12)
    np.testing.assert_allclose(result.running_mean, running_mean, rtol=0, atol=1e-12)
    np.testing.assert_allclose(result.running_var, running_var, rtol=0, atol=1e-12)
    for j, rows in enumerate(batches):  # the batch statistics against NumPy's
        np.testing.assert_allclose(result.batch_means[j], x[rows].mean(0), rtol=0, atol=1e-13)
        np.testing.assert_allclose(result.batch_vars[j], x[rows].var(0), rtol=1e-12, atol=1e-15)
    assert result.seen.all() and result.updates == len(batches)


def test_run_pass_skips_rows_in_no_batch(x):
    result = rs.run_pass(x[:17], rs.pass_batches(x[:17], 8, "shuffled", 0), 0.9)
    assert result.seen.sum() == 16
    np.testing.assert_array_equal(result.train_output[~result.seen], 0.0)


@pytest.mark.parametrize("keep", KEEPS)
def test_run_pass_gives_the_same_bytes_twice(x, keep):
    batches = rs.pass_batches(x, 16, "shuffled", 0)
    a, b = rs.run_pass(x, batches, keep), rs.run_pass(x, batches, keep)
    for name in ("train_output", "seen", "running_mean", "running_var", "batch_means", "batch_vars", "batch_sizes"):
        assert getattr(a, name).tobytes() == getattr(b, name).tobytes(), name


def test_study_gives_identical_rows_twice(x):
    a = rs.study(x, [8, 256], [0.9, 0.5], "sorted", 0) + rs.study(x, [32], [0.9], "shuffled", 0)
    b = rs.study(x, [8, 256], [0.9, 0.5], "sorted", 0) + rs.study(x, [32], [0.9], "shuffled", 0)
    assert [repr(r) for r in a] == [repr(r) for r in b]


def test_population_stats_match_numpy(x):
    mu, sigma2 = rs.population_stats(x)
    np.testing.assert_allclose(mu, x.mean(0), rtol=0, atol=1e-14)
    np.testing.assert_allclose(sigma2, x.var(0), rtol=1e-13)


def test_pooled_matches_numpy_over_the_seen_rows(x):
    seen = np.arange(len(x)) % 3 != 0
    mean, var = rs.pooled(x, seen)
    np.testing.assert_allclose(mean, x[seen].mean(0), rtol=0, atol=1e-14)
    np.testing.assert_allclose(var, x[seen].var(0), rtol=1e-13)


@pytest.mark.parametrize("order", rs.ORDERS)
def test_variance_decomposition_matches_numpy(x, order):
    result = rs.run_pass(x, rs.pass_batches(x, 24, order, 0), 0.9)  # a short last batch: unequal weights
    within, between = rs.variance_decomposition(result)
    w = result.batch_sizes / result.batch_sizes.sum()
    grand = (w[:, None] * result.batch_means).sum(0)
    np.testing.assert_allclose(within, (w[:, None] * result.batch_vars).sum(0), rtol=1e-13)
    np.testing.assert_allclose(between, (w[:, None] * (result.batch_means - grand) ** 2).sum(0), rtol=1e-11, atol=1e-15)


def test_scores_match_numpy_formulas(x):
    mu, sigma2 = rs.population_stats(x)
    result = rs.run_pass(x, rs.pass_batches(x, 32, "sorted", 0), 0.9)
    mean, var = result.running_mean, result.running_var
    np_rms = lambda a: float(np.sqrt(np.mean(np.square(a))))  # noqa: E731
    errors = rs.statistics_errors(mean, var, mu, sigma2)
    dm, dv = mean - mu, var - sigma2
    assert errors["mean_rmse"] == pytest.approx(np_rms(dm), rel=1e-13)
    assert errors["var_rmse"] == pytest.approx(np_rms(dv), rel=1e-13)
    assert errors["running_error"] == pytest.approx(np_rms(np.concatenate([dm, dv])), rel=1e-13)
    assert errors["worst_var_error"] == np.abs(dv).max() and errors["worst_var_feature"] == np.abs(dv).argmax()
    assert rs.initial_offset(mu, sigma2) == pytest.approx(np_rms(np.concatenate([-mu, 1 - sigma2])), rel=1e-13)
    n = result.batch_sizes[:, None]
    unbiased = result.batch_vars * n / (n - 1)
    assert rs.batch_estimate_error(result, mu, sigma2) == pytest.approx(
        np_rms(np.concatenate([result.batch_means - mu, unbiased - sigma2], axis=1)), rel=1e-13
    )
    inference = (x - mean) / np.sqrt(var + rs.EPS)
    assert rs.train_eval_rmse(x, result, mean, var) == pytest.approx(
        np_rms((result.train_output - inference)[result.seen]), rel=1e-13
    )


@pytest.mark.parametrize("keep, u", [(0.9, 1), (0.9, 2), (0.9, 64), (0.5, 7), (0.99, 16)])
def test_bias_correction_weight_is_keep_to_the_updates(keep, u):
    running = np.array([0.3, 4.0])
    w = keep**u  # Python's pow, an independent computation of the weight
    np.testing.assert_allclose(rs.bias_corrected(running, 1.0, keep, u), (running - w) / (1 - w), rtol=1e-13)


def test_study_reports_keep_to_the_updates_as_initial_weight(rows):
    for r in rows:
        if r["estimator"] == "ema":
            assert r["initial_weight"] == pytest.approx(r["keep"] ** r["updates"], rel=1e-14)


@pytest.mark.slow
def test_importing_the_study_modules_does_not_load_torch():
    import subprocess
    import sys
    from pathlib import Path

    src = str(Path(__file__).resolve().parents[2] / "src")
    code = (
        f"import sys; sys.path.insert(0, {src!r}); "
        "import bnstudy.studies.running_stats.science, bnstudy.nets.data, bnstudy.studies.running_stats.selfchecks; "
        "import bnstudy.compiled.layer, bnstudy.compiled.reductions; "
        "import numpy as np; x = bnstudy.nets.data.synthetic_population(0, 64, 4); "
        "bnstudy.studies.running_stats.science.study(x, [8], [0.9], 'shuffled', 0); "
        "bnstudy.studies.running_stats.selfchecks.table(x, [8], 0.9, 0); "
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr


def test_sorted_pass_keeps_tied_rows_in_their_original_order():
    """Sorting by one feature is stable: rows with equal values keep the order they come in."""
    x = np.zeros((40, 3), np.float32)
    x[:, 1] = np.repeat([2.0, 1.0, 0.0, 1.0], 10)  # ties within each run of ten
    order = np.concatenate(rs.pass_batches(x, 8, "sorted", 0, sort_feature=1))
    want = [*range(20, 30), *range(10, 20), *range(30, 40), *range(0, 10)]
    assert order.tolist() == want
