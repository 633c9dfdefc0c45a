"""The convolutional network: its compiled kernels by value and against PyTorch, its training
loop against autograd and torch.optim.Adam, and its companion probes on tiny inputs."""

import numpy as np
import pytest

from bnstudy.base import convlayers
from bnstudy.compiled import conv, examplenorms
from bnstudy.nets import conv_train, train
from bnstudy.nets.batching import epoch_rows, order_generator
from bnstudy.nets.recipe import Recipe
from bnstudy.studies.companions import draws
from bnstudy.studies.companions import science as companions

KINDS = ("none", "batchnorm", "groupnorm", "layernorm")


def images(n, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, 64))).astype(np.float32), (np.arange(n) % 10).astype(np.int64)


def rows(img):
    """``(N, C, 8, 8)`` to the kernels' ``(N * 64, C)``."""
    n, c = img.shape[:2]
    return np.ascontiguousarray(img.transpose(0, 2, 3, 1).reshape(n * 64, c))


def test_im2col_holds_each_padded_neighbourhood_in_column_order():
    rng = np.random.default_rng(1)
    img = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    out = np.empty((128, 27), np.float32)
    conv.im2col(rows(img), 2, 64, conv.source_table(8, 1), out)
    padded = np.pad(img, ((0, 0), (0, 0), (1, 1), (1, 1)))
    for n, y, x in [(0, 0, 0), (1, 7, 7), (1, 3, 5), (0, 0, 6)]:
        expect = padded[n, :, y : y + 3, x : x + 3].reshape(-1)  # (channel, ky, kx)
        assert np.array_equal(out[n * 64 + 8 * y + x], expect)


def test_col2im_is_the_adjoint_of_im2col():
    """<im2col(a), d> = <a, col2im(d)> for any a, d (checked in float64)."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal((128, 3)).astype(np.float32)
    d = rng.standard_normal((128, 27)).astype(np.float32)
    patches = np.empty((128, 27), np.float32)
    back = np.empty((128, 3), np.float32)
    table = conv.source_table(8, 1)
    conv.im2col(a, 2, 64, table, patches)
    conv.col2im(d, 2, 64, table, back)
    lhs = np.sum(patches.astype(np.float64) * d)
    rhs = np.sum(a.astype(np.float64) * back)
    assert lhs == pytest.approx(rhs, rel=1e-5)
    # and a corner receives exactly the four patches that read it: (0,0) from (0,0),(0,1),(1,0),(1,1)
    ones = np.ones((128, 27), np.float32)
    conv.col2im(ones, 2, 64, table, back)
    assert back[0, 0] == 4 and back[9, 0] == 9 and back[63, 2] == 4


@pytest.mark.parametrize("groups", [1, 2, 4])
def test_spatial_norm_is_pytorch_group_norm_forward_and_backward(groups):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    img = rng.standard_normal((3, 8, 8, 8)).astype(np.float32) * 2 + 1
    gamma = rng.uniform(0.5, 1.5, 8).astype(np.float32)
    beta = rng.standard_normal(8).astype(np.float32)
    upstream = rng.standard_normal((3, 8, 8, 8)).astype(np.float32)
    h = rows(img)
    out, xhat = np.empty_like(h), np.empty_like(h)
    rstd = np.empty((3, groups), np.float32)
    examplenorms.spatial_norm(h, 3, 64, groups, np.float32(1e-5), gamma, beta, False, out, xhat, rstd)
    t = torch.from_numpy(img).requires_grad_()
    gn = torch.nn.GroupNorm(groups, 8, eps=1e-5)
    with torch.no_grad():
        gn.weight.copy_(torch.from_numpy(gamma))
        gn.bias.copy_(torch.from_numpy(beta))
    y = gn(t)
    y.backward(torch.from_numpy(upstream))
    np.testing.assert_allclose(out, rows(y.detach().numpy()), rtol=1e-5, atol=1e-5)
    dh, dg, db = np.empty_like(h), np.empty(8, np.float32), np.empty(8, np.float32)
    examplenorms.spatial_norm_backward(rows(upstream), 3, 64, groups, gamma, xhat, rstd, dh, dg, db)
    np.testing.assert_allclose(dh, rows(t.grad.numpy()), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dg, gn.weight.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(db, gn.bias.grad.numpy(), rtol=1e-5, atol=1e-5)


def _grad_parts(spec, flat):
    return train.parts(spec, flat)


@pytest.mark.parametrize("kind", KINDS)
def test_first_gradient_is_autograds(kind):
    """The compiled backward pass gives PyTorch's gradient (each tensor to 1e-5 of its largest entry)."""
    conv_torch = pytest.importorskip("bnstudy.nets.conv_torch")
    x, y = images(24)
    spec = conv_train.ConvSpec(kind, (4, 8), 2)
    n = sum(int(np.prod(s)) for _, s in conv_train.layout(spec))
    grad = np.zeros(n, np.float32)
    train.train_one(spec, Recipe(batch_size=8, epochs=1), 0, x, y, first_grad=grad)
    first = epoch_rows(order_generator(0), y, 8)[:8]
    ref = conv_torch.first_gradient(spec, 0, x[first], y[first])
    mine = _grad_parts(spec, grad)
    assert set(ref) <= set(mine)
    for key, r in ref.items():
        scale = max(np.abs(r).max(), np.abs(ref[key.split(".")[0] + ".weight"]).max())
        assert np.abs(mine[key] - r).max() <= 1e-5 * scale, key


