"""The convolutional network as a list of layers (strides, residual connections, any image side)
against PyTorch: its source tables, first gradients, Adam steps, running statistics and logits.

The deep instance: 28x28 one-channel images (Fashion-MNIST's side), four 3x3
convolutions with 4, 8, 8, 8 channels and strides 1, 2, 2, 1, the last adding the third's output
(a residual connection), global average pooling and a linear map. Small channel counts keep each
test to seconds once the kernels are compiled.

Tolerances. The compiled kernels and PyTorch (oneDNN) compute the same float32 expressions in
different summation orders (oneDNN blocks and vectorises its reductions; batch norm's statistics over
the batch's 8 x 784 values, PyTorch's are pairwise/blocked). Each rounding is a relative 6e-8; a
sum of ``n`` terms in another order differs by up to about ``n * 6e-8`` of the sum of magnitudes,
in practice ``sqrt(n)`` times that. The largest sums here are the weight gradients of the first
layer (8 images x 784 positions = 6272 terms) and the normalisers' statistics over as many values,
so a gradient is compared to ``1e-4`` of its tensor's largest entry (about ``6272 * 6e-8 = 4e-4``
in the worst case, a few ``1e-6`` in practice: measured, the largest discrepancy was below
``1e-5``). Logits compare to ``1e-4`` absolute (magnitudes about 1). Weights after several Adam steps
to ``1e-3`` relative and ``2e-4`` absolute: Adam divides by ``sqrt(v) + eps``, which amplifies the
relative error of small gradients, the existing test's tolerance for the same reason. Batch norm's
convolution biases have a zero gradient up to rounding (the normaliser removes any constant), which
Adam's normalised step turns into ``lr`` times the sign of rounding noise: they and the running means
that follow them are left out of the multi-step comparison (the one-step test of test_conv.py holds).
"""

import numpy as np
import pytest

from bnstudy.base import convlayers
from bnstudy.compiled import conv
from bnstudy.nets import conv_train, train
from bnstudy.nets.batching import epoch_rows, order_generator
from bnstudy.nets.recipe import Recipe

torch = pytest.importorskip("torch")
conv_torch = pytest.importorskip("bnstudy.nets.conv_torch")

KINDS = ("none", "batchnorm", "groupnorm", "layernorm")
SIDE = 28


def deep(kind: str) -> conv_train.ConvSpec:
    return conv_train.ConvSpec(kind, (4, 8, 8, 8), 2, strides=(1, 2, 2, 1), skips=(-1, -1, -1, 2))


def images(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, SIDE * SIDE)).astype(np.float32), (np.arange(n) % 10).astype(np.int64)


def test_every_conv_normaliser_is_tested_here():
    from bnstudy.base import normalisers

    assert set(normalisers.CONV_NAMES) == set(KINDS) | {
        "batchrenorm",
        "ghostbatchnorm",
    }  # tests/nets/test_conv_norms.py


@pytest.mark.parametrize(("side", "stride"), [(28, 2), (7, 2), (14, 1), (5, 2)])
def test_source_tables_read_the_padded_strided_neighbourhood(side, stride):
    """im2col with a layer's table is PyTorch's unfold (padding 1, the stride); col2im its adjoint."""
    rng = np.random.default_rng(side)
    img = rng.standard_normal((2, 3, side, side)).astype(np.float32)
    table = conv.source_table(side, stride)
    o = conv.out_side(side, stride)
    assert table.shape == (o * o, 9) and o == (side + 2 - 3) // stride + 1
    a = np.ascontiguousarray(img.transpose(0, 2, 3, 1).reshape(-1, 3))
    out = np.empty((2 * o * o, 27), np.float32)
    conv.im2col(a, 2, side * side, table, out)
    unfold = torch.nn.functional.unfold(torch.from_numpy(img), 3, padding=1, stride=stride)  # (2, 27, o*o)
    assert np.array_equal(out, unfold.numpy().transpose(0, 2, 1).reshape(-1, 27))
    d = rng.standard_normal(out.shape).astype(np.float32)
    back = np.empty_like(a)
    conv.col2im(d, 2, side * side, table, back)
    lhs, rhs = np.sum(out.astype(np.float64) * d), np.sum(a.astype(np.float64) * back)
    assert lhs == pytest.approx(rhs, rel=1e-5)


def test_geometry_refuses_a_skip_of_another_shape():
    with pytest.raises(ValueError, match="skip"):
        conv.geometry(convlayers.chain([4, 4, 4], [1, 2, 1], [-1, -1, 0], 28))  # layer 0 is 28x28, layer 2 14x14
    with pytest.raises(ValueError, match="stride"):
        conv.geometry(convlayers.chain([4], [3], [-1], 28))
    with pytest.raises(ValueError, match="channels"):
        conv_train.ConvSpec("none", (4, 8), strides=(1, 1), skips=(-1, 0)).arch_on(28)
    geo = deep("none").arch_on(SIDE).geometry
    assert geo.layers[:, conv.P_OUT].tolist() == [784, 196, 49, 49]
    assert geo.layers[:, conv.SKIP].tolist() == [-1, -1, -1, 2]


