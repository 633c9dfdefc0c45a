"""Gradient accumulation in the compiled loop, and the accumulation study's training module.

Accumulation without micro-batches (``accumulate=1``) is the loop as it was: the same bytes as
before accumulation existed (a digest taken from the loop before the change). With ``k``
micro-batches the loop is held to PyTorch autograd doing accumulation (loss / k, backward k
times, one step), and to ghost batch norm, which computes the same update in another order.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

import accumulation_families as af
from bnstudy.nets import model as mlp
from bnstudy.nets import plain, train
from bnstudy.nets.recipe import Recipe
from bnstudy.studies.accumulation import report as accumulation_report
from bnstudy.studies.accumulation import science as accumulation


def _data(n=48, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.random((n, 64)) * 4 - 2).astype(np.float32)
    y = rng.integers(0, 10, n).astype(np.int64)
    return x, y


# sha256 of the networks and epoch logs below, trained by the loop before `accumulate` existed
# (commit fa65783); every kind, both optimisers.
FAMILIES = af.section()  # the study's families as the test config declares them: the headline adjusted
BEFORE_ACCUMULATION = "3954ed5441696a7ad41fffa03543d7ead498764a47b14c58519c0e1b615955a6"


@pytest.mark.parametrize("recipe_kw", [{}, {"accumulate": 1}])
def test_accumulate_1_trains_todays_networks_to_the_byte(recipe_kw):
    rng = np.random.default_rng(0)
    x = (rng.random((40, 64)) * 4 - 2).astype(np.float32)
    y = rng.integers(0, 10, 40)
    h = hashlib.sha256()
    for kind in ("none", "batchnorm", "batchrenorm", "layernorm", "groupnorm", "ghostbatchnorm"):
        for opt in ("adam", "sgd"):
            recipe = Recipe(batch_size=4, epochs=2, optimizer=opt, renorm_warmup=0.0, **recipe_kw)
            s, log = train.train_models(mlp.NetSpec(kind, virtual_batch=2), recipe, [0, 1], x, y)
            for k in sorted(s):
                h.update(s[k].tobytes())
            h.update(repr(log).encode())
    assert h.hexdigest() == BEFORE_ACCUMULATION


def test_weights_metadata_names_accumulate_only_when_it_is_not_1():
    assert "accumulate" not in Recipe().metadata()
    assert "accumulate" not in Recipe(accumulate=1).metadata()
    meta = Recipe(batch_size=8, accumulate=4).metadata()
    assert meta["accumulate"] == "4"
    assert Recipe.from_metadata(meta) == Recipe(batch_size=8, accumulate=4)
    assert Recipe.from_metadata(Recipe().metadata()).accumulate == 1


def test_accumulating_changes_the_network():
    x, y = _data(48, seed=1)
    spec = mlp.NetSpec("batchnorm")
    whole, _ = train.train_models(spec, Recipe(batch_size=12, epochs=1), [0], x, y)
    parts, log = train.train_models(spec, Recipe(batch_size=12, epochs=1, accumulate=2), [0], x, y)
    assert not np.array_equal(whole["0.weight"], parts["0.weight"])
    assert int(parts["1.num_batches_tracked"][0]) == 4 * 2  # one update per micro-batch
    assert len(log) == 1


@pytest.mark.parametrize("bad", [0, 5, 7])
def test_batches_that_do_not_split_evenly_are_refused(bad):
    x, y = _data(48)
    with pytest.raises(ValueError, match="micro-batches"):
        train.train_models(mlp.NetSpec("batchnorm"), Recipe(batch_size=12, epochs=1, accumulate=bad), [0], x, y)


@pytest.mark.parametrize("kind", ["none", "batchnorm", "batchrenorm", "layernorm", "groupnorm", "ghostbatchnorm"])
def test_sgd_accumulation_agrees_with_pytorch_autograd(kind):
    """Micro-batches of 12 rows (ghost batch norm: virtual batches of 6 within them); 2 epochs of SGD."""
    x, y = _data(96, seed=1)
    spec = mlp.NetSpec(kind, virtual_batch=6)
    recipe = Recipe(optimizer="sgd", lr=0.05, sgd_momentum=0.9, batch_size=24, epochs=2, renorm_warmup=0.0)
    recipe = Recipe(**{**recipe.__dict__, "accumulate": 2})
    ours, _ = train.train_models(spec, recipe, [0], x, y)
    theirs = plain.train_plain(spec, recipe, 0, x, y).state_dict()
    assert set(ours) == set(theirs)
    updates = 2 * 4 * 2 * (2 if kind == "ghostbatchnorm" else 1)  # epochs x steps x micro-batches (x virtual)
    for key, value in theirs.items():
        if value.is_floating_point():
            np.testing.assert_allclose(ours[key][0], value.numpy(), atol=2e-4, rtol=1e-3, err_msg=key)
        else:
            assert int(ours[key][0]) == int(value) == updates, key


def test_adam_accumulation_without_batch_statistics_agrees_with_torch_adam():
    x, y = _data(96, seed=2)
    spec = mlp.NetSpec("layernorm")
    recipe = Recipe(optimizer="adam", lr=1e-3, batch_size=16, epochs=2, accumulate=4)
    ours, _ = train.train_models(spec, recipe, [4], x, y)
    theirs = plain.train_plain(spec, recipe, 4, x, y).state_dict()
    for key, value in theirs.items():
        np.testing.assert_allclose(ours[key][0], value.numpy(), atol=5e-6, err_msg=key)


def test_plain_loop_accumulates_the_mean_loss_of_the_whole_batch():
    """The reference itself: for a network without batch statistics, k micro-batches of loss / k
    give the gradient of the batch's mean loss (one SGD step of rate 1 from the same weights)."""
    x, y = _data(16, seed=3)
    spec = mlp.NetSpec("layernorm")
    one = Recipe(optimizer="sgd", lr=1.0, sgd_momentum=0.0, batch_size=16, epochs=1)
    whole = plain.train_plain(spec, one, 0, x, y).state_dict()
    parts = plain.train_plain(spec, Recipe(**{**one.__dict__, "accumulate": 4}), 0, x, y).state_dict()
    for key in whole:
        torch.testing.assert_close(parts[key], whole[key], atol=1e-6, rtol=1e-5)


