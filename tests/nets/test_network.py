"""The one interface to both networks (bnstudy.nets.spec.Network, each kind's spec): each method is,
bit for bit, the network's own function, and a rule's parameters (bnstudy.nets.network) name the network."""

import inspect

import numpy as np
import pytest

from bnstudy.compiled import kernels
from bnstudy.nets import conv_train, model, network, train
from bnstudy.nets.recipe import Recipe
from bnstudy.nets.spec import Network

MLP_PARAMS = dict(normaliser="batchnorm", hidden=[12, 10], groups=2, eps=1e-5, momentum=0.1)
CONV_PARAMS = dict(
    kind="conv",
    normaliser="batchnorm",
    layers=[{"channels": 4, "stride": 2}, {"channels": 4, "skip": 0}],
    groups=2,
    eps=1e-5,
    momentum=0.1,
)


def data(n, features, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, features)).astype(np.float32), rng.integers(0, 10, n).astype(np.int64)


def recipe(**kw):
    return Recipe.from_params(dict(optimizer="adam", lr=1e-2, batch_size=8, epochs=1, order="shuffle") | kw)


def test_a_rules_parameters_name_the_network_and_mlp_is_the_default():
    mlp = network.spec_from_params(MLP_PARAMS, inputs=16)
    assert mlp == model.spec_from_params(MLP_PARAMS, 16) and mlp.family == "mlp"
    assert network.spec_from_params(MLP_PARAMS | {"kind": "mlp"}, inputs=16) == mlp
    conv = network.spec_from_params(CONV_PARAMS, inputs=64)
    assert conv == conv_train.ConvSpec.from_params("batchnorm", CONV_PARAMS) and conv.family == "conv"
    assert conv.strides == (2, 1) and conv.skips == (-1, 0)
    assert mlp.norm_layers() == ["1", "4"] and conv.norm_layers() == ["1", "4"]
    assert isinstance(mlp, Network) and isinstance(conv, Network)
    assert {k: v.family for k, v in network.KINDS.items()} == {"mlp": "mlp", "conv": "conv"}
    with pytest.raises(ValueError, match="network kind 'rnn'"):
        network.spec_from_params(MLP_PARAMS | {"kind": "rnn"}, inputs=16)
    with pytest.raises(ValueError, match="network kind 'rnn'"):
        network.spec_from_metadata({"kind": "rnn", "normaliser": "batchnorm"})


def _same(a: dict, b: dict):
    assert list(a) == list(b)
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].tobytes() == b[k].tobytes(), k


def test_the_mlps_calls_are_its_own_functions_bit_for_bit():
    spec = network.spec_from_params(MLP_PARAMS, inputs=16)
    x, y = data(48, 16)
    stacked, log = spec.train_models(recipe(), [0, 1], x, y)
    direct, direct_log = train.train_models(spec, recipe(), [0, 1], x, y)
    _same(stacked, direct)
    assert log == direct_log
    for mode in (dict(), dict(train=True, batch=8)):
        assert spec.logits(stacked, x, **mode).tobytes() == kernels.logits(stacked, spec, x, **mode).tobytes()
    assert np.array_equal(spec.predict(stacked, x), kernels.predict(stacked, spec, x))
    assert spec.arch(16).shapes.tolist() == [[12, 16], [10, 12], [10, 10]]


def test_the_convolutional_networks_calls_are_its_own_functions_bit_for_bit():
    spec = network.spec_from_params(CONV_PARAMS, inputs=64)
    x, y = data(32, 64, seed=1)
    stacked, log = spec.train_models(recipe(), [3], x, y)
    direct, direct_log = train.train_models(spec, recipe(), [3], x, y)
    _same(stacked, direct)
    assert log == direct_log
    for mode in (dict(), dict(train=True, batch=8)):
        z = spec.logits(stacked, x, **mode)
        assert z.tobytes() == conv_train.logits(stacked, spec, x, **mode).tobytes()
    z = conv_train.logits(stacked, spec, x)
    first_largest = np.array([[int(np.flatnonzero(row == row.max())[0]) for row in zi] for zi in z])
    assert np.array_equal(spec.predict(stacked, x), first_largest)
    assert spec.arch(64).geometry.layers.tolist() == spec.arch_on(8).geometry.layers.tolist()
    limited = dict(train=True, batch=8, limits=(2.0, 1.0))
    assert spec.logits(stacked, x, **limited).tobytes() == conv_train.logits(stacked, spec, x, **limited).tobytes()


