"""Each replacement statistic against a direct definition on small data."""

import numpy as np
import pytest
import torch

from bnstudy import model as mlp
from bnstudy import remedies
from bnstudy.model import NetSpec

SPEC = NetSpec("batchnorm", widths=(64, 12, 10, 10))


def _data(n=41, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 64, generator=g) * 2 + 0.5
    y = torch.arange(n) % 10
    return x, y


def _trained_stack(seeds=(0, 1), updates=5):
    """A stack whose running statistics moved away from their initial values."""
    stacked = mlp.initial_stack(SPEC, list(seeds))
    x, _ = _data()
    with torch.no_grad():
        for k in range(updates):
            idx = torch.arange(k * 8, k * 8 + 8)
            mlp.forward(stacked, SPEC, x[idx].expand(len(seeds), -1, -1), train=True, update=True)
    return stacked


def _module(stacked, i):
    net = mlp.build_module(SPEC)
    net.load_state_dict(mlp.unstack(stacked)[i])
    return net


def _bn_inputs(net, x, batches, train):
    """Input rows of each BatchNorm1d layer, by forward hooks on a plain module."""
    seen = {layer: [] for layer in mlp.NORMS}
    hooks = [net[int(layer)].register_forward_hook(
        lambda mod, inp, out, layer=layer: seen[layer].append(inp[0].detach().double().numpy()))
        for layer in mlp.NORMS]
    net.train(train)
    # momentum 0 keeps the buffers fixed while the hooks watch training-mode passes
    for layer in mlp.NORMS:
        net[int(layer)].momentum = 0.0
    with torch.no_grad():
        for idx in batches:
            net(x[idx])
    for h in hooks:
        h.remove()
    return seen