def test_accumulation_and_ghost_batch_norm_take_the_same_first_step():
    """Same groups, same running-statistics updates (bit for bit: the same forward arithmetic),
    the gradient of the same mean loss up to the order of float32 sums."""
    x, y = _data(64, seed=4)
    spec, recipe = mlp.NetSpec("batchnorm"), Recipe(batch_size=32, epochs=1)
    (acc_spec, acc_recipe), (ghost_spec, ghost_recipe), _ = accumulation.variants(spec, recipe, [4]).values()
    assert acc_recipe.accumulate == 8 and ghost_spec.normaliser == "ghostbatchnorm" and ghost_spec.virtual_batch == 4
    a = accumulation.first_gradient(acc_spec, acc_recipe, 0, x, y)
    g = accumulation.first_gradient(ghost_spec, ghost_recipe, 0, x, y)
    for key in ("1.running_mean", "1.running_var", "4.running_mean", "4.running_var", "1.num_batches_tracked"):
        assert np.array_equal(a[key], g[key]), key
    assert int(a["1.num_batches_tracked"]) == 8
    d = accumulation.parameter_distance(a, g)
    assert d["running"] == 0.0
    assert 0 < d["parameters"] <= 1e-6 * accumulation.largest(a)
    # the whole run: the same update each step, so close after a few steps of SGD
    sgd = Recipe(optimizer="sgd", lr=0.01, batch_size=32, epochs=2)
    acc_run, _ = train.train_models(spec, Recipe(**{**sgd.__dict__, "accumulate": 8}), [0], x, y)
    ghost_run, _ = train.train_models(ghost_spec, sgd, [0], x, y)
    far = accumulation.parameter_distance(mlp.unstack(acc_run)[0], mlp.unstack(ghost_run)[0])
    assert far["parameters"] < 1e-4 and far["running"] < 1e-4