@pytest.mark.parametrize("kind", ["batchnorm", "groupnorm"])
def test_the_shared_loop_trains_the_convolutional_network_with_sgd_on_class_sorted_batches_as_pytorch(kind):
    """What the convolutional network gained from the loop the MLP uses: SGD with momentum (study 1's
    recipe) and class-sorted batches, held to torch.optim.SGD and autograd over three epochs."""
    pytest.importorskip("torch")
    conv_torch = pytest.importorskip("bnstudy.nets.conv_torch")
    spec = conv_train.ConvSpec(kind, (4, 8), 2, strides=(2, 1))
    x, y = data(40, 64, seed=2)
    r = recipe(optimizer="sgd", lr=0.05, sgd_momentum=0.9, epochs=3, order="class_sorted")
    stacked, _ = spec.train_models(r, [0], x, y)
    theirs = {k: v.detach().numpy() for k, v in conv_torch.train_plain(spec, r, 0, x, y).state_dict().items()}
    assert list(stacked) == list(theirs)
    for key, v in stacked.items():
        np.testing.assert_allclose(v[0], theirs[key], rtol=1e-4, atol=1e-5, err_msg=key)
    assert int(stacked.get("1.num_batches_tracked", np.array([15]))[0]) == 15


def test_buffers_and_state_are_inverse_for_both_networks():
    for spec in (network.spec_from_params(MLP_PARAMS, 16), network.spec_from_params(CONV_PARAMS, 64)):
        state = spec.initial_state(4)
        rng = np.random.default_rng(0)
        for k in state:  # every float tensor moved off its initial value, so a swap would show
            if state[k].dtype == np.float32:
                state[k] = (state[k] + rng.standard_normal(state[k].shape)).astype(np.float32)
        flat, running = train.buffers(spec, state)
        again = train.state_from(spec, flat, running, int(state["1.num_batches_tracked"]), state)
        _same(again, state)


def test_weights_files_record_either_network_and_read_back_its_spec(tmp_path):
    from bnstudy.nets import weights

    x, y = data(32, 64, seed=3)
    for params, inputs in ((MLP_PARAMS, 64), (CONV_PARAMS, 64)):
        spec = network.spec_from_params(params, inputs=inputs)
        stacked, _ = spec.train_models(recipe(), [2, 7], x, y)
        path = tmp_path / f"{spec.family}.safetensors"
        weights.write(path, spec, recipe(), [2, 7], model.unstack(stacked))
        again, read_spec, metas = weights.read(path)
        assert read_spec == spec and [m["seed"] for m in metas] == ["2", "7"]
        assert sorted(again) == sorted(stacked)  # the file holds its tensors by name
        _same({k: again[k] for k in stacked}, stacked)
    assert "kind" not in network.spec_from_params(MLP_PARAMS, 64).metadata()  # MLP files as before
    assert network.spec_from_params(CONV_PARAMS, 64).metadata()["kind"] == "conv"


@pytest.mark.parametrize("family", ["mlp", "conv"])
def test_a_linear_learning_rate_decay_is_pytorchs_lambda_lr_stepped_per_epoch(family):
    """``lr_schedule: linear`` in the shared loop against torch.optim and ``LambdaLR`` (lambda e: (E - e) / E,
    stepped after each epoch), for both network families over three epochs of SGD with momentum; the
    decayed run ends elsewhere than the constant-rate one, so the comparison can tell them apart."""
    pytest.importorskip("torch")
    conv_torch = pytest.importorskip("bnstudy.nets.conv_torch")
    from bnstudy.nets import plain

    if family == "conv":
        spec, reference = conv_train.ConvSpec("groupnorm", (4, 8), 2, strides=(2, 1)), conv_torch.train_plain
    else:
        spec = network.spec_from_params(MLP_PARAMS | {"normaliser": "groupnorm"}, inputs=64)
        reference = plain.train_plain
    x, y = data(40, 64, seed=3)
    r = recipe(optimizer="sgd", lr=0.05, sgd_momentum=0.9, epochs=3, lr_schedule="linear")
    decayed, _ = spec.train_models(r, [0], x, y)
    constant, _ = spec.train_models(recipe(optimizer="sgd", lr=0.05, sgd_momentum=0.9, epochs=3), [0], x, y)
    theirs = {k: v.detach().numpy() for k, v in reference(spec, r, 0, x, y).state_dict().items()}
    assert list(decayed) == list(theirs)
    for key, v in decayed.items():
        np.testing.assert_allclose(v[0], theirs[key], rtol=1e-4, atol=1e-5, err_msg=key)
    moved = [k for k in decayed if not np.allclose(decayed[k][0], constant[k][0], rtol=1e-3, atol=1e-4)]
    assert moved, "the decay changed nothing"


def _abstract(cls) -> list[str]:
    """The methods ``cls`` names but leaves to its kinds (their body raises NotImplementedError)."""
    out = []
    for name, value in vars(cls).items():
        f = getattr(value, "__func__", value)
        if inspect.isfunction(f) and "raise NotImplementedError" in inspect.getsource(f):
            out.append(name)
    return out


def test_every_kind_implements_every_method_the_interface_leaves_to_it():
    required = _abstract(Network)
    assert {"layout", "norm_layers", "arch", "logits", "from_metadata", "labeller", "exact_statistics"} <= set(required)
    for name, kind in network.KINDS.items():
        assert issubclass(kind, Network) and kind.family == name
        assert [m for m in required if m not in vars(kind)] == [], name

    class Half(Network):  # the check can fail: a kind that leaves a method out is caught
        def layout(self):
            return []

    assert "layout" not in [m for m in required if m not in vars(Half)]
    assert "logits" in [m for m in required if m not in vars(Half)]
