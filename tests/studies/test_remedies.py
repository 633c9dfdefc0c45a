"""Each replacement statistic against an independent computation on small data.

References: PyTorch's ``nn.BatchNorm1d`` inside the plain module (forward hooks
read each layer's input rows; float32, tolerances stated), ``momentum=None``
passes, float64 NumPy formulas, and values worked out by hand on a tiny network.
"""

import numpy as np
import pytest
import torch

from bnstudy.base import fixedmath
from bnstudy.base.runtime import STREAM_EVAL_BATCHES, derive_seed
from bnstudy.evaluation import recompute
from bnstudy.evaluation.distance import distances
from bnstudy.nets import model as mlp
from bnstudy.nets import torchnet
from bnstudy.nets.model import NetSpec
from bnstudy.studies.batch_size import remedies

SPEC = NetSpec("batchnorm", widths=(64, 12, 10, 10))


def _data(n=41, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, 64)) * 2 + 0.5).astype(np.float32)
    return x, np.arange(n) % 10


def _trained_stack(seeds=(0, 1), updates=5):
    """A stack whose running statistics moved away from their initial values (torchnet updates)."""
    stacked = torchnet.tensors(mlp.initial_stack(SPEC, list(seeds)))
    x = torch.from_numpy(_data()[0])
    with torch.no_grad():
        for k in range(updates):
            torchnet.forward(stacked, SPEC, x[k * 8 : k * 8 + 8].expand(len(seeds), -1, -1), train=True, update=True)
    return {k: v.numpy() for k, v in stacked.items()}


def _module(stacked, i):
    net = mlp.build_module(SPEC)
    net.load_state_dict({k: torch.from_numpy(v) for k, v in mlp.unstack(stacked)[i].items()})
    return net


def _bn_inputs(net, x, batches, train):
    """Input rows of each BatchNorm1d layer, by forward hooks on a plain module (float64 copies)."""
    seen = {layer: [] for layer in mlp.NORMS}
    hooks = [
        net[int(layer)].register_forward_hook(
            lambda mod, inp, out, layer=layer: seen[layer].append(inp[0].detach().double().numpy())
        )
        for layer in mlp.NORMS
    ]
    net.train(train)
    # momentum 0 keeps the buffers fixed while the hooks watch training-mode passes
    for layer in mlp.NORMS:
        net[int(layer)].momentum = 0.0
    with torch.no_grad():
        for idx in batches:
            net(torch.from_numpy(x[idx]))
    for h in hooks:
        h.remove()
    return seen


# ---- (a) debiased EMA -------------------------------------------------------------