def test_first_gradient_is_the_gradient_of_one_sgd_step():
    x, y = _data(32, seed=5)
    spec, recipe = mlp.NetSpec("layernorm"), Recipe(batch_size=16, epochs=3)
    g = accumulation.first_gradient(spec, recipe, 2, x, y)
    rows = accumulation.first_batch(y, recipe, 2)
    assert sorted(rows) == sorted(set(rows)) and len(rows) == 16
    net = mlp.build_module(spec, 2)
    xs, ys = torch.from_numpy(x[rows]), torch.from_numpy(y[rows])
    torch.nn.functional.cross_entropy(net(xs), ys).backward()
    for key, p in net.named_parameters():
        np.testing.assert_allclose(g[key], p.grad.numpy(), atol=2e-7, err_msg=key)


def test_parameter_distance_splits_parameters_biases_and_running_statistics():
    a = {
        "0.weight": np.zeros((2, 2), np.float32),
        "0.bias": np.zeros(2, np.float32),
        "1.running_mean": np.zeros(2, np.float32),
        "1.num_batches_tracked": np.array(3, np.int64),
    }
    b = {k: v.copy() for k, v in a.items()}
    b["0.weight"][1, 0] = -0.5
    b["0.bias"][0] = 0.25
    b["1.running_mean"][1] = 2.0
    b["1.num_batches_tracked"] = np.array(9, np.int64)
    assert accumulation.parameter_distance(a, b) == {"parameters": 0.5, "pre_norm_biases": 0.25, "running": 2.0}
    assert accumulation.largest(b) == 0.5
    with pytest.raises(ValueError, match=r"differ in keys: \['0.bias', '1.num_batches_tracked', '1.running_mean'\]"):
        accumulation.parameter_distance(a, {"0.weight": a["0.weight"]})
    # no key of a kind: a distance of zero
    only = {"0.weight": a["0.weight"]}
    assert accumulation.parameter_distance(only, {"0.weight": b["0.weight"]}) == {
        "parameters": 0.5,
        "pre_norm_biases": 0.0,
        "running": 0.0,
    }


def test_variants_and_their_names():
    spec, recipe = mlp.NetSpec("batchnorm"), Recipe(batch_size=64)
    v = accumulation.variants(spec, recipe, [2, 4])
    assert list(v) == ["accumulate_m2", "ghost_m2", "scaled_m2", "accumulate_m4", "ghost_m4", "scaled_m4"]
    assert v["accumulate_m2"][1].accumulate == 32 and v["accumulate_m4"][1].accumulate == 16
    assert v["ghost_m4"][0].virtual_batch == 4 and v["ghost_m4"][1] == recipe
    # the second arm: batch norm at the micro-batch, no accumulation, the rate times m / B
    assert v["scaled_m2"][0] == spec and v["scaled_m2"][1].accumulate == 1
    assert (v["scaled_m2"][1].batch_size, v["scaled_m4"][1].batch_size) == (2, 4)
    assert v["scaled_m2"][1].lr == recipe.lr / 32 and v["scaled_m4"][1].lr == recipe.lr / 16
    assert v["scaled_m4"][1] == Recipe(batch_size=4, lr=recipe.lr / 16)
    for bad in ([3], [64], [1]):
        with pytest.raises(ValueError):
            accumulation.variants(spec, recipe, bad)
    with pytest.raises(
        ValueError, match=r"unknown variant 'other'; expected one of \('accumulate', 'ghost', 'scaled'\)"
    ):
        accumulation.variant_name("other", 2)


