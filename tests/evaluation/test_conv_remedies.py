"""The running-statistics remedies on the convolutional network, against independent computations.

References: PyTorch's ``nn.BatchNorm2d`` inside the plain module of :mod:`bnstudy.nets.conv_torch`
(forward hooks read each layer's input; float32, tolerances as tests/studies/test_remedies.py's for the
MLP), ``momentum=None`` passes from reset buffers, float64 NumPy moments of ``conv2d``'s output.
Two small networks trained one epoch by the compiled loop: two plain convolutions, and four with
a stride-2 convolution and a residual connection.
"""

import numpy as np
import pytest
import torch

from bnstudy.base import fixedmath
from bnstudy.evaluation import accuracy as scores
from bnstudy.evaluation import recompute
from bnstudy.nets import conv_torch, conv_train, train
from bnstudy.nets import model as mlp
from bnstudy.nets.conv_train import ConvSpec
from bnstudy.nets.model import NetSpec
from bnstudy.nets.recipe import Recipe
from bnstudy.studies.batch_size import evaluation, remedies

PLAIN = ConvSpec("batchnorm", (4, 6))
# 8x8 -> 8x8 -> 4x4 (stride 2) -> 4x4 adding layer 2's output -> 4x4
RESIDUAL = ConvSpec("batchnorm", (4, 6, 6, 5), strides=(1, 2, 1, 1), skips=(-1, -1, 1, -1))
SPECS = {"plain": PLAIN, "residual": RESIDUAL}
N, BATCH = 300, 16


def _images(n=N, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, 64)) * 1.5 + 0.3).astype(np.float32), (np.arange(n) % 10).astype(np.int64)


@pytest.fixture(scope="module", params=list(SPECS))
def trained(request):
    """``(spec, stack)``: two networks (seeds 0 and 1), one epoch in batches of 16."""
    spec = SPECS[request.param]
    x, y = _images()
    stacked, _ = train.train_models(spec, Recipe(batch_size=BATCH, lr=1e-2, epochs=1), [0, 1], x, y)
    return spec, stacked


def _module(stacked, spec, i):
    return conv_torch.build_module(spec, state={k: v[i] for k, v in stacked.items()})


def _rows(t):
    """``(N, C, H, W)`` to the kernels' rows: one per (example, position), positions row-major, float64."""
    return t.detach().double().permute(0, 2, 3, 1).reshape(-1, t.shape[1]).numpy()


def _bn_inputs(net, spec, x, batches, train):
    """Input rows of each BatchNorm2d, by forward hooks, batch by batch (momentum 0: buffers kept)."""
    layers = recompute.norm_layers(spec)
    seen = {layer: [] for layer in layers}
    hooks = [
        net[int(layer)].register_forward_hook(lambda mod, inp, out, layer=layer: seen[layer].append(_rows(inp[0])))
        for layer in layers
    ]
    net.train(train)
    for layer in layers:
        net[int(layer)].momentum = 0.0
    with torch.no_grad():
        for idx in batches:
            net(conv_torch.images(x[idx]))
    for h in hooks:
        h.remove()
    return seen


def _positions(spec):
    return [int(p) for p in spec.arch_on(8).geometry.layers[:, 1]]


# ---- the spec decides the layers ------------------------------------------------------


def test_norm_layers_come_from_the_spec():
    assert recompute.norm_layers(RESIDUAL) == ("1", "4", "7", "10")
    assert recompute.norm_layers(PLAIN) == ("1", "4")
    assert recompute.norm_layers(NetSpec("batchnorm")) == mlp.NORMS == recompute.norm_layers()
    with pytest.raises(AttributeError):
        recompute.norm_layers("batchnorm")  # not a spec: no layers of its own
    assert _positions(RESIDUAL) == [64, 16, 16, 16]


