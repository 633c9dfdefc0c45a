"""The compiled training loop: its gradients, optimisers, batches and determinism.

The PyTorch side (autograd through :mod:`bnstudy.nets.torchnet`, ``torch.optim``,
the plain loop of :mod:`bnstudy.nets.plain`) is the independent reference. Float32
sums in another order differ in the last bits, so the comparisons state
tolerances; Adam turns rounding noise of a mathematically zero gradient (the
bias of a Linear before a batch norm) into steps of size ``lr``, so Adam with
batch statistics is compared on what training achieves, not parameter by
parameter.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from bnstudy.base import normalisers
from bnstudy.compiled import backprop, kernels, optimisers
from bnstudy.nets import batching, plain, torchnet, train
from bnstudy.nets import model as mlp
from bnstudy.nets.recipe import Recipe, batch_sizes_per_epoch

KINDS = normalisers.NAMES


def _spec(kind, virtual_batch=5, **kw):
    """The network of ``kind``, with settings that matter at the tests' batch sizes: ghost batch
    norm in virtual batches of 5 rows by default (a batch of 12: 5 and 7 rows; of 16: 5, 5 and 6).
    Fewer rows make float32 rounding chaotic over a run: batch norm itself on batches of 3 or 4
    rows ends two epochs of SGD far from the plain loop, where 5 rows and more agree closely."""
    return mlp.NetSpec(kind, virtual_batch=virtual_batch, **kw)


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _data(n=48, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.random((n, 64)) * 4 - 2).astype(np.float32)
    y = rng.integers(0, 10, n).astype(np.int64)
    return x, y


def _sgd_gradient(spec, x, y, limits=(1.0, 0.0)):
    """The kernel's gradient of one step on the whole of ``x`` (SGD, lr 1, no momentum: p1 = p0 - g)."""
    state = mlp.initial_state(spec, 3)
    flat = train.buffers(spec, state)[0]
    before = flat.copy()
    running = np.zeros((4, 128), np.float32)
    running[1] = running[3] = 1.0
    running[0] += 0.2  # renorm's d is then not zero
    running[1] *= 1.5
    rows = np.arange(len(y), dtype=np.int64)[None, :]
    sizes = np.array([len(y)], np.int64)
    lim = np.array([limits], np.float32)
    backprop.train_run(
        backprop.mlp_arch(spec.widths),
        backprop.State(flat, running),
        backprop.Data(x, y),
        backprop.schedule(rows, sizes, lim),
        kernels.norm_settings(spec),
        backprop.optimiser(backprop.SGD, 1.0),
        0,
        backprop.new_log(1),
    )
    return state, before - flat


@pytest.mark.parametrize("kind", KINDS)
def test_gradients_equal_autograd(kind):
    x, y = _data()
    spec = _spec(kind, virtual_batch=7)  # ghost: 48 rows in five virtual batches of 7 and one of 13
    limits = (1.5, 0.5)
    state, grad = _sgd_gradient(spec, x, y, limits)
    ref = torchnet.tensors(mlp.stack([state]))
    if kind in mlp.BATCH_KINDS:
        ref["1.running_mean"] += 0.2
        ref["1.running_var"] *= 1.5
    for v in ref.values():
        if v.is_floating_point():
            v.requires_grad_(kind != "none" or v.dim() > 1)
    logits = torchnet.forward(ref, spec, torch.from_numpy(x)[None], train=True, limits=limits)
    torch.nn.functional.cross_entropy(logits[0], torch.from_numpy(y)).backward()
    offset = 0
    checked = 0
    for key, shape in optimisers.layout(spec.widths):
        size = int(np.prod(shape))
        ours = grad[offset : offset + size].reshape(shape)
        offset += size
        if key not in ref:
            assert not ours.any(), f"{key}: a network without a normaliser has no gamma/beta gradient"
            continue
        theirs = ref[key].grad[0].numpy()
        scale = max(float(np.abs(theirs).max()), 1e-3)
        # lr 1: p0 - p1 recovers g to within a rounding of p0 (|p| < 1.2, so about 1e-7)
        np.testing.assert_allclose(ours, theirs, atol=2e-7 + 1e-4 * scale, err_msg=key)
        checked += 1
    assert checked == len(ref) - sum(1 for k in ref if "running" in k or "num_batches" in k)