def test_differences_by_seed_and_micro_batch():
    base = {"0.weight": np.zeros((1, 2), np.float32), "1.running_mean": np.zeros(1, np.float32)}
    moved = {"0.weight": np.array([[0.0, 2.0]], np.float32), "1.running_mean": np.ones(1, np.float32)}
    states = {"accumulate_m2": [base, base], "ghost_m2": [base, moved]}
    labels = {
        "accumulate_m2": np.array([[0, 1, 2, 3], [0, 1, 2, 3]]),
        "ghost_m2": np.array([[0, 1, 2, 3], [0, 0, 2, 0]]),
    }
    rows = accumulation.differences(states, states, labels, [2], [5, 7])
    assert [(r["seed"], r["after"]) for r in rows] == [(5, "first_step"), (5, "run"), (7, "first_step"), (7, "run")]
    assert rows[1]["label_disagreement"] == 0.0 and rows[3]["label_disagreement"] == 0.5
    assert np.isnan(rows[0]["label_disagreement"])
    assert rows[3]["parameters"] == 2.0 and rows[3]["running"] == 1.0 and rows[3]["scale"] == 0.0
    assert all(list(r) == accumulation.DIFFERENCE_COLUMNS for r in rows)
    assert [r["micro_batch"] for r in rows] == [2, 2, 2, 2]


# ---- the summary --------------------------------------------------------------------------


def _runs_and_grid():
    """Two seeds, micro-batch 2, batch 8: accuracies chosen so every mean and difference is known."""
    acc = {"accumulate": (0.80, 0.84), "ghost": (0.81, 0.83), "scaled": (0.78, 0.80)}
    shift = {"inference": 0, "recomputed": -0.01, "training": 0.2}  # recomputed: one point more
    runs = [
        {"variant": v, "micro_batch": 2, "seed": s, "mode": mode, "accuracy": a[i] - shift[mode]}
        for v, a in acc.items()
        for mode in shift
        for i, s in enumerate((0, 1))
    ]
    grid = [
        {"normaliser": "batchnorm", "batch_size": b, "seed": s, "mode": mode, "accuracy": a + 0.01 * s}
        for b, a in ((8, 0.95), (2, 0.85))
        for mode in ("inference", "recomputed", "training")
        for s in (0, 1)
    ]
    diffs = []
    for s in (0, 1):
        base = {"micro_batch": 2, "seed": s}
        diffs.append(base | dict(after="first_step", parameters=1e-6 * (s + 1), pre_norm_biases=0.0, running=0.0))
        diffs[-1] |= dict(scale=10.0, label_disagreement=float("nan"))
        diffs.append(base | dict(after="run", parameters=0.1 + s, pre_norm_biases=0.05, running=0.3, scale=1.2))
        diffs[-1]["label_disagreement"] = 0.1 * (s + 1)
    return pd.DataFrame(runs), pd.DataFrame(grid), pd.DataFrame(diffs)


