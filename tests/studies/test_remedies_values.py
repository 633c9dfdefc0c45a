"""Remedies and interval statistics: copies, dtypes, defaults, error messages and
the numerically delicate cases, by value (written to kill the mutants mutation
testing found alive; see docs/mutation.md)."""

import math

import numpy as np
import pandas as pd
import pytest

from bnstudy.base import stats
from bnstudy.evaluation import recompute
from bnstudy.evaluation.distance import distances
from bnstudy.nets import model as mlp
from bnstudy.nets.model import NetSpec
from bnstudy.studies.batch_size import remedies

SPEC = NetSpec("batchnorm", widths=(6, 4, 3, 3))


def _stack(seeds=(0, 1)):
    stacked = {k: np.array(v) for k, v in mlp.initial_stack(SPEC, list(seeds)).items()}
    rng = np.random.default_rng(0)
    for layer in mlp.NORMS:
        stacked[f"{layer}.running_mean"] = rng.standard_normal(stacked[f"{layer}.running_mean"].shape).astype(
            np.float32
        )
        stacked[f"{layer}.running_var"] = (0.5 + rng.random(stacked[f"{layer}.running_var"].shape)).astype(np.float32)
        stacked[f"{layer}.num_batches_tracked"] = np.full(len(seeds), 5)
    return stacked


def _x(n=12, seed=1):
    return (np.random.default_rng(seed).standard_normal((n, 6)) * 2 + 0.5).astype(np.float32)


# ---- copies and dtypes ------------------------------------------------------------


def test_running_statistics_are_copies():
    stacked = _stack()
    before = {k: v.copy() for k, v in stacked.items()}
    got = recompute.running_statistics(stacked)
    for layer in mlp.NORMS:
        assert got[layer][0].tolist() == before[f"{layer}.running_mean"].tolist()
        assert got[layer][1].tolist() == before[f"{layer}.running_var"].tolist()
        got[layer][0][...] = 7.0
        got[layer][1][...] = 7.0
    for k in stacked:
        assert np.array_equal(stacked[k], before[k]), k


def test_with_statistics_copies_keeps_dtype_and_shape():
    stacked = _stack()
    before = {k: v.copy() for k, v in stacked.items()}
    m, f = stacked["1.running_mean"].shape
    mean = np.arange(m * f, dtype=np.float64) / 3  # float64 and flat: stored as float32 (m, f)
    var = np.full((m, f), 2.0)
    out = recompute.with_statistics(stacked, {"1": (mean, var)})
    assert out["1.running_mean"].dtype == np.float32 and out["1.running_mean"].shape == (m, f)
    assert out["1.running_mean"].tolist() == mean.astype(np.float32).reshape(m, f).tolist()
    assert out["1.running_var"].tolist() == var.tolist()
    assert out["4.running_mean"].tolist() == before["4.running_mean"].tolist()
    # neither the stack nor the given statistics are shared with the result
    for v in out.values():
        v[...] = 0
    mean[...] = -1.0
    var[...] = -1.0
    for k in stacked:
        assert np.array_equal(stacked[k], before[k]), k
    again = recompute.with_statistics(stacked, {"1": (np.ones((m, f)), var)})
    var[...] = 5.0
    assert again["1.running_var"].tolist() == [[-1.0] * f] * m
    # statistics already of the stored dtype and shape are copied too, not taken as they are
    var32 = np.full((m, f), 2.0, np.float32)
    third = recompute.with_statistics(stacked, {"1": (mean, var32)})
    var32[...] = 7.0
    assert third["1.running_var"].tolist() == [[2.0] * f] * m


# ---- (a) debiased EMA by hand -------------------------------------------------------


def test_debiased_ema_by_hand():
    stacked = _stack()
    stacked["1.num_batches_tracked"] = np.array([1, 2])
    stacked["4.num_batches_tracked"] = np.array([3, 1])
    out = remedies.debiased_ema(stacked, SPEC)  # momentum 0.1: w0 = 0.9 ** u
    for layer, u in (("1", [1, 2]), ("4", [3, 1])):
        w0 = np.array([[0.9**k] for k in u])
        mean = stacked[f"{layer}.running_mean"].astype(np.float64)
        var = stacked[f"{layer}.running_var"].astype(np.float64)
        np.testing.assert_allclose(out[layer][0], mean / (1 - w0), rtol=1e-6)
        np.testing.assert_allclose(out[layer][1], (var - w0) / (1 - w0), rtol=1e-5, atol=1e-6)
        assert out[layer][0].dtype == np.float32 and out[layer][1].dtype == np.float32


def test_debiased_ema_refuses_with_its_reasons():
    stacked = _stack()
    stacked["1.num_batches_tracked"] = np.array([1, 0])
    stacked["4.num_batches_tracked"] = np.array([1, 1])
    with pytest.raises(ValueError, match="^debiasing needs at least one update$"):
        remedies.debiased_ema(stacked, SPEC)
    cumulative = NetSpec("batchnorm", widths=(6, 4, 3, 3), momentum=None)
    with pytest.raises(ValueError, match=r"^the cumulative average \(momentum=None\) carries no initial-value bias$"):
        remedies.debiased_ema(_stack(), cumulative)