@pytest.mark.parametrize("kind", KINDS)
def test_sgd_training_agrees_with_the_plain_pytorch_loop(kind):
    x, y = _data(96, seed=1)
    spec = _spec(kind)
    recipe = Recipe(optimizer="sgd", lr=0.05, sgd_momentum=0.9, batch_size=12, epochs=2, renorm_warmup=0.0)
    ours, _ = train.train_models(spec, recipe, [0], x, y)
    theirs = plain.train_plain(spec, recipe, 0, x, y).state_dict()
    assert set(ours) == set(theirs)
    updates = 2 * 8 * (2 if kind == "ghostbatchnorm" else 1)  # 2 epochs x 8 batches (x 2 virtual batches)
    for key, value in theirs.items():
        if value.is_floating_point():
            np.testing.assert_allclose(ours[key][0], value.numpy(), atol=2e-4, rtol=1e-3, err_msg=key)
        else:
            assert int(ours[key][0]) == int(value) == updates, key


@pytest.mark.parametrize("kind", [n.name for n in normalisers.REGISTRY if not n.batch_statistics])
def test_adam_agrees_with_torch_adam_without_batch_statistics(kind):
    x, y = _data(96, seed=2)
    spec = mlp.NetSpec(kind)
    recipe = Recipe(optimizer="adam", lr=1e-3, batch_size=16, epochs=2)
    ours, _ = train.train_models(spec, recipe, [4], x, y)
    theirs = plain.train_plain(spec, recipe, 4, x, y).state_dict()
    for key, value in theirs.items():
        np.testing.assert_allclose(ours[key][0], value.numpy(), atol=5e-6, err_msg=key)


@pytest.mark.parametrize("kind", normalisers.BATCH_NAMES)
def test_adam_with_batch_statistics_trains_as_well_as_the_plain_loop(kind):
    from bnstudy.nets.data import split_digits

    split = split_digits(0)
    spec = mlp.NetSpec(kind, virtual_batch=8)  # ghost batch norm: four virtual batches per batch
    recipe = Recipe(batch_size=32, epochs=2)
    ours, _ = train.train_models(spec, recipe, [0], split.x_train, split.y_train)
    net = plain.train_plain(spec, recipe, 0, split.x_train, split.y_train).eval()
    with torch.no_grad():
        theirs = (net(torch.from_numpy(split.x_test)).argmax(1).numpy() == split.y_test).mean()
    acc = (kernels.predict(ours, spec, split.x_test)[0] == split.y_test).mean()
    assert acc > 0.85 and abs(acc - theirs) < 0.02


def test_batch_renorm_with_limits_1_0_is_batch_norm_bit_for_bit():
    x, y = _data(64, seed=3)
    recipe = Recipe(batch_size=8, epochs=2, renorm_rmax=1.0, renorm_dmax=0.0)
    bn, _ = train.train_models(mlp.NetSpec("batchnorm"), recipe, [1], x, y)
    brn, _ = train.train_models(mlp.NetSpec("batchrenorm"), recipe, [1], x, y)
    for key in bn:
        assert np.array_equal(bn[key], brn[key]), key


@pytest.mark.parametrize("kind", ("batchnorm", "ghostbatchnorm"))
def test_running_statistics_follow_pytorchs_rule_including_the_cumulative_average(kind):
    """Ghost batch norm: one update per virtual batch, PyTorch's BatchNorm1d on each in turn."""
    x, y = _data(64, seed=4)
    for momentum in (0.1, None):
        spec = _spec(kind, momentum=momentum)
        recipe = Recipe(optimizer="sgd", lr=0.01, batch_size=16, epochs=2)
        ours, _ = train.train_models(spec, recipe, [0], x, y)
        theirs = plain.train_plain(spec, recipe, 0, x, y).state_dict()
        for key in ("1.running_mean", "1.running_var", "4.running_mean", "4.running_var"):
            np.testing.assert_allclose(ours[key][0], theirs[key].numpy(), atol=1e-5, rtol=1e-5, err_msg=key)
        assert (
            int(ours["1.num_batches_tracked"][0])
            == int(theirs["1.num_batches_tracked"])
            == 8 * (3 if kind == "ghostbatchnorm" else 1)
        )