@pytest.mark.parametrize("kind", KINDS)
def test_training_and_logits_agree_with_the_plain_pytorch_loop(kind):
    """Three epochs of Adam agree with torch.optim.Adam; the trained network's logits agree with the
    module's in inference mode and in training mode (batches of 4, running statistics untouched)."""
    torch = pytest.importorskip("torch")
    conv_torch = pytest.importorskip("bnstudy.nets.conv_torch")
    x, y = images(40)
    spec = conv_train.ConvSpec(kind, (4, 8), 2)
    recipe = Recipe(batch_size=8, epochs=3)
    stacked, _ = train.train_models(spec, recipe, [0], x, y)
    net = conv_torch.train_plain(spec, recipe, 0, x, y)
    theirs = {k: v.numpy() for k, v in net.state_dict().items()}
    ours = {k: v[0] for k, v in stacked.items()}
    assert set(ours) == set(theirs)
    if kind == "batchnorm":  # a bias before batch norm has a zero gradient up to rounding, which Adam
        for key in ("0.bias", "3.bias", "1.running_mean", "4.running_mean"):  # scales up into steps
            del ours[key], theirs[key]  # (and the running means follow the bias): see the one-step test
    for key, v in ours.items():
        np.testing.assert_allclose(v, theirs[key], rtol=1e-3, atol=2e-4, err_msg=key)
    state = {k: v[0] for k, v in stacked.items()}
    ref = conv_torch.build_module(spec, state=state)
    with torch.no_grad():
        inference = ref.eval()(conv_torch.images(x)).numpy()
        ref.train()
        for m in ref.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.momentum = 0.0  # training mode, running statistics left as they are
        training = np.concatenate([ref(conv_torch.images(x[i : i + 4])).numpy() for i in range(0, 40, 4)])
    np.testing.assert_allclose(conv_train.logits(stacked, spec, x)[0], inference, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(
        conv_train.logits(stacked, spec, x, train=True, batch=4)[0], training, rtol=1e-4, atol=1e-4
    )


@pytest.mark.parametrize("kind", ["batchnorm", "groupnorm"])
def test_one_step_moves_every_tensor_as_pytorch_does(kind):
    """One batch, one Adam step: every tensor, running statistics included."""
    pytest.importorskip("torch")
    conv_torch = pytest.importorskip("bnstudy.nets.conv_torch")
    x, y = images(8)
    spec = conv_train.ConvSpec(kind, (4, 8), 2)
    recipe = Recipe(batch_size=8, epochs=1)
    stacked, _ = train.train_models(spec, recipe, [0], x, y)
    theirs = conv_torch.train_plain(spec, recipe, 0, x, y).state_dict()
    assert set(stacked) == set(theirs)
    for key, v in stacked.items():
        if kind == "batchnorm" and key in ("0.bias", "3.bias"):  # zero gradient up to rounding: Adam's
            continue  # step is lr times the sign of rounding noise (the running means precede it)
        np.testing.assert_allclose(v[0], theirs[key].numpy(), rtol=1e-5, atol=1e-6, err_msg=key)
    if kind == "batchnorm":
        assert not np.allclose(stacked["1.running_mean"][0], 0)


def test_training_is_the_same_bytes_for_any_thread_count_and_repeat():
    x, y = images(32)
    spec = conv_train.ConvSpec("batchnorm", (4, 8), 2)
    a, log_a = train.train_models(spec, Recipe(batch_size=4, epochs=2), [0, 1], x, y, threads=1)
    b, log_b = train.train_models(spec, Recipe(batch_size=4, epochs=2), [1, 0], x, y, threads=2)
    for key in a:
        assert a[key][0].tobytes() == b[key][1].tobytes() and a[key][1].tobytes() == b[key][0].tobytes(), key
    assert not np.array_equal(a["0.weight"][0], a["0.weight"][1])
    assert a["1.running_var"][0].tobytes() != np.ones(4, np.float32).tobytes()  # the statistics moved


def test_initial_weights_follow_pytorchs_default_bounds():
    spec = conv_train.ConvSpec("batchnorm", (16, 32), 4)
    state = conv_train.initial_state(spec, 0)
    assert list(state)[:3] == ["0.weight", "0.bias", "1.weight"] and list(state)[-2:] == ["8.weight", "8.bias"]
    for key, fan_in in (("0.weight", 9), ("3.weight", 9 * 16), ("8.weight", 32)):
        w = state[key]
        assert np.abs(w).max() <= 1 / np.sqrt(fan_in) and np.abs(w).max() > 0.9 / np.sqrt(fan_in), key
    assert "1.weight" not in conv_train.initial_state(conv_train.ConvSpec("none"), 0)
    assert np.array_equal(state["0.weight"], conv_train.initial_state(spec, 0)["0.weight"])


def test_batch_labels_at_two_are_the_training_mode_labels_of_a_batch_of_two():
    x, y = images(12)
    spec = conv_train.ConvSpec("batchnorm", (4, 8), 2)
    stacked, _ = train.train_models(spec, Recipe(batch_size=4, epochs=2), [0], x, y)
    pairs = np.array([[0, 1], [3, 7], [7, 3], [5, 11]], np.int64)
    got = np.empty(4, np.int64)
    flat = np.ascontiguousarray(x.reshape(-1, 1))
    net, geo = conv_train.model_arrays(stacked, spec, 0), spec.arch_on(8).geometry
    conv.batch_labels(net, geo, spec.norm_settings(), flat, pairs, got)
    for k, (a, b) in enumerate(pairs):
        z = conv_train.logits(stacked, spec, x[[a, b]], train=True, batch=2)[0]
        assert got[k] == int(np.argmax(z[0]))


@pytest.mark.parametrize("kind", ["batchnorm", "ghostbatchnorm", "groupnorm"])
def test_logits_do_not_depend_on_the_chunks_the_images_go_through_in(kind):
    """forward_model runs the images through the network conv.CHUNK_IMAGES at a time (in training
    mode a whole number of batches): 70 images, in chunks of 32 (inference) or of 30 (training mode,
    batches of 5), give every image the logits it gets alone, or in its batch alone, bit for bit."""
    x, y = images(70, seed=3)
    spec = conv_train.ConvSpec(kind, (4, 8), 2, virtual_batch=2)
    stacked, _ = train.train_models(spec, Recipe(batch_size=4, epochs=1), [0], x[:24], y[:24])
    assert conv.CHUNK_IMAGES == 32 and len(x) > 2 * conv.CHUNK_IMAGES
    whole = conv_train.logits(stacked, spec, x)
    alone = np.concatenate([conv_train.logits(stacked, spec, x[i : i + 1]) for i in range(len(x))], axis=1)
    assert whole.tobytes() == alone.tobytes()
    whole = conv_train.logits(stacked, spec, x, train=True, batch=5)
    batches = [conv_train.logits(stacked, spec, x[i : i + 5], train=True, batch=5) for i in range(0, len(x), 5)]
    assert whole.tobytes() == np.concatenate(batches, axis=1).tobytes()


# ---- any data set: the images' side, the layers in the paper, a pool of exact companions ----------
def test_block_sides_are_pytorchs_and_the_compiled_geometrys():
    """The blocks' pure-Python sides (no compiled import; the paper's prose and the cost model read
    them) are PyTorch's Conv2d output sides (kernel 3, padding 1) and the positions the kernels
    compute with."""
    for side, strides in ((8, [1, 1]), (28, [2, 2, 1]), (28, [1, 2, 2, 2]), (9, [2, 1, 2])):
        blocks = convlayers.chain([1] * len(strides), strides, (), side)
        want, s = [], side
        for stride in strides:
            s = (s + 2 * 1 - 3) // stride + 1
            want.append(s)
        assert [b.out_side for b in blocks] == want
        assert [b.in_side for b in blocks] == [side, *want[:-1]]
        assert conv.geometry(blocks).layers[:, 1].tolist() == [s * s for s in want]  # each layer's output positions


@pytest.mark.parametrize("side", [8, 28])
def test_the_network_reads_images_of_the_data_sets_side(side):
    """The same spec trains on 8x8 or 28x28 rows; the side comes from the data, not the spec."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, side * side)).astype(np.float32)
    y = (np.arange(8) % 10).astype(np.int64)
    assert conv_train.image_side(x) == convlayers.square_side(x.shape[1]) == side
    spec = conv_train.ConvSpec.from_params(
        "batchnorm", {"groups": 2, "eps": 1e-5, "momentum": 0.1, "layers": [{"channels": 4, "stride": 2}]}
    )
    stacked, _ = train.train_models(spec, Recipe(batch_size=4, epochs=1), [0], x, y)
    assert conv_train.logits(stacked, spec, x).shape == (1, 8, 10)
    with pytest.raises(ValueError, match="not a square image"):
        convlayers.square_side(side * side + 1)


def test_row_normalisers_never_flip_with_their_companion():
    """Group and layer norm (and none) normalise each image alone: the built-in control, through the
    shared companion probes."""
    x, y = images(24)
    for kind in ("none", "groupnorm", "layernorm"):
        spec = conv_train.ConvSpec(kind, (4, 8), 2)
        stacked, _ = train.train_models(spec, Recipe(batch_size=4, epochs=1), [0], x, y)
        rows = companions.probe_network(
            stacked, spec, x, y, [0, 1, 2, 3], batch_sizes=[2, 4], batches_per_example=3, one_class_batch_size=2, seed=0
        )
        assert rows and sum(r["flips"] for r in rows) == 0, kind


def test_exact_pool_is_a_seeded_sample():
    from bnstudy.base.runtime import STREAM_PROBE, derive_seed

    assert draws.exact_pool(50, None, 0) is None
    pool = draws.exact_pool(50, 7, 3)
    want = np.sort(np.random.default_rng(derive_seed(3, STREAM_PROBE, 0, 1)).permutation(50)[:7])
    assert pool.dtype == np.int64 and pool.tolist() == want.tolist()
    assert draws.exact_pool(50, 7, 4).tolist() != pool.tolist()
    with pytest.raises(ValueError):
        draws.exact_pool(50, 51, 0)
