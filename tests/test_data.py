"""The data: the digits split's fixed-order standardisation and the enumerated population."""

from __future__ import annotations

import numpy as np
import pytest

from bnstudy import data
from bnstudy.data import PINNED_VARIANCES, population_parameters, synthetic_population


@pytest.fixture(scope="module")
def split():
    return data.split_digits(0)


# ---- the digits split -----------------------------------------------------------------
def test_split_sizes_and_stratification(split):
    assert len(split.y_train) == 898 and len(split.y_test) == 899
    assert set(split.train_index).isdisjoint(split.test_index)
    counts_train, counts_test = np.bincount(split.y_train), np.bincount(split.y_test)
    assert np.all(np.abs(counts_train - counts_test) <= 1)


def test_standardisation_matches_numpy_mean_and_population_std(split):
    from sklearn.datasets import load_digits

    x = load_digits().data.astype(np.float64)[split.train_index]
    expected_scale = x.std(0)
    constant = expected_scale == 0
    assert constant.any()  # the digits have constant border pixels
    expected_scale[constant] = 1.0
    np.testing.assert_allclose(split.mean, x.mean(0), rtol=1e-14, atol=0)
    np.testing.assert_allclose(split.scale, expected_scale, rtol=1e-13, atol=0)
    np.testing.assert_array_equal(split.scale[constant], 1.0)


def test_standardisation_is_row_order_sums_bit_for_bit(split):
    from sklearn.datasets import load_digits

    x = load_digits().data.astype(np.float64)[split.train_index]
    s = np.zeros(x.shape[1])
    for row in x:
        s = s + row
    mean = s / len(x)
    q = np.zeros(x.shape[1])
    for row in x:
        q = q + (row - mean) * (row - mean)
    scale = np.sqrt(q / len(x))
    scale[scale == 0] = 1.0
    np.testing.assert_array_equal(split.mean, mean)
    np.testing.assert_array_equal(split.scale, scale)
    np.testing.assert_array_equal(split.x_train, ((x - mean) / scale).astype(np.float32))


def test_standardised_training_half_has_mean_zero_and_unit_variance(split):
    x = split.x_train.astype(np.float64)
    varying = split.scale != 1.0
    np.testing.assert_allclose(x.mean(0), 0.0, atol=1e-6)
    np.testing.assert_allclose(x.var(0)[varying], 1.0, rtol=1e-5)


def test_split_gives_the_same_bytes_twice(split):
    again = data.split_digits(0)
    for name in ("x_train", "y_train", "x_test", "y_test", "train_index", "test_index", "mean", "scale"):
        assert getattr(split, name).tobytes() == getattr(again, name).tobytes(), name


# ---- the enumerated population -------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_population_has_exactly_the_chosen_means_and_variances(seed):
    x = synthetic_population(seed, 512, 16)
    means, variances = population_parameters(seed, 16)
    assert x.shape == (512, 16) and x.dtype == np.float64
    # NumPy's own reductions: an independent computation of the population's statistics
    np.testing.assert_allclose(x.mean(0), means, rtol=0, atol=1e-12)
    np.testing.assert_allclose(x.var(0), variances, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(variances[:5], PINNED_VARIANCES)


def test_chosen_statistics_cover_the_design_ranges():
    means, variances = population_parameters(0, 200)
    assert means.min() >= -4 and means.max() <= 4 and means.min() < -3 and means.max() > 3
    assert variances.min() >= 0.1 and variances.max() <= 10
    # log-uniform: about as many below 1 as above
    assert 70 < np.sum(variances < 1.0) < 130


def test_log_uniform_variances_match_numpy_exp_log():
    u = np.random.default_rng(0).random(1000)
    expected = np.exp(np.log(0.1) + u * (np.log(10.0) - np.log(0.1)))
    np.testing.assert_allclose(data.log_uniform(u, 0.1, 10.0), expected, rtol=1e-14)


def test_irwin_hall_adds_left_to_right_and_is_about_standard_normal():
    u = np.random.default_rng(1).random((20000, 12))
    z = data.irwin_hall(u)
    for row, value in zip(u[:50], z[:50]):
        total = float(row[0])
        for v in row[1:]:
            total += float(v)  # left to right, one rounding each (not Python 3.12's compensated sum())
        assert value == total - 6.0
    np.testing.assert_allclose(z, u.sum(-1) - 6.0, atol=1e-13)
    assert abs(z.mean()) < 0.03 and abs(z.var() - 1.0) < 0.03
    assert np.abs(z).max() <= 6.0
    assert abs(np.mean(np.abs(z) < 1.0) - 0.6827) < 0.015  # one-sigma share of a normal


def test_population_gives_the_same_bytes_twice_and_depends_on_the_seed():
    a, b, c = synthetic_population(0), synthetic_population(0), synthetic_population(1)
    assert a.tobytes() == b.tobytes()
    assert not np.array_equal(a, c)