def test_ghost_batch_norm_in_one_virtual_batch_is_batch_norm_bit_for_bit():
    """A batch of fewer than twice the virtual batch is one virtual batch: batch norm."""
    x, y = _data(64, seed=3)
    recipe = Recipe(batch_size=8, epochs=2)
    bn, _ = train.train_models(mlp.NetSpec("batchnorm"), recipe, [1], x, y)
    ghost, _ = train.train_models(mlp.NetSpec("ghostbatchnorm", virtual_batch=5), recipe, [1], x, y)
    split, _ = train.train_models(mlp.NetSpec("ghostbatchnorm", virtual_batch=4), recipe, [1], x, y)
    for key in bn:
        assert np.array_equal(bn[key], ghost[key]), key
    assert not np.array_equal(bn["0.weight"], split["0.weight"])  # two virtual batches: another network


def test_a_seed_gives_the_same_bytes_alone_beside_others_and_on_more_threads():
    x, y = _data(64, seed=5)
    spec, recipe = mlp.NetSpec("batchnorm"), Recipe(batch_size=4, epochs=2)
    together, log = train.train_models(spec, recipe, [7, 2, 5], x, y, threads=2)
    alone, log_alone = train.train_models(spec, recipe, [2], x, y, threads=1)
    for key in together:
        assert together[key][1].tobytes() == alone[key][0].tobytes(), key
    assert [r for r in log if r["seed"] == 2] == log_alone


def test_each_seed_starts_from_its_initial_weights_and_draws_its_own_batches():
    a, b = mlp.initial_state(mlp.NetSpec("none"), 0), mlp.initial_state(mlp.NetSpec("none"), 1)
    assert not np.array_equal(a["0.weight"], b["0.weight"])
    bound = 1 / np.sqrt(64)
    assert np.abs(a["0.weight"]).max() <= bound and np.abs(a["0.weight"]).max() > 0.95 * bound
    assert abs(float(a["0.weight"].mean())) < 0.01  # uniform on [-bound, bound]
    y = np.arange(40) % 10
    e0 = batching.epoch_rows(batching.order_generator(0), y, 8)
    e1 = batching.epoch_rows(batching.order_generator(1), y, 8)
    assert sorted(e0) == list(range(40)) and not np.array_equal(e0, e1)


def test_epochs_drop_or_keep_the_leftover_rows():
    assert batch_sizes_per_epoch(898, 64) == [64] * 14
    assert batch_sizes_per_epoch(898, 64, "keep") == [64] * 14 + [2]
    assert batch_sizes_per_epoch(897, 64, "keep") == [64] * 14  # one row cannot be normalised
    y = np.arange(21) % 3
    batches = batching.epoch_batches(np.random.default_rng(0), y, 4, last_batch="keep")
    assert [len(b) for b in batches] == [4] * 5 and len(set(np.concatenate(batches))) == 20


def test_class_sorted_batches_hold_at_most_two_classes():
    y = np.repeat(np.arange(10), 9)
    for batch in batching.epoch_batches(np.random.default_rng(1), y, 8, order="class_sorted"):
        assert len(set(y[batch])) <= 2


def test_epoch_log_is_the_mean_batch_loss_and_row_accuracy():
    x, y = _data(32, seed=6)
    spec, recipe = mlp.NetSpec("layernorm"), Recipe(optimizer="sgd", lr=0.0, batch_size=8, epochs=1)
    stacked, log = train.train_models(spec, recipe, [0], x, y)  # lr 0: the weights never move
    rows = batching.epoch_rows(batching.order_generator(0), y, 8)
    z = torch.from_numpy(kernels.logits(stacked, spec, x[rows])[0].astype(np.float64))
    target = torch.from_numpy(y[rows])
    losses = [torch.nn.functional.cross_entropy(z[i : i + 8], target[i : i + 8]).item() for i in range(0, 32, 8)]
    assert log[0]["loss"] == pytest.approx(np.mean(losses), rel=1e-6)
    assert log[0]["train_accuracy"] == (z.argmax(1) == target).double().mean().item()