def test_report_means_pairs_and_closeness_by_hand():
    runs, grid, diffs = _runs_and_grid()
    out = accumulation_report.report(runs, grid, diffs, 8, [2], 0.95, 3, 100, 1e-3, FAMILIES)
    cells = out["cells"].set_index(["config", "mode"])
    assert cells.loc[("accumulate", "inference"), "mean"] == pytest.approx(0.82)
    assert cells.loc[("large", "training"), "mean"] == pytest.approx(0.955)
    assert cells.loc[("small", "inference"), "mean"] == pytest.approx(0.855)
    # paired by seed: accumulate - large = (0.80 - 0.95, 0.84 - 0.96) = (-0.15, -0.12)
    pair = out["paired"].set_index(["comparison", "mode"])
    row = pair.loc[("accumulate_vs_large", "inference")]
    t = stats.t.ppf(1 - 0.05 / 8, 1)  # a headline interval: Bonferroni-adjusted over 2 x 2 comparisons
    assert row.gain == pytest.approx(-0.135) and row.sd == pytest.approx(np.std([-0.15, -0.12], ddof=1))
    assert row.ci_high == pytest.approx(-0.135 + t * row.sd / np.sqrt(2))
    assert pair.loc[("ghost_vs_accumulate", "training"), "gain"] == pytest.approx(0.0)
    close = out["closeness"].iloc[0]
    assert close.first_relative == pytest.approx(2e-7) and close.run_parameters == pytest.approx(1.1)
    assert close.run_disagreement == pytest.approx(0.15) and close.run_disagreement_max == pytest.approx(0.2)
    m = out["macros"]
    assert m["accumAccumulateInferenceMin"] == "82.0" and m["accumLargeInferenceMax"] == "95.5"
    assert m["accumAccumulateMinusLargeInferenceMin"] == "-13.50"
    assert m["accumAccumulateMinusLargeInferenceMinVerdict"] == (  # two seeds: t = 50.9
        "contains zero but reaches beyond $\\pm1.0$ points, the smallest difference declared to matter: the two "
        "are neither told apart nor shown equivalent"
    )
    assert pair.loc[("accumulate_vs_large", "inference"), "level"] == 1 - 0.05 / 4
    assert m["accumFirstRelative"] == "$2 \\times 10^{-7}$" and m["accumFirstRunning"] == "identical, bit for bit"
    assert m["accumPartsMin"] == "4" and m["accumStepsLarge"] == "12" and m["accumStepsSmallMin"] == "50"
    assert m["accumRunDisagreementMin"] == "15.0\\%" and m["accumRunDisagreementWorstMin"] == "20.0\\%"
    assert m["accumNetworks"] == "6" and m["accumGhostComparisons"] == "3"
    assert m["accumScaledLrMin"] == "$2.5 \\times 10^{-4}$" and m["accumLr"] == "$10^{-3}$"
    assert m["accumRecomputeAccumulateMin"] == "+1.00" and m["accumRecomputeLargeMin"] == "0.00"
    assert m["accumAccumulateMinusScaledInferenceMin"] == "+3.00"  # (0.80 - 0.78, 0.84 - 0.80)
    assert out["recompute"].set_index("config").loc["scaled", "gain"] == pytest.approx(0.01)
    summary = out["summary"]
    assert summary["accuracy"]["2"]["ghost"]["inference"]["mean"] == pytest.approx(0.82)
    assert summary["paired"]["2"]["accumulate_vs_small"]["inference"]["gain"] == pytest.approx(-0.035)
    header, rows, align, _ = out["latex_table"]
    assert len(header) == len(align) == len(rows[0]) and [r[1] for r in rows][0] == "batch 8"
    assert rows[0][-2].startswith("$+13.50$")  # the large batch minus accumulation, inference mode
    assert rows[0][-1].startswith("$+12.50$")  # and with recomputed statistics
    assert rows[1][-2:] == ["--", "--"]


def test_report_refuses_a_missing_grid_cell():
    runs, grid, diffs = _runs_and_grid()
    with pytest.raises(ValueError, match="batch 2"):
        accumulation_report.report(runs, grid[grid.batch_size != 2], diffs, 8, [2], 0.95, 3, 100, 1e-3, FAMILIES)


def test_ghost_differences_outside_zero_are_named():
    runs, grid, diffs = _runs_and_grid()
    ghost, acc = ((runs.variant == v) & (runs["mode"] == "training") for v in ("ghost", "accumulate"))
    runs.loc[ghost, "accuracy"] = runs.loc[acc, "accuracy"].to_numpy() + 0.05  # the same gain on both seeds
    m = accumulation_report.report(runs, grid, diffs, 8, [2], 0.95, 3, 100, 1e-3, FAMILIES)["macros"]
    assert m["accumGhostResolved"] == "training mode at micro-batch 2"
    assert accumulation_report.verdict(-1, 1) == "contains zero"