def test_remedies_refuse_other_normalisers_with_one_message():
    other = NetSpec("layernorm", widths=(6, 4, 3, 3))
    stack = {k: np.array(v) for k, v in mlp.initial_stack(other, [0]).items()}
    message = "^the remedies replace batch norm's running statistics$"
    with pytest.raises(ValueError, match=message):
        recompute.exact_statistics(stack, other, _x())
    with pytest.raises(ValueError, match=message):
        remedies.all_statistics(stack, other, _x(), np.arange(12) % 3, batch_size=4, seed=0)
    with pytest.raises(ValueError, match=message):
        recompute.training_mode_layer_inputs(stack, other, _x(), np.arange(12).reshape(3, 4))


# ---- (d) exact statistics: the rows are rounded to float32 first ---------------------


def test_exact_statistics_round_the_rows_to_float32_first():
    stacked, x = _stack(), _x()
    a = recompute.exact_statistics(stacked, SPEC, x)
    b = recompute.exact_statistics(stacked, SPEC, x.astype(np.float64))
    for layer in mlp.NORMS:
        for k in (0, 1):
            assert a[layer][k].dtype == np.float32
            assert a[layer][k].tobytes() == b[layer][k].tobytes()


# ---- distances ------------------------------------------------------------------------


def test_distances_by_hand_with_more_models_than_features_and_the_default_eps():
    exact = {layer: (np.zeros((3, 1)), np.full((3, 1), 1.0)) for layer in mlp.NORMS}
    other = {layer: (np.array([[1.0], [2.0], [0.0]]), np.full((3, 1), 1.0)) for layer in mlp.NORMS}
    rows = distances(other, exact)  # eps 1e-5
    assert [(r["model"], r["layer"]) for r in rows] == [(0, 1), (1, 1), (2, 1), (0, 2), (1, 2), (2, 2)]
    for r, shift in zip(rows, [1.0, 2.0, 0.0] * 2):
        assert r["mean_distance"] == pytest.approx(shift / math.sqrt(1 + 1e-5), rel=1e-12)
        assert r["var_distance"] == 0.0
    wide = {layer: (np.zeros((3, 1)), np.full((3, 1), 3.0)) for layer in mlp.NORMS}
    rows = distances(wide, exact)
    assert rows[0]["var_distance"] == pytest.approx(abs(math.log((3 + 1e-5) / (1 + 1e-5))), rel=1e-12)


# ---- all statistics: the pass is cut as training cut its epochs ---------------------


def test_all_statistics_cut_the_pass_with_the_given_last_batch_policy():
    stacked, x = _stack(), _x(14)
    y = np.arange(14) % 3
    keep = remedies.all_statistics(stacked, SPEC, x, y, batch_size=4, seed=3, last_batch="keep")
    batches = recompute.pass_batches(y, 4, 3, "keep")
    assert [len(b) for b in batches] == [4, 4, 4, 2]
    precise = recompute.precise_statistics(stacked, SPEC, x, batches)
    for layer in mlp.NORMS:
        assert keep["precise_bn"][layer][1].tobytes() == precise[layer][1].tobytes()
    drop = remedies.all_statistics(stacked, SPEC, x, y, batch_size=4, seed=3)
    assert drop["precise_bn"]["1"][1].tobytes() != keep["precise_bn"]["1"][1].tobytes()


# ---- interval statistics -----------------------------------------------------------------


def test_mean_sd_is_two_pass_where_one_pass_cancels():
    """Around 1e8 the spread 1 survives only in the two-pass form sum((x - mean)**2)."""
    mean, sd = stats.mean_sd([1e8, 1e8 + 1, 1e8 + 2])
    assert mean == 1e8 + 1 and sd == 1.0
    mean, sd = stats.mean_sd([-3e8, -3e8 + 2])
    assert sd == pytest.approx(math.sqrt(2), rel=1e-15)
    mean, sd = stats.mean_sd([4.0])
    assert mean == 4.0 and math.isnan(sd)


def test_seed_interval_default_confidence_is_95_percent():
    assert stats.seed_interval([1.0, 2.0, 4.0]) == stats.seed_interval([1.0, 2.0, 4.0], 0.95)
    mean, sd, lo, hi = stats.seed_interval([1.0, 3.0])
    assert (mean, sd) == (2.0, math.sqrt(2))
    assert hi - mean == pytest.approx(12.706204736174707 * math.sqrt(2) / math.sqrt(2), rel=1e-12)


def test_summarise_over_seeds_sorts_the_groups():
    df = pd.DataFrame({"g": ["b", "a", "b", "c", "a"], "h": [2, 1, 2, 0, 1], "x": [1.0, 2.0, 3.0, 4.0, 6.0]})
    out = stats.summarise_over_seeds(df, ["g"], "x", 0.95)
    assert out["g"].tolist() == ["a", "b", "c"]
    assert out["mean"].tolist() == [4.0, 2.0, 4.0]
    assert out["seeds"].tolist() == [2, 2, 1]
    two = stats.summarise_over_seeds(df, ["h", "g"], "x", 0.95)
    assert list(zip(two["h"], two["g"])) == [(0, "c"), (1, "a"), (2, "b")]
    assert list(two.columns) == ["h", "g", "seeds", "mean", "sd", "ci_low", "ci_high"]