def test_the_default_spec_is_a_two_convolution_network():
    spec = conv_train.ConvSpec("batchnorm", (4, 8), 2)
    keys = [k for k, _ in conv_train.layout(spec)]
    assert keys == ["0.weight", "0.bias", "1.weight", "1.bias", "3.weight", "3.bias", "4.weight", "4.bias"] + [
        "8.weight",
        "8.bias",
    ]
    assert spec.meta() == {"normaliser": "batchnorm", "channels": "(4, 8)", "groups": "2"} | {
        "eps": "1e-05",
        "momentum": "0.1",
    }
    assert isinstance(conv_torch.build_module(spec), torch.nn.Sequential)
    assert conv_train.ConvSpec.from_params(
        "none", {"groups": 2, "eps": 1e-5, "momentum": 0.1, "layers": [{"channels": 4}, {"channels": 4, "skip": 0}]}
    ) == conv_train.ConvSpec("none", (4, 4), 2, strides=(1, 1), skips=(-1, 0))


def test_config_check_names_a_bad_skip():
    from bnstudy.base.config import ConfigError, check_skips

    with pytest.raises(ConfigError, match=r"conv.layers\[1\].skip: 1 is not an earlier layer"):
        check_skips([{"channels": 4}, {"channels": 4, "skip": 1}], "conv.layers")
    with pytest.raises(ConfigError, match="another shape"):
        check_skips([{"channels": 4}, {"channels": 4, "stride": 2}, {"channels": 4, "skip": 0}], "conv.layers")
    check_skips([{"channels": 4}, {"channels": 8, "stride": 2}, {"channels": 8, "skip": 1}], "conv.layers")


def _parts(spec, flat):
    return train.parts(spec, flat)


@pytest.mark.parametrize("kind", KINDS)
def test_first_gradient_of_the_deep_network_is_autograds(kind):
    """Strides, the residual connection and every normaliser: each gradient tensor to 1e-4 of its
    largest entry (see the module's note)."""
    x, y = images(16)
    spec = deep(kind)
    grad = np.zeros(sum(int(np.prod(s)) for _, s in conv_train.layout(spec)), np.float32)
    train.train_one(spec, Recipe(batch_size=8, epochs=1), 0, x, y, first_grad=grad)
    first = epoch_rows(order_generator(0), y, 8)[:8]
    ref = conv_torch.first_gradient(spec, 0, x[first], y[first])
    mine = _parts(spec, grad)
    assert set(ref) <= set(mine) and len(ref) == (18 if kind != "none" else 10)
    for key, r in ref.items():
        scale = max(np.abs(r).max(), np.abs(ref[key.split(".")[0] + ".weight"]).max())
        assert np.abs(mine[key] - r).max() <= 1e-4 * scale, key


