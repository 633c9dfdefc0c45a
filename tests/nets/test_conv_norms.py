"""Batch renorm and ghost batch norm in the convolutional network against PyTorch's reference
(:class:`bnstudy.nets.norms.BatchRenorm2d`, :class:`bnstudy.nets.norms.GhostBatchNorm2d`): first
gradients with active renorm limits, running statistics, Adam steps and logits in both modes, on the
study's small network (8x8 images) and on a deep one with strides and a residual connection (28x28).

Ghost batch norm runs in virtual batches of 3 images, so a batch of 8 is two virtual batches of 3
and 5 (the last takes the remainder) and the running statistics move twice per step.

Tolerances are tests/nets/test_deepconv.py's (its module docstring gives the reasons): gradients to 1e-4
of their tensor's largest entry, logits 1e-4, weights after several Adam steps 1e-3 relative and
2e-4 absolute, the convolution biases and the running means left out of the multi-step comparison
(their gradient is zero up to rounding, which Adam turns into steps of ``lr`` in the direction of
the rounding noise). Batch renorm's ``d`` reads the batch mean against the running mean, and both
follow those biases, so in a multi-step run with ``dmax > 0`` the rounding noise moves every weight
by about ``lr``: the multi-step runs hold ``dmax`` at 0 (``r`` still clipped and ramped each step),
and ``d`` with its clipping is checked where the noise has not entered yet: one step from running
statistics away from (0, 1) (its gradient and running update), and the logits in training mode.
"""

from dataclasses import replace

import numpy as np
import pytest

from bnstudy.base import normalisers
from bnstudy.compiled import backprop
from bnstudy.nets import conv_train, train
from bnstudy.nets.recipe import Recipe

torch = pytest.importorskip("torch")
conv_torch = pytest.importorskip("bnstudy.nets.conv_torch")

KINDS = ("batchrenorm", "ghostbatchnorm")
VIRTUAL = 3
LIMITS = (1.5, 0.4)  # renorm's limits in the one-step and logits tests: some channels clipped


def small(kind: str) -> conv_train.ConvSpec:
    return conv_train.ConvSpec(kind, (4, 8), 2, virtual_batch=VIRTUAL)


def deep(kind: str) -> conv_train.ConvSpec:
    return conv_train.ConvSpec(
        kind, (4, 8, 8, 8), 2, strides=(1, 2, 2, 1), skips=(-1, -1, -1, 2), virtual_batch=VIRTUAL
    )


NETS = {"small": (small, 8), "deep": (deep, 28)}


def images(n, side, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, side * side)).astype(np.float32), (np.arange(n) % 10).astype(np.int64)


def moved_state(spec: conv_train.ConvSpec, seed: int = 0) -> dict:
    """The initial state with running statistics away from (0, 1)."""
    rng = np.random.default_rng(11)
    state = conv_train.initial_state(spec, seed)
    for key in conv_train.norm_keys(spec):
        c = state[f"{key}.running_mean"].shape[0]
        state[f"{key}.running_mean"] = (0.3 * rng.standard_normal(c)).astype(np.float32)
        state[f"{key}.running_var"] = rng.uniform(0.2, 2.0, c).astype(np.float32)
    return state


def parts(spec, flat):
    return train.parts(spec, flat)


def compiled_step(spec, state, x, y, limits):
    """The compiled loop's gradient of one batch (``x``, ``y``) from ``state`` with renorm's ``limits``,
    the running statistics after it (``{key: array}``) and the update count."""
    side = conv_train.image_side(x)
    flat, running = train.buffers(spec, state)
    keys = conv_train.norm_keys(spec)
    grad = np.zeros_like(flat)
    plan = backprop.schedule(np.arange(len(y))[None], [len(y)], np.array([limits], np.float32))
    updates = backprop.train_run(
        spec.arch_on(side),
        backprop.State(flat, running),
        backprop.Data(np.ascontiguousarray(x), np.ascontiguousarray(y)),
        plan,
        spec.norm_settings(),
        backprop.optimiser(backprop.ADAM, 1e-3),
        0,
        backprop.new_log(1, grad),
        False,
    )
    stats = {}
    for i, key in enumerate(keys):
        c = spec.channels[i]
        stats[f"{key}.running_mean"], stats[f"{key}.running_var"] = running[2 * i, :c], running[2 * i + 1, :c]
    return parts(spec, grad), stats, updates