def test_debiased_ema_of_a_constant_stream_equals_the_constant():
    stacked = mlp.initial_stack(SPEC, [0, 1])
    x, _ = _data()
    batch = x[:6].expand(2, -1, -1)
    with torch.no_grad():
        for _ in range(3):  # the initial value keeps weight 0.9**3 = 0.729
            mlp.forward(stacked, SPEC, batch, train=True, update=True)
    h1 = mlp.linear(batch, stacked["0.weight"], stacked["0.bias"])
    mean, var = remedies.debiased_ema(stacked, SPEC)["1"]
    assert not torch.allclose(stacked["1.running_mean"], h1.mean(1), atol=1e-2)
    torch.testing.assert_close(mean, h1.mean(1), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(var, h1.var(1, unbiased=True), rtol=1e-5, atol=1e-5)


def test_debiased_ema_removes_exactly_the_initial_weight():
    stacked = _trained_stack(updates=2)
    mean, var = remedies.debiased_ema(stacked, SPEC)["4"]
    w0 = remedies.initial_weight(SPEC, 2)
    assert w0 == pytest.approx(0.81)
    torch.testing.assert_close(mean * (1 - w0), stacked["4.running_mean"], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(var * (1 - w0) + w0, stacked["4.running_var"], rtol=1e-5, atol=1e-6)


def test_cumulative_average_equals_pytorch_momentum_none_pass():
    stacked = _trained_stack()
    x, y = _data()
    batches = remedies.pass_batches(y, 4, seed=3)
    ours = remedies.cumulative_average(stacked, SPEC, x, batches)
    for i in range(2):
        net = _module(stacked, i).train()
        for layer in mlp.NORMS:
            net[int(layer)].reset_running_stats()
            net[int(layer)].momentum = None
        with torch.no_grad():
            for idx in batches:
                net(x[idx])
        for layer in mlp.NORMS:
            torch.testing.assert_close(ours[layer][0][i], net[int(layer)].running_mean, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(ours[layer][1][i], net[int(layer)].running_var, rtol=1e-5, atol=1e-5)


def test_cumulative_average_is_the_mean_of_batch_statistics():
    stacked = _trained_stack()
    x, y = _data()
    batches = remedies.pass_batches(y, 5, seed=0)
    ours = remedies.cumulative_average(stacked, SPEC, x, batches)
    seen = _bn_inputs(_module(stacked, 1), x, batches, train=True)
    for layer in mlp.NORMS:
        np.testing.assert_allclose(ours[layer][0][1], np.mean([h.mean(0) for h in seen[layer]], 0), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(ours[layer][1][1], np.mean([h.var(0, ddof=1) for h in seen[layer]], 0), rtol=1e-5, atol=1e-5)


def test_precise_variance_is_numpy_variance_of_all_rows_of_the_layer_input():
    stacked = _trained_stack()
    x, y = _data()
    batches = remedies.pass_batches(y, 4, seed=1)
    ours = remedies.precise_statistics(stacked, SPEC, x, batches)
    seen = _bn_inputs(_module(stacked, 0), x, batches, train=True)
    for layer in mlp.NORMS:
        rows = np.concatenate(seen[layer])
        assert len(rows) == sum(len(b) for b in batches)
        np.testing.assert_allclose(ours[layer][0][0], rows.mean(0), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(ours[layer][1][0], rows.var(0), rtol=1e-5, atol=1e-5)
    # pooled variance exceeds the mean of per-batch variances by the spread of batch means
    per_batch = np.mean([h.var(0) for h in seen["1"]], 0)
    assert (rows_var := np.concatenate(seen["1"]).var(0)).sum() > per_batch.sum()
    assert rows_var.sum() == pytest.approx(per_batch.sum() + np.var([h.mean(0) for h in seen["1"]], 0).sum(), rel=1e-6)


def test_exact_statistics_use_layer_one_exact_statistics_for_layer_two():
    stacked = _trained_stack()
    x, y = _data()
    exact = remedies.exact_statistics(stacked, SPEC, x)
    net = _module(stacked, 1)
    w, b = net[0].weight.detach().double().numpy(), net[0].bias.detach().double().numpy()
    h1 = x.double().numpy() @ w.T + b
    np.testing.assert_allclose(exact["1"][0][1], h1.mean(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(exact["1"][1][1], h1.var(0), rtol=1e-5, atol=1e-5)
    net[1].running_mean.copy_(torch.from_numpy(h1.mean(0)))
    net[1].running_var.copy_(torch.from_numpy(h1.var(0)))
    h2 = np.concatenate(_bn_inputs(net, x, [torch.arange(len(x))], train=False)["4"])
    np.testing.assert_allclose(exact["4"][0][1], h2.mean(0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(exact["4"][1][1], h2.var(0), rtol=1e-4, atol=1e-5)


def test_precise_and_exact_agree_at_layer_one_only():
    stacked = _trained_stack()
    x, y = _data()
    stats = remedies.all_statistics(stacked, SPEC, x, y, batch_size=2, seed=0)
    rows = {(r["layer"], r["model"]): r for r in remedies.distances(stats["precise_bn"], stats["exact"])}
    # batches of two rows hold every row except one dropped single: layer 1 nearly equal
    assert rows[(1, 0)]["mean_distance"] < 0.05
    assert rows[(2, 0)]["mean_distance"] > rows[(1, 0)]["mean_distance"]
    full = remedies.pass_batches(y, len(y), seed=0)
    precise_full = remedies.precise_statistics(stacked, SPEC, x, full)
    exact_rows = remedies.distances(precise_full, stats["exact"])
    assert all(r["mean_distance"] < 1e-5 for r in exact_rows if r["layer"] == 1)


def test_distances_are_zero_to_themselves_and_positive_otherwise():
    stacked = _trained_stack()
    x, _ = _data()
    exact = remedies.exact_statistics(stacked, SPEC, x)
    assert all(r["mean_distance"] == 0 and r["var_distance"] == 0 for r in remedies.distances(exact, exact))
    own = remedies.distances(remedies.running_statistics(stacked), exact)
    assert all(r["mean_distance"] > 0 and r["var_distance"] > 0 for r in own)


def test_pass_batches_cover_rows_once_and_follow_the_last_batch_policy():
    y = torch.arange(9)
    batches = remedies.pass_batches(y, 2, seed=0)
    assert [len(b) for b in batches] == [2, 2, 2, 2]
    flat = torch.cat(batches)
    assert len(set(flat.tolist())) == 8
    assert all(torch.equal(a, b) for a, b in zip(batches, remedies.pass_batches(y, 2, seed=0)))
    assert [len(b) for b in remedies.pass_batches(torch.arange(11), 4, seed=0)] == [4, 4]
    assert [len(b) for b in remedies.pass_batches(torch.arange(11), 4, seed=0, last_batch="keep")] == [4, 4, 3]
    assert [len(b) for b in remedies.pass_batches(y, 2, seed=0, last_batch="keep")] == [2, 2, 2, 2]


def test_remedies_leave_the_stack_untouched():
    stacked = _trained_stack()
    before = {k: v.clone() for k, v in stacked.items()}
    x, y = _data()
    stats = remedies.all_statistics(stacked, SPEC, x, y, batch_size=4, seed=0)
    copy = remedies.with_statistics(stacked, stats["exact"])
    copy["1.running_mean"].add_(1.0)
    for k in stacked:
        assert torch.equal(stacked[k], before[k]), k
    assert not torch.equal(copy["1.running_mean"], stacked["1.running_mean"])


def test_remedies_refuse_other_normalisers():
    spec = NetSpec("layernorm", widths=(64, 12, 10, 10))
    stacked = mlp.initial_stack(spec, [0])
    x, y = _data()
    with pytest.raises(ValueError):
        remedies.all_statistics(stacked, spec, x, y, 4, 0)