def test_debiased_ema_of_a_constant_stream_equals_the_constant():
    stacked = torchnet.tensors(mlp.initial_stack(SPEC, [0, 1]))
    x, _ = _data()
    batch = torch.from_numpy(x[:6]).expand(2, -1, -1)
    with torch.no_grad():
        for _ in range(3):  # the initial value keeps weight 0.9**3 = 0.729
            torchnet.forward(stacked, SPEC, batch, train=True, update=True)
        h1 = torchnet.linear(batch, stacked["0.weight"], stacked["0.bias"]).double()
    numpy_stack = {k: v.numpy() for k, v in stacked.items()}
    mean, var = remedies.debiased_ema(numpy_stack, SPEC)["1"]
    assert mean.dtype == np.float32 and mean.shape == (2, 12)
    assert not np.allclose(numpy_stack["1.running_mean"], h1.mean(1).numpy(), atol=1e-2)
    np.testing.assert_allclose(mean, h1.mean(1).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(var, h1.var(1, unbiased=True).numpy(), rtol=1e-5, atol=1e-5)


def test_debiased_ema_removes_exactly_the_initial_weight():
    stacked = _trained_stack(updates=2)
    mean, var = remedies.debiased_ema(stacked, SPEC)["4"]
    w0 = remedies.initial_weight(SPEC, 2)
    assert w0 == 0.9 * 0.9 == fixedmath.powi(0.9, 2)
    np.testing.assert_allclose(mean * (1 - w0), stacked["4.running_mean"], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(var * (1 - w0) + w0, stacked["4.running_var"], rtol=1e-6, atol=1e-7)


def test_debiased_ema_by_hand_and_its_refusals():
    state = {
        f"{n}.{k}": v
        for n in mlp.NORMS
        for k, v in (
            ("running_mean", np.array([[0.271, -0.542]], np.float32)),  # 0.1 * 2.71, after one update: 1 - 0.9
            ("running_var", np.array([[0.9 + 0.1 * 4.0, 0.9 + 0.1 * 0.25]], np.float32)),
            ("num_batches_tracked", np.array([1], np.int64)),
        )
    }
    mean, var = remedies.debiased_ema(state, SPEC)["1"]
    np.testing.assert_allclose(mean, [[2.71, -5.42]], rtol=1e-6)
    np.testing.assert_allclose(var, [[4.0, 0.25]], rtol=1e-5)
    with pytest.raises(ValueError):
        remedies.debiased_ema(state | {"4.num_batches_tracked": np.array([0])}, SPEC)
    with pytest.raises(ValueError):
        remedies.debiased_ema(state, NetSpec("batchnorm", momentum=None))
    assert remedies.initial_weight(SPEC, 64) == pytest.approx(0.9**64, rel=1e-14)


# ---- the pass ---------------------------------------------------------------------


def test_pass_batches_cover_rows_once_and_follow_the_last_batch_policy():
    y = np.arange(9)
    batches = recompute.pass_batches(y, 2, seed=0)
    assert [len(b) for b in batches] == [2, 2, 2, 2]
    assert len(set(np.concatenate(batches).tolist())) == 8
    assert all(np.array_equal(a, b) for a, b in zip(batches, recompute.pass_batches(y, 2, seed=0)))
    assert [len(b) for b in recompute.pass_batches(np.arange(11), 4, seed=0)] == [4, 4]
    assert [len(b) for b in recompute.pass_batches(np.arange(11), 4, seed=0, last_batch="keep")] == [4, 4, 3]
    assert [len(b) for b in recompute.pass_batches(y, 2, seed=0, last_batch="keep")] == [2, 2, 2, 2]


def test_pass_batches_are_one_pcg64_permutation_cut_in_order():
    y = np.arange(11)
    perm = np.random.default_rng(derive_seed(7, STREAM_EVAL_BATCHES, 4, 1)).permutation(11)
    batches = recompute.pass_batches(y, 4, seed=7)
    assert np.array_equal(np.concatenate(batches), perm[:8])
    assert not np.array_equal(np.concatenate(recompute.pass_batches(y, 4, seed=8)), perm[:8])


def test_training_mode_layer_inputs_are_the_plain_modules_batch_norm_inputs():
    """float32 layer inputs within 1e-5 of nn.BatchNorm1d's (PyTorch sums in another order)."""
    stacked = _trained_stack()
    x, _ = _data(43)
    batches = recompute.pass_batches(np.arange(43), 4, seed=1, last_batch="keep")
    assert [len(b) for b in batches] == [4] * 10 + [3]
    inputs, starts = recompute.training_mode_layer_inputs(stacked, SPEC, x, batches)
    assert list(starts) == list(mlp.NORMS)
    for layer in mlp.NORMS:
        assert starts[layer].tolist() == np.concatenate([[0], np.cumsum([len(b) for b in batches])]).tolist()
    for i in range(2):
        seen = _bn_inputs(_module(stacked, i), x, batches, train=True)
        for layer in mlp.NORMS:
            assert inputs[layer].dtype == np.float32
            np.testing.assert_allclose(inputs[layer][i], np.concatenate(seen[layer]), rtol=1e-5, atol=1e-5)


# ---- (b) cumulative average ----------------------------------------------------------


def test_cumulative_average_equals_pytorch_momentum_none_pass():
    stacked = _trained_stack()
    x, y = _data()
    batches = recompute.pass_batches(y, 4, seed=3)
    ours = remedies.cumulative_average(stacked, SPEC, x, batches)
    for i in range(2):
        net = _module(stacked, i).train()
        for layer in mlp.NORMS:
            net[int(layer)].reset_running_stats()
            net[int(layer)].momentum = None
        with torch.no_grad():
            for idx in batches:
                net(torch.from_numpy(x[idx]))
        for layer in mlp.NORMS:
            np.testing.assert_allclose(ours[layer][0][i], net[int(layer)].running_mean.numpy(), rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(ours[layer][1][i], net[int(layer)].running_var.numpy(), rtol=1e-5, atol=1e-5)


def test_cumulative_average_is_the_mean_of_batch_statistics_with_a_short_last_batch():
    stacked = _trained_stack()
    x, _ = _data(43)
    batches = recompute.pass_batches(np.arange(43), 5, seed=0, last_batch="keep")
    assert [len(b) for b in batches] == [5] * 8 + [3]
    ours = remedies.cumulative_average(stacked, SPEC, x, batches)
    seen = _bn_inputs(_module(stacked, 1), x, batches, train=True)
    for layer in mlp.NORMS:
        np.testing.assert_allclose(
            ours[layer][0][1], np.mean([h.mean(0) for h in seen[layer]], 0), rtol=1e-5, atol=1e-5
        )
        np.testing.assert_allclose(
            ours[layer][1][1], np.mean([h.var(0, ddof=1) for h in seen[layer]], 0), rtol=1e-5, atol=1e-5
        )


# ---- (c) PreciseBN, pooled -------------------------------------------------------------


def test_precise_statistics_are_the_moments_of_every_row_the_plain_module_feeds_its_layers():
    stacked = _trained_stack()
    x, y = _data()
    batches = recompute.pass_batches(y, 4, seed=1)
    ours = recompute.precise_statistics(stacked, SPEC, x, batches)
    seen = _bn_inputs(_module(stacked, 0), x, batches, train=True)
    for layer in mlp.NORMS:
        rows = np.concatenate(seen[layer])  # nn.BatchNorm1d's inputs, float64
        assert len(rows) == 40
        np.testing.assert_allclose(ours[layer][0][0], rows.mean(0), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(ours[layer][1][0], rows.var(0), rtol=1e-5, atol=1e-5)


def test_pooled_variance_exceeds_the_average_batch_variance_by_the_spread_of_batch_means():
    """Two of this module's functions against each other: precise (pooled) and cumulative
    (per batch) over equal batches of B rows share the mean, and
    pooled var = (B - 1) / B * mean unbiased batch var + var of batch means."""
    stacked = _trained_stack()
    x, y = _data()
    batches = recompute.pass_batches(y, 4, seed=1)
    precise = recompute.precise_statistics(stacked, SPEC, x, batches)
    cumulative = remedies.cumulative_average(stacked, SPEC, x, batches)
    inputs, _ = recompute.training_mode_layer_inputs(stacked, SPEC, x, batches)
    for layer in mlp.NORMS:
        means = inputs[layer].astype(np.float64).reshape(2, 10, 4, -1).mean(2)  # (M, K, F)
        np.testing.assert_allclose(precise[layer][0], cumulative[layer][0], rtol=1e-6, atol=1e-6)
        expected = 3 / 4 * cumulative[layer][1].astype(np.float64) + means.var(1)
        np.testing.assert_allclose(precise[layer][1], expected, rtol=1e-5, atol=1e-6)
        assert (precise[layer][1] > 3 / 4 * cumulative[layer][1]).all()


# ---- (d) exact --------------------------------------------------------------------------


def test_exact_statistics_use_layer_one_exact_statistics_for_layer_two():
    stacked = _trained_stack()
    x, _ = _data()
    exact = recompute.exact_statistics(stacked, SPEC, x)
    net = _module(stacked, 1)
    w, b = net[0].weight.detach().double().numpy(), net[0].bias.detach().double().numpy()
    h1 = x.astype(np.float64) @ w.T + b
    np.testing.assert_allclose(exact["1"][0][1], h1.mean(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(exact["1"][1][1], h1.var(0), rtol=1e-5, atol=1e-5)
    net[1].running_mean.copy_(torch.from_numpy(h1.mean(0)))
    net[1].running_var.copy_(torch.from_numpy(h1.var(0)))
    h2 = np.concatenate(_bn_inputs(net, x, [np.arange(len(x))], train=False)["4"])
    np.testing.assert_allclose(exact["4"][0][1], h2.mean(0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(exact["4"][1][1], h2.var(0), rtol=1e-4, atol=1e-5)


def test_precise_and_exact_are_the_same_bits_at_layer_one_over_every_row_in_order():
    stacked = _trained_stack()
    x, y = _data()
    exact = recompute.exact_statistics(stacked, SPEC, x)
    precise = recompute.precise_statistics(stacked, SPEC, x, [np.arange(len(x))])
    for k in (0, 1):
        assert precise["1"][k].tobytes() == exact["1"][k].tobytes()
    # layer 2: batch statistics (one batch of all rows) against the float32-rounded exact ones
    assert not np.array_equal(precise["4"][0], exact["4"][0])
    np.testing.assert_allclose(precise["4"][0], exact["4"][0], rtol=1e-4, atol=1e-4)
    stats = remedies.all_statistics(stacked, SPEC, x, y, batch_size=2, seed=0)
    rows = {(r["layer"], r["model"]): r for r in distances(stats["precise_bn"], stats["exact"])}
    # batches of two rows hold every row except one dropped single: layer 1 nearly equal
    assert rows[(1, 0)]["mean_distance"] < 0.05
    assert rows[(2, 0)]["mean_distance"] > rows[(1, 0)]["mean_distance"]


# ---- a tiny network by hand ---------------------------------------------------------------

# Identity Linear layers on two features, batch norm with gamma 1, beta 0. Layer 1's input is
# x itself. In a batch of two rows, layer 1's normalised output is about +1 for the larger row
# and -1 for the smaller in each feature, (1, 0) after ReLU: layer 2's input is 1 for the
# larger row and 0 for the smaller, in every feature and every batch.
TINY = NetSpec("batchnorm", widths=(2, 2, 2, 2))
TINY_X = np.array([[0.0, 3.0], [1.0, 7.0], [2.0, 5.0], [4.0, 1.0], [7.0, 0.0], [10.0, 2.0]], np.float32)


def _tiny_stack():
    eye = np.eye(2, dtype=np.float32)
    state = {
        "0.weight": eye,
        "0.bias": np.zeros(2, np.float32),
        "3.weight": eye,
        "3.bias": np.zeros(2, np.float32),
        "6.weight": eye,
        "6.bias": np.zeros(2, np.float32),
    }
    for norm in mlp.NORMS:
        state |= {
            f"{norm}.weight": np.ones(2, np.float32),
            f"{norm}.bias": np.zeros(2, np.float32),
            f"{norm}.running_mean": np.zeros(2, np.float32),
            f"{norm}.running_var": np.ones(2, np.float32),
            f"{norm}.num_batches_tracked": np.array(3, np.int64),
        }
    return mlp.stack([state, state | {"0.bias": np.array([1.0, -2.0], np.float32)}])


def test_tiny_network_statistics_by_hand():
    stacked = _tiny_stack()
    batches = [np.array([0, 5]), np.array([3, 1]), np.array([2, 4])]
    cumulative = remedies.cumulative_average(stacked, TINY, TINY_X, batches)
    precise = recompute.precise_statistics(stacked, TINY, TINY_X, batches)
    # layer 1, model 0: pair means (5, 2.5), (2.5, 4), (4.5, 2.5) -> mean (4, 3), that of all rows
    # unbiased pair variances (a - b)**2 / 2: (50, 0.5), (4.5, 18), (12.5, 12.5) -> (67 / 3, 31 / 3)
    np.testing.assert_allclose(cumulative["1"][0][0], [4.0, 3.0], rtol=1e-7)
    np.testing.assert_allclose(cumulative["1"][1][0], [67 / 3, 31 / 3], rtol=1e-7)
    # model 1 adds the bias (1, -2): means shift, variances do not
    np.testing.assert_allclose(cumulative["1"][0][1], [5.0, 1.0], rtol=1e-7)
    np.testing.assert_allclose(cumulative["1"][1][1], [67 / 3, 31 / 3], rtol=1e-7)
    # pooled over the six rows: x0 = 0 1 2 4 7 10 (mean 4, var 74 / 6); x1 = 3 7 5 1 0 2 (mean 3, var 34 / 6)
    np.testing.assert_allclose(precise["1"][0], [[4.0, 3.0], [5.0, 1.0]], rtol=1e-7)
    np.testing.assert_allclose(precise["1"][1], [[74 / 6, 34 / 6]] * 2, rtol=1e-7)
    # layer 2: in each pair, differing by d in a feature, the larger row is v = (d / 2) / sqrt((d / 2)**2 + eps)
    # (about 1), the smaller 0: pair mean v / 2, unbiased variance v**2 / 2; pooled over the six rows, the
    # moments of (v1, 0, v2, 0, v3, 0). The same for both models (a bias does not change a difference).
    d = np.array([[10.0, 1.0], [3.0, 6.0], [5.0, 5.0]]) / 2
    v = d / np.sqrt(d * d + 1e-5)
    np.testing.assert_allclose(cumulative["4"][0], [(v / 2).mean(0)] * 2, rtol=1e-6)
    np.testing.assert_allclose(cumulative["4"][1], [(v * v / 2).mean(0)] * 2, rtol=1e-6)
    rows = np.concatenate([v, np.zeros_like(v)])
    np.testing.assert_allclose(precise["4"][0], [rows.mean(0)] * 2, rtol=1e-6)
    np.testing.assert_allclose(precise["4"][1], [rows.var(0)] * 2, rtol=1e-6)
    assert abs(precise["4"][1][0, 0] - 0.25) < 1e-6 and abs(cumulative["4"][1][0, 1] - 0.5) < 1e-4


def test_tiny_network_exact_statistics_by_hand():
    exact = recompute.exact_statistics(_tiny_stack(), TINY, TINY_X)
    np.testing.assert_allclose(exact["1"][0][0], [4.0, 3.0], rtol=1e-7)
    np.testing.assert_allclose(exact["1"][1][0], [74 / 6, 34 / 6], rtol=1e-7)
    # layer 2's input: relu((x - mean) / sqrt(var + eps)) with layer 1's exact statistics
    x = TINY_X.astype(np.float64)
    z = np.maximum((x - [4.0, 3.0]) / np.sqrt(np.array([74 / 6, 34 / 6]) + 1e-5), 0)
    # feature 0: (0, 0, 0, 0, 3, 6) / s: mean 1.5 / s, var (4 * 1.5**2 + 1.5**2 + 4.5**2) / 6 / s**2
    s0 = np.sqrt(74 / 6 + 1e-5)
    assert z[:, 0] * s0 == pytest.approx([0, 0, 0, 0, 3, 6])
    np.testing.assert_allclose(exact["4"][0][0][0], 1.5 / s0, rtol=1e-6)
    np.testing.assert_allclose(exact["4"][1][0][0], (4 * 1.5**2 + 1.5**2 + 4.5**2) / 6 / s0**2, rtol=1e-6)
    np.testing.assert_allclose(exact["4"][0][0], z.mean(0), rtol=1e-6)
    np.testing.assert_allclose(exact["4"][1][0], z.var(0), rtol=1e-6)


# ---- distances ------------------------------------------------------------------------


def test_distances_by_hand():
    """A known non-zero answer: exact means 0 and variances 1 - eps (so var + eps = 1, 4)."""
    eps = 1e-5
    exact = {layer: (np.zeros((1, 2)), np.array([[1.0 - eps, 4.0 - eps]])) for layer in mlp.NORMS}
    # mean shifts of 1 and 2 exact standard deviations (1 / 1 and 4 / 4); variances e and 4 e**-2 times
    other = {layer: (np.array([[1.0, 4.0]]), np.array([[np.e - eps, 4.0 * np.exp(-2.0) - eps]])) for layer in mlp.NORMS}
    rows = distances(other, exact, eps)
    assert [(r["model"], r["layer"]) for r in rows] == [(0, 1), (0, 2)]
    for r in rows:
        assert r["mean_distance"] == pytest.approx(np.sqrt((1 + 4) / 2), rel=1e-12)
        assert r["var_distance"] == pytest.approx(np.sqrt((1 + 4) / 2), rel=1e-12)
    # eps enters both: with another eps the same statistics are at another distance
    assert distances(other, exact, 0.5)[0]["var_distance"] != rows[0]["var_distance"]


def test_distances_of_the_trained_statistics_against_a_float64_reference():
    stacked = _trained_stack()
    x, _ = _data()
    exact = recompute.exact_statistics(stacked, SPEC, x)
    rows = distances(recompute.running_statistics(stacked), exact, SPEC.eps)
    for r in rows:
        layer = mlp.NORMS[r["layer"] - 1]
        mean, var = (stacked[f"{layer}.{k}"][r["model"]].astype(np.float64) for k in ("running_mean", "running_var"))
        emean, evar = (a[r["model"]].astype(np.float64) for a in exact[layer])
        assert r["mean_distance"] == pytest.approx(np.sqrt(np.mean((mean - emean) ** 2 / (evar + 1e-5))), rel=1e-12)
        assert r["var_distance"] == pytest.approx(
            np.sqrt(np.mean(np.log((var + 1e-5) / (evar + 1e-5)) ** 2)), rel=1e-12
        )
        assert r["mean_distance"] > 0 and r["var_distance"] > 0


# ---- the whole set, determinism, no writes ------------------------------------------------------


def test_all_statistics_twice_give_the_same_bytes_and_a_model_alone_the_same_numbers():
    stacked = _trained_stack(seeds=(0, 1, 2))
    x, y = _data()
    first = remedies.all_statistics(stacked, SPEC, x, y, batch_size=4, seed=0)
    second = remedies.all_statistics(stacked, SPEC, x, y, batch_size=4, seed=0)
    alone = remedies.all_statistics({k: v[2:] for k, v in stacked.items()}, SPEC, x, y, batch_size=4, seed=0)
    assert list(first) == ["ema", "debiased_ema", "cumulative", "precise_bn", "exact"]
    for name in first:
        for layer in mlp.NORMS:
            for k in (0, 1):
                assert first[name][layer][k].dtype == np.float32
                assert first[name][layer][k].tobytes() == second[name][layer][k].tobytes(), (name, layer)
                assert first[name][layer][k][2:].tobytes() == alone[name][layer][k].tobytes(), (name, layer)


def test_remedies_leave_the_stack_untouched():
    stacked = _trained_stack()
    before = {k: v.copy() for k, v in stacked.items()}
    x, y = _data()
    stats = remedies.all_statistics(stacked, SPEC, x, y, batch_size=4, seed=0)
    copy = recompute.with_statistics(stacked, stats["exact"])
    copy["1.running_mean"] += 1.0
    for k in stacked:
        assert stacked[k].tobytes() == before[k].tobytes(), k
    assert not np.array_equal(copy["1.running_mean"], stacked["1.running_mean"])
    assert copy["4.running_var"].tobytes() == stats["exact"]["4"][1].tobytes()


def test_remedies_refuse_other_normalisers():
    spec = NetSpec("layernorm", widths=(64, 12, 10, 10))
    stacked = mlp.initial_stack(spec, [0])
    x, y = _data()
    with pytest.raises(ValueError):
        remedies.all_statistics(stacked, spec, x, y, 4, 0)