def torch_step(spec, state, x, y, limits):
    """Autograd's gradient of the same batch from the same state, and the module's running statistics."""
    net = conv_torch.build_module(spec, state=state).train()
    conv_torch.set_limits(net, *limits)
    loss = torch.nn.functional.cross_entropy(net(conv_torch.images(x)), torch.from_numpy(y))
    loss.backward()
    grads = {k: p.grad.numpy().copy() for k, p in net.named_parameters()}
    return grads, {k: v.numpy() for k, v in net.state_dict().items()}


def assert_gradients_close(mine, ref):
    for key, r in ref.items():
        scale = max(np.abs(r).max(), np.abs(ref[key.split(".")[0] + ".weight"]).max())
        assert np.abs(mine[key] - r).max() <= 1e-4 * scale, key


def test_the_convolutional_network_has_both_kinds():
    assert set(KINDS) <= set(normalisers.CONV_NAMES)
    for kind in KINDS:
        spec = small(kind)
        assert isinstance(conv_torch.build_module(spec, seed=0)[1], torch.nn.BatchNorm2d)
        assert set(conv_torch.build_module(spec).state_dict()) == set(conv_train.initial_state(spec, 0))


@pytest.mark.parametrize("net", NETS)
@pytest.mark.parametrize("kind", KINDS)
def test_one_step_from_moved_running_statistics_is_autograds(kind, net):
    """One batch of 8 from running statistics away from (0, 1): every gradient (renorm with ``r``
    and ``d`` clipped at ``LIMITS``) and the running statistics after the step (ghost: two updates)
    are PyTorch's; and the kind is not batch norm (the gradient differs from batch norm's)."""
    build, side = NETS[net]
    x, y = images(8, side, seed=2)
    spec = build(kind)
    state = moved_state(spec)
    limits = LIMITS if kind == "batchrenorm" else (1.0, 0.0)
    mine, stats, updates = compiled_step(spec, state, x, y, limits)
    ref, after = torch_step(spec, state, x, y, limits)
    assert set(ref) <= set(mine) and len(ref) == 2 + 4 * len(spec.channels)
    assert_gradients_close(mine, ref)
    for key, v in stats.items():
        np.testing.assert_allclose(v, after[key], rtol=1e-5, atol=1e-6, err_msg=key)
    tracked = int(after["1.num_batches_tracked"])
    assert updates == tracked == (2 if kind == "ghostbatchnorm" else 1)
    plain, _, _ = compiled_step(replace(spec, normaliser="batchnorm"), state, x, y, (1.0, 0.0))
    assert not np.allclose(plain["0.weight"], mine["0.weight"], rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("net", NETS)
@pytest.mark.parametrize("kind", KINDS)
def test_training_steps_running_statistics_and_logits_agree_with_pytorch(kind, net):
    """Six Adam steps (3 epochs of 2 batches of 8; renorm's ``rmax`` ramped each step, ``dmax`` 0: see
    the module's note) agree with autograd + torch.optim.Adam, the running variances and update counts
    included; the trained network's logits agree with the module's in inference mode and in training
    mode (batches of 8: ghost's two virtual batches; renorm at its run's final limits and at
    ``LIMITS``), running statistics untouched."""
    build, side = NETS[net]
    x, y = images(16, side, seed=1)
    spec = build(kind)
    recipe = Recipe(batch_size=8, epochs=3, renorm_dmax=0.0, renorm_rmax_full=0.2)
    stacked, _ = train.train_models(spec, recipe, [0], x, y)
    module = conv_torch.train_plain(spec, recipe, 0, x, y)
    theirs = {k: v.numpy() for k, v in module.state_dict().items()}
    ours = {k: v[0] for k, v in stacked.items()}
    assert set(ours) == set(theirs)
    per_step = 2 if kind == "ghostbatchnorm" else 1
    for key in conv_train.norm_keys(spec):
        assert int(ours[f"{key}.num_batches_tracked"]) == int(theirs[f"{key}.num_batches_tracked"]) == 6 * per_step
        assert ours[f"{key}.running_var"].tobytes() != np.ones_like(ours[f"{key}.running_var"]).tobytes()
    for layer in range(len(spec.channels)):  # zero gradients up to rounding (see the module's note)
        del ours[f"{3 * layer}.bias"], ours[f"{3 * layer + 1}.running_mean"]
    for key, v in ours.items():
        np.testing.assert_allclose(v, theirs[key], rtol=1e-3, atol=2e-4, err_msg=key)
    final = conv_train.final_limits(spec, recipe, len(y))
    assert final == ((3.0, 0.0) if kind == "batchrenorm" else (1.0, 0.0))
    ref = conv_torch.build_module(spec, state={k: v[0] for k, v in stacked.items()})
    with torch.no_grad():
        inference = ref.eval()(conv_torch.images(x)).numpy()
    np.testing.assert_allclose(conv_train.logits(stacked, spec, x)[0], inference, rtol=1e-4, atol=1e-4)
    for limits in [final] + ([LIMITS] if kind == "batchrenorm" else []):
        ref.train()
        conv_torch.set_limits(ref, *limits)
        for m in ref.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.momentum = 0.0  # training mode, running statistics left as they are
        with torch.no_grad():
            training = np.concatenate([ref(conv_torch.images(x[i : i + 8])).numpy() for i in (0, 8)])
        got = conv_train.logits(stacked, spec, x, train=True, batch=8, limits=limits)[0]
        np.testing.assert_allclose(got, training, rtol=1e-4, atol=1e-4)
        assert not np.allclose(got, inference, atol=1e-3)  # training mode really is another function


def test_renorm_limits_reach_the_training_loop():
    """The schedule's limits are passed at every step: a renorm run whose limits open up is not the
    run with ``rmax = 1, dmax = 0`` (which is batch norm's, bit for bit)."""
    x, y = images(16, 8, seed=3)
    runs = {}
    for name, kind, recipe in (
        ("renorm", "batchrenorm", Recipe(batch_size=8, epochs=3, renorm_rmax_full=0.2)),
        ("closed", "batchrenorm", Recipe(batch_size=8, epochs=3, renorm_rmax=1.0, renorm_dmax=0.0)),
        ("batchnorm", "batchnorm", Recipe(batch_size=8, epochs=3)),
    ):
        runs[name], _ = train.train_models(small(kind), recipe, [0], x, y)
    assert runs["closed"]["0.weight"].tobytes() == runs["batchnorm"]["0.weight"].tobytes()
    assert runs["renorm"]["0.weight"].tobytes() != runs["batchnorm"]["0.weight"].tobytes()


def test_ghost_virtual_batches_of_the_whole_batch_are_batch_norm():
    """A batch of fewer than two virtual batches is one: plain batch norm 2d, bit for bit."""
    x, y = images(16, 8, seed=4)
    recipe = Recipe(batch_size=8, epochs=2)
    ghost, _ = train.train_models(conv_train.ConvSpec("ghostbatchnorm", (4, 8), 2, virtual_batch=5), recipe, [0], x, y)
    plain, _ = train.train_models(conv_train.ConvSpec("batchnorm", (4, 8), 2), recipe, [0], x, y)
    assert all(ghost[k].tobytes() == plain[k].tobytes() for k in plain)
    split, _ = train.train_models(small("ghostbatchnorm"), recipe, [0], x, y)
    assert split["0.weight"].tobytes() != plain["0.weight"].tobytes()


def test_the_spec_reads_and_records_ghosts_virtual_batch_only_for_ghost():
    params = {"groups": 2, "eps": 1e-5, "momentum": 0.1, "channels": [4, 8]}
    ghost = conv_train.ConvSpec.from_params("ghostbatchnorm", params | {"virtual_batch": 4})
    assert ghost.virtual_batch == 4 and ghost.setting() == 4 and ghost.meta()["virtual_batch"] == "4"
    with pytest.raises(KeyError):
        conv_train.ConvSpec.from_params("ghostbatchnorm", params)
    for kind in ("batchnorm", "batchrenorm", "none"):
        spec = conv_train.ConvSpec.from_params(kind, params | {"virtual_batch": 4})
        assert spec.virtual_batch == 16 and spec.setting() == 1
        assert list(spec.meta()) == ["normaliser", "channels", "groups", "eps", "momentum"]  # weights files unchanged
    with pytest.raises(ValueError, match="at least 2"):
        conv_train.ConvSpec("ghostbatchnorm", virtual_batch=1).setting()


def test_a_conv_config_admits_both_kinds():
    from pathlib import Path

    import yaml

    from bnstudy.base.config import ConfigError, check_cross_fields, load_schema, validate

    root = Path(__file__).resolve().parents[2]
    schema = load_schema(root / "workflow" / "schemas" / "config.schema.yaml")
    config = yaml.safe_load((root / "config" / "fashion-tiny.yaml").read_text())
    config["normalisers"] = ["none", "batchnorm", "batchrenorm", "ghostbatchnorm"]
    validate(config, schema)
    check_cross_fields(config)
    config["normalisers"].append("rmsnorm")  # no form in the convolutional network
    with pytest.raises(ConfigError, match="rmsnorm"):
        validate(config, schema)
        check_cross_fields(config)