@pytest.mark.slow
def test_training_does_not_import_pytorch():
    code = "import sys, bnstudy.nets.train, bnstudy.compiled.kernels, bnstudy.nets.model; "
    code += "assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, env=os.environ | {"PYTHONPATH": f"{ROOT}/src"})


@pytest.mark.slow
def test_the_same_bits_on_a_generic_x86_cpu():
    """Compiled for this CPU and for generic x86-64 (no AVX, no FMA): the same bytes."""
    code = (
        "import hashlib, numpy as np\n"
        "from bnstudy.nets import train, model as mlp\n"
        "from bnstudy.nets.recipe import Recipe\n"
        "rng = np.random.default_rng(0)\n"
        "x = (rng.random((40, 64)) * 4 - 2).astype(np.float32); y = rng.integers(0, 10, 40)\n"
        "h = hashlib.sha256()\n"
        "for kind in ('batchnorm', 'batchrenorm', 'groupnorm', 'ghostbatchnorm'):\n"
        "    for opt in ('adam', 'sgd'):\n"
        "        s, log = train.train_models(mlp.NetSpec(kind, virtual_batch=2), Recipe(batch_size=4, epochs=2,"
        " optimizer=opt,"
        " renorm_warmup=0.0), [0, 1], x, y)\n"
        "        [h.update(s[k].tobytes()) for k in sorted(s)]; h.update(repr(log).encode())\n"
        "print(h.hexdigest())\n"
    )
    digests = []
    for cpu in (None, "generic"):  # Numba keeps a cache entry per CPU name
        env = os.environ | {"PYTHONPATH": f"{ROOT}/src"}
        env.pop("NUMBA_CPU_NAME", None)
        if cpu:
            env["NUMBA_CPU_NAME"] = cpu
        digests.append(
            subprocess.run(
                [sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True
            ).stdout.strip()
        )
    assert digests[0] == digests[1] and len(digests[0]) == 64


@pytest.mark.parametrize(
    "net",
    [
        dict(normaliser="batchnorm", hidden=[16, 16], groups=4, eps=1e-5, momentum=0.1),
        dict(normaliser="batchnorm", kind="conv", layers=[{"channels": 4, "stride": 2}, {"channels": 4, "skip": 0}],
             groups=2, eps=1e-5, momentum=0.1),
    ],
    ids=["mlp", "conv"],
)  # fmt: skip
def test_scoring_every_epoch_on_a_validation_split_leaves_the_weights_byte_identical(net):
    """The training curves copy each epoch's parameters and running statistics; the run's arithmetic is the
    same: the weights equal a run without them, and the last epoch's score is the trained network's."""
    from bnstudy.nets import network
    from bnstudy.nets.recipe import Recipe

    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((120, 64)).astype(np.float32), rng.integers(0, 10, 120)
    xv, yv = rng.standard_normal((50, 64)).astype(np.float32), rng.integers(0, 10, 50)
    spec = network.spec_from_params(net, inputs=64)
    recipe = Recipe(batch_size=16, epochs=3)
    plain, plain_log = spec.train_models(recipe, [0, 1], x, y)
    scored, log = spec.train_models(recipe, [0, 1], x, y, validation=(xv, yv))
    assert all(np.array_equal(plain[k], scored[k]) for k in plain)
    assert [{k: v for k, v in r.items() if k != "validation_accuracy"} for r in log] == plain_log
    last = np.mean(spec.predict(scored, xv) == yv, axis=1)
    assert [r["validation_accuracy"] for r in log if r["epoch"] == 3] == pytest.approx(list(last))
    assert len({r["validation_accuracy"] for r in log}) > 1  # scored after every epoch, not once