@pytest.mark.parametrize("kind", KINDS)
def test_deep_training_steps_and_logits_agree_with_pytorch(kind):
    """Six Adam steps (3 epochs of 2 batches of 8) agree with autograd + torch.optim.Adam, running
    statistics included; the trained network's logits agree with the module's in inference mode
    and in training mode (batches of 4, running statistics untouched)."""
    x, y = images(16, seed=1)
    spec = deep(kind)
    recipe = Recipe(batch_size=8, epochs=3)
    stacked, _ = train.train_models(spec, recipe, [0], x, y)
    net = conv_torch.train_plain(spec, recipe, 0, x, y)
    theirs = {k: v.numpy() for k, v in net.state_dict().items()}
    ours = {k: v[0] for k, v in stacked.items()}
    assert set(ours) == set(theirs)
    if kind == "batchnorm":  # zero gradients up to rounding (see the module's note)
        for layer in range(4):
            del ours[f"{3 * layer}.bias"], ours[f"{3 * layer + 1}.running_mean"]
        assert ours["1.running_var"].tobytes() != np.ones(4, np.float32).tobytes()
        assert int(ours["10.num_batches_tracked"]) == int(theirs["10.num_batches_tracked"]) == 6
    for key, v in ours.items():
        np.testing.assert_allclose(v, theirs[key], rtol=1e-3, atol=2e-4, err_msg=key)
    ref = conv_torch.build_module(spec, state={k: v[0] for k, v in stacked.items()})
    with torch.no_grad():
        inference = ref.eval()(conv_torch.images(x)).numpy()
        ref.train()
        for m in ref.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.momentum = 0.0  # training mode, running statistics left as they are
        training = np.concatenate([ref(conv_torch.images(x[i : i + 4])).numpy() for i in range(0, 16, 4)])
    np.testing.assert_allclose(conv_train.logits(stacked, spec, x)[0], inference, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(
        conv_train.logits(stacked, spec, x, train=True, batch=4)[0], training, rtol=1e-4, atol=1e-4
    )


def test_the_residual_connection_changes_the_network():
    """The skip is really added: the same weights without it give other logits (the test above can fail)."""
    x, _ = images(4)
    spec = deep("groupnorm")
    state = {k: v[None] for k, v in conv_train.initial_state(spec, 0).items()}
    plain = conv_train.ConvSpec("groupnorm", spec.channels, 2, strides=spec.strides)
    assert not np.allclose(conv_train.logits(state, spec, x), conv_train.logits(state, plain, x), atol=1e-3)


def test_deep_batch_labels_at_two_are_the_training_mode_labels_of_a_batch_of_two():
    x, y = images(6)
    spec = deep("batchnorm")
    stacked = {k: v[None] for k, v in conv_train.initial_state(spec, 3).items()}
    pairs = np.array([[0, 1], [3, 5], [5, 3]], np.int64)
    got = np.empty(3, np.int64)
    net, geo = conv_train.model_arrays(stacked, spec, 0), spec.arch_on(SIDE).geometry
    conv.batch_labels(net, geo, spec.norm_settings(), np.ascontiguousarray(x.reshape(-1, 1)), pairs, got)
    for k, (a, b) in enumerate(pairs):
        z = conv_train.logits(stacked, spec, x[[a, b]], train=True, batch=2)[0]
        assert got[k] == int(np.argmax(z[0]))


def test_benchmark_counts_the_multiply_adds_and_reads_the_peak():
    from bnstudy.tools import convbench

    spec = conv_train.ConvSpec("none", (4, 8), strides=(1, 2))
    # layer 0: 64 positions x 9 x 4 (forward, weight gradient); layer 1: 16 x 36 x 8 (and input
    # gradient); linear: 8 x 10 (three products)
    macs = 2 * 64 * 9 * 4 + 3 * 16 * 36 * 8 + 3 * 8 * 10
    assert convbench.training_flops(spec, 8) == 2 * macs
    info = "model name\t: Test CPU\nflags\t\t: fpu sse avx avx2 avx512f\ncpu MHz\t\t: 2500.000\n"
    assert convbench.peak(info)[0] == 2 * 16 * 2.5
    assert convbench.peak(info.replace(" avx512f", ""))[0] == 2 * 8 * 2.5


def test_the_blocked_linear_backward_adds_in_the_stated_order():
    """Rows four at a time (weight gradients) and outputs eight at a time (input gradients): the
    bits of the one-at-a-time loops of the stated order, remainders included."""
    import numba

    from bnstudy.compiled.gradients import linear_backward

    @numba.njit
    def one_at_a_time(dh, a, n, w, dw, db, da):
        o_, k_ = w.shape
        dw[:] = 0
        db[:] = 0
        for i in range(n):
            for o in range(o_):
                db[o] += dh[i, o]
                for k in range(k_):
                    dw[o, k] += dh[i, o] * a[i, k]
        for i in range(n):
            for k in range(k_):
                da[i, k] = 0
                for o in range(o_):
                    da[i, k] += dh[i, o] * w[o, k]
                if not a[i, k] > 0:
                    da[i, k] = 0

    rng = np.random.default_rng(7)
    for n, o_, k_ in [(37, 13, 11), (128, 32, 144), (3, 5, 9), (64, 8, 16)]:
        dh, a = rng.standard_normal((n, o_)).astype(np.float32), rng.standard_normal((n, k_)).astype(np.float32)
        w = rng.standard_normal((o_, k_)).astype(np.float32)
        got = [np.empty_like(w), np.empty(o_, np.float32), np.empty_like(a)]
        ref = [np.empty_like(w), np.empty(o_, np.float32), np.empty_like(a)]
        linear_backward(dh, a, n, w, *got, a)
        one_at_a_time(dh, a, n, w, *ref)
        assert all(g.tobytes() == r.tobytes() for g, r in zip(got, ref)), (n, o_, k_)


def test_a_conv_network_names_its_layers_not_hidden_widths():
    from pathlib import Path

    import yaml

    from bnstudy.base.config import ConfigError, load_schema, validate

    root = Path(__file__).resolve().parents[2]
    schema = load_schema(root / "workflow" / "schemas" / "config.schema.yaml")
    config = yaml.safe_load((root / "config" / "fashion-tiny.yaml").read_text())
    validate(config, schema)
    config["network"]["hidden"] = [8, 8]
    with pytest.raises(ConfigError, match="network"):
        validate(config, schema)
    del config["network"]["hidden"]
    config["network"]["layers"][1]["stride"] = 3
    with pytest.raises(ConfigError, match="stride"):
        validate(config, schema)