def test_running_statistics_of_a_conv_stack_are_its_buffers(trained):
    spec, stacked = trained
    got = recompute.running_statistics(stacked, spec)
    assert list(got) == conv_train.norm_keys(spec)
    for layer, (mean, var) in got.items():
        assert mean.tobytes() == stacked[f"{layer}.running_mean"].tobytes()
        assert var.tobytes() == stacked[f"{layer}.running_var"].tobytes()
        assert mean.shape == (2, spec.channels[int(layer) // 3])
        mean += 1.0
    assert not np.array_equal(got["1"][0], stacked["1.running_mean"])


# ---- (d) exact -------------------------------------------------------------------------


def test_exact_layer_one_is_the_float64_moments_of_torch_conv2d(trained):
    spec, stacked = trained
    x, _ = _images()
    exact = recompute.exact_statistics(stacked, spec, x)
    for i in range(2):
        w = torch.from_numpy(stacked["0.weight"][i]).double()
        b = torch.from_numpy(stacked["0.bias"][i]).double()
        h = torch.nn.functional.conv2d(conv_torch.images(x).double(), w, b, stride=spec.stride(0), padding=1)
        assert exact["1"][0].dtype == np.float32
        np.testing.assert_allclose(exact["1"][0][i], h.mean((0, 2, 3)).numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(exact["1"][1][i], h.var((0, 2, 3), unbiased=False).numpy(), rtol=1e-5, atol=1e-6)


def test_images_given_in_float64_are_computed_in_float32_as_the_network_is(trained):
    """The remedies read the images as the network does, in float32: float64 images (a user's NumPy
    default) give the float32 images' bits, not a float64 computation of their own."""
    spec, stacked = trained
    x, y = _images()
    batches = recompute.pass_batches(y, BATCH, 0)
    for compute in (
        lambda images: recompute.exact_statistics(stacked, spec, images),
        lambda images: recompute.precise_statistics(stacked, spec, images, batches),
    ):
        as32, as64 = compute(x), compute(x.astype(np.float64))
        for layer in recompute.norm_layers(spec):
            for k in (0, 1):
                assert as64[layer][k].tobytes() == as32[layer][k].tobytes(), (layer, k)


def test_exact_statistics_of_each_layer_use_the_exact_statistics_below(trained):
    """PyTorch in eval mode, each BatchNorm2d's buffers set to the reference's moments of its input
    layer by layer (float64 NumPy over every example x position), the layers above read again."""
    spec, stacked = trained
    x, _ = _images()
    exact = recompute.exact_statistics(stacked, spec, x)
    net = _module(stacked, spec, 1)
    for layer in recompute.norm_layers(spec):
        h = np.concatenate(_bn_inputs(net, spec, x, [np.arange(N)], train=False)[layer])
        assert len(h) == N * _positions(spec)[int(layer) // 3]
        np.testing.assert_allclose(exact[layer][0][1], h.mean(0), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(exact[layer][1][1], h.var(0), rtol=1e-4, atol=1e-5)
        net[int(layer)].running_mean.copy_(torch.from_numpy(h.mean(0)))
        net[int(layer)].running_var.copy_(torch.from_numpy(h.var(0)))
    assert not np.allclose(exact["4"][0], stacked["4.running_mean"], atol=1e-3)


def test_precise_and_exact_are_the_same_bits_at_layer_one_over_every_image_in_order(trained):
    spec, stacked = trained
    x, _ = _images()
    exact = recompute.exact_statistics(stacked, spec, x)
    precise = recompute.precise_statistics(stacked, spec, x, [np.arange(N)])
    for k in (0, 1):
        assert precise["1"][k].tobytes() == exact["1"][k].tobytes()
    # layer 2: one batch of every image normalised with its batch statistics, not the float32 exact ones
    assert not np.array_equal(precise["4"][1], exact["4"][1])
    np.testing.assert_allclose(precise["4"][1], exact["4"][1], rtol=1e-4, atol=1e-5)


# ---- the training-mode pass: (b) and (c) ----------------------------------------------------


def test_training_mode_layer_inputs_are_batchnorm2d_inputs_with_a_short_last_batch(trained):
    spec, stacked = trained
    x, y = _images()
    batches = recompute.pass_batches(y, 32, seed=1, last_batch="keep")
    assert [len(b) for b in batches] == [32] * 9 + [12]
    inputs, starts = recompute.training_mode_layer_inputs(stacked, spec, x, batches)
    first = np.concatenate([[0], np.cumsum([len(b) for b in batches])])
    for layer, p in zip(recompute.norm_layers(spec), _positions(spec)):
        assert starts[layer].tolist() == (first * p).tolist()
        assert inputs[layer].dtype == np.float32 and inputs[layer].shape == (2, N * p, spec.channels[int(layer) // 3])
    for i in range(2):
        seen = _bn_inputs(_module(stacked, spec, i), spec, x, batches, train=True)
        for layer in recompute.norm_layers(spec):
            np.testing.assert_allclose(inputs[layer][i], np.concatenate(seen[layer]), rtol=1e-5, atol=1e-5)


def test_cumulative_average_equals_pytorch_momentum_none_pass(trained):
    spec, stacked = trained
    x, y = _images()
    batches = recompute.pass_batches(y, BATCH, seed=3)
    ours = remedies.cumulative_average(stacked, spec, x, batches)
    for i in range(2):
        net = _module(stacked, spec, i).train()
        for layer in recompute.norm_layers(spec):
            net[int(layer)].reset_running_stats()
            net[int(layer)].momentum = None
        with torch.no_grad():
            for idx in batches:
                net(conv_torch.images(x[idx]))
        for layer in recompute.norm_layers(spec):
            bn = net[int(layer)]
            assert int(bn.num_batches_tracked) == len(batches) == N // BATCH
            np.testing.assert_allclose(ours[layer][0][i], bn.running_mean.numpy(), rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(ours[layer][1][i], bn.running_var.numpy(), rtol=1e-5, atol=1e-5)


def test_cumulative_average_divides_each_batch_by_its_examples_x_positions_minus_one(trained):
    spec, stacked = trained
    x, y = _images()
    batches = recompute.pass_batches(y, 7, seed=0, last_batch="keep")
    assert len(batches[-1]) == N % 7 == 6
    ours = remedies.cumulative_average(stacked, spec, x, batches)
    seen = _bn_inputs(_module(stacked, spec, 0), spec, x, batches, train=True)
    for layer in recompute.norm_layers(spec):
        means = np.mean([h.mean(0) for h in seen[layer]], 0)
        np.testing.assert_allclose(ours[layer][0][0], means, rtol=1e-5, atol=1e-5)
        unbiased = np.mean([h.var(0, ddof=1) for h in seen[layer]], 0)
        np.testing.assert_allclose(ours[layer][1][0], unbiased, rtol=1e-5, atol=1e-5)
        # the divisor is the batch's rows (examples x positions) less one, not its examples less one
        by_examples = np.mean([h.var(0) * len(h) / (len(b) - 1) for h, b in zip(seen[layer], batches)], 0)
        assert (by_examples > 1.5 * ours[layer][1][0]).all()


def test_precise_statistics_are_the_moments_of_every_row_batchnorm2d_sees(trained):
    spec, stacked = trained
    x, y = _images()
    batches = recompute.pass_batches(y, BATCH, seed=1)
    ours = recompute.precise_statistics(stacked, spec, x, batches)
    seen = _bn_inputs(_module(stacked, spec, 1), spec, x, batches, train=True)
    for layer, p in zip(recompute.norm_layers(spec), _positions(spec)):
        rows = np.concatenate(seen[layer])
        assert len(rows) == (N // BATCH) * BATCH * p
        np.testing.assert_allclose(ours[layer][0][1], rows.mean(0), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(ours[layer][1][1], rows.var(0), rtol=1e-5, atol=1e-5)


# ---- (a) debiased EMA --------------------------------------------------------------------


def test_debiased_ema_removes_the_initial_weight_of_num_batches_tracked(trained):
    spec, stacked = trained
    updates = N // BATCH
    assert stacked["1.num_batches_tracked"].tolist() == [updates, updates]
    w0 = remedies.initial_weight(spec, updates)
    assert w0 == fixedmath.powi(0.9, updates) == pytest.approx(0.9**updates, rel=1e-14)
    debiased = remedies.debiased_ema(stacked, spec)
    assert list(debiased) == conv_train.norm_keys(spec)
    for layer, (mean, var) in debiased.items():
        np.testing.assert_allclose(mean * (1 - w0), stacked[f"{layer}.running_mean"], rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(var * (1 - w0) + w0, stacked[f"{layer}.running_var"], rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError):
        remedies.debiased_ema(stacked | {f"{layer}.num_batches_tracked": np.array([0, 3])}, spec)


def test_debiased_ema_of_a_constant_stream_equals_its_batch_statistics():
    """PyTorch's BatchNorm2d fed one batch three times (weights fixed): the debiased running
    values are that batch's mean and unbiased variance over examples x positions, every layer."""
    spec = RESIDUAL
    x, _ = _images(12)
    net = conv_torch.build_module(spec, seed=4).train()
    seen = _bn_inputs(conv_torch.build_module(spec, seed=4), spec, x, [np.arange(12)], train=True)
    with torch.no_grad():
        for _ in range(3):
            net(conv_torch.images(x))
    state = {k: v.numpy()[None] for k, v in net.state_dict().items()}
    debiased = remedies.debiased_ema(state, spec)
    for layer in recompute.norm_layers(spec):
        h = seen[layer][0]
        assert not np.allclose(state[f"{layer}.running_mean"][0], h.mean(0), atol=1e-2)
        np.testing.assert_allclose(debiased[layer][0][0], h.mean(0), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(debiased[layer][1][0], h.var(0, ddof=1), rtol=1e-5, atol=1e-5)


# ---- evaluation with replaced statistics, the whole set ---------------------------------------


def test_logits_of_the_replaced_stack_are_pytorchs_with_those_buffers(trained):
    spec, stacked = trained
    x, y = _images()
    x_test, y_test = _images(40, seed=9)
    exact = recompute.exact_statistics(stacked, spec, x)
    fixed = recompute.with_statistics(stacked, exact)
    z = conv_train.logits(fixed, spec, x_test)
    assert not np.allclose(z, conv_train.logits(stacked, spec, x_test), atol=1e-4)
    same = recompute.with_statistics(stacked, recompute.running_statistics(stacked, spec))
    assert conv_train.logits(same, spec, x_test).tobytes() == conv_train.logits(stacked, spec, x_test).tobytes()
    for i in range(2):
        net = _module(fixed, spec, i).eval()
        with torch.no_grad():
            ref = net(conv_torch.images(x_test)).numpy()
        np.testing.assert_allclose(z[i], ref, rtol=1e-4, atol=1e-4)
    hits = scores.inference_correct(fixed, spec, x_test, y_test)
    assert np.array_equal(hits, scores.labels(z) == y_test[None, :])


def test_remedy_rows_score_a_conv_stack_under_every_remedy(trained):
    spec, stacked = trained
    x, y = _images()
    x_test, y_test = _images(50, seed=7)
    before = {k: v.copy() for k, v in stacked.items()}
    accuracy, distance = evaluation.remedy_rows(stacked, spec, [10, 11], x, y, x_test, y_test, BATCH, seed=0)
    assert all(stacked[k].tobytes() == v.tobytes() for k, v in before.items())
    assert [(r["seed"], r["mode"]) for r in accuracy] == [(s, m) for m in remedies.REMEDIES for s in (10, 11)]
    stats = remedies.all_statistics(stacked, spec, x, y, BATCH, 0)
    for r in accuracy:
        fixed = recompute.with_statistics(stacked, stats[r["mode"]])
        labels = scores.labels(conv_train.logits(fixed, spec, x_test))[r["seed"] - 10]
        assert r["accuracy"] == np.count_nonzero(labels == y_test) / 50
    layers = len(spec.channels)
    assert len(distance) == 5 * 2 * layers
    exact_rows = [r for r in distance if r["statistics"] == "exact"]
    assert {r["layer"] for r in exact_rows} == set(range(1, layers + 1))
    assert all(r["mean_distance"] == 0 and r["var_distance"] == 0 for r in exact_rows)
    assert all(r["var_distance"] > 0 for r in distance if r["statistics"] == "ema")


def test_all_statistics_twice_the_same_bytes_and_a_model_alone_the_same_numbers(trained):
    spec, stacked = trained
    x, y = _images()
    first = remedies.all_statistics(stacked, spec, x, y, BATCH, seed=0)
    second = remedies.all_statistics(stacked, spec, x, y, BATCH, seed=0)
    alone = remedies.all_statistics({k: v[1:] for k, v in stacked.items()}, spec, x, y, BATCH, seed=0)
    assert list(first) == ["ema", "debiased_ema", "cumulative", "precise_bn", "exact"]
    for name in first:
        assert list(first[name]) == conv_train.norm_keys(spec)
        for layer in first[name]:
            for k in (0, 1):
                assert first[name][layer][k].dtype == np.float32
                assert first[name][layer][k].tobytes() == second[name][layer][k].tobytes(), (name, layer)
                assert first[name][layer][k][1:].tobytes() == alone[name][layer][k].tobytes(), (name, layer)


def test_conv_remedies_refuse_other_normalisers():
    spec = ConvSpec("groupnorm", (4, 4), groups=2)
    stacked = {k: v[None] for k, v in conv_train.initial_state(spec, 0).items()}
    x, y = _images(20)
    with pytest.raises(ValueError):
        remedies.all_statistics(stacked, spec, x, y, 4, 0)
    with pytest.raises(ValueError):
        recompute.exact_statistics(stacked, spec, x)
