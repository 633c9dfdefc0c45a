"""The companion probes shared by both networks: the convolutional network's compiled
``batch_labels`` against its training-mode logits and PyTorch, and the companion study's
functions (``labeller``, ``batch_predictions``, ``probe_network``) on the MLP (the same labels as
the compiled ``Prober``) and on the convolutional network (the direct computation)."""

from __future__ import annotations

import numpy as np
import pytest

from bnstudy.base import normalisers
from bnstudy.compiled import conv, kernels
from bnstudy.compiled.probes import Prober
from bnstudy.evaluation import accuracy
from bnstudy.nets import conv_train, train
from bnstudy.nets import model as mlp
from bnstudy.nets.model import NetSpec
from bnstudy.nets.recipe import Recipe
from bnstudy.studies.companions import draws
from bnstudy.studies.companions import science as companions

N = 24
CLASSES_HERE = 4  # classes among the test rows: 6 rows each, enough for one-class batches of 3
NEAR_TIE = 1e-4
RENORM_LIMITS = (1.5, 0.5)  # batch renorm's (rmax, dmax), other than batch norm's (1, 0)


def _images(n=N, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 64)).astype(np.float32), (np.arange(n) % CLASSES_HERE).astype(np.int64)


@pytest.fixture(scope="module")
def conv_nets():
    """Two seeds of a small convolutional network per kind (every kind it takes), trained two epochs
    on 40 images."""
    x, _ = _images(40, seed=1)
    y = (np.arange(40) % 10).astype(np.int64)
    out = {}
    for kind in normalisers.CONV_NAMES:
        spec = conv_train.ConvSpec(kind, (4, 8), 2, virtual_batch=2)  # ghost: virtual batches of 2 images
        stacked, _ = train.train_models(spec, Recipe(batch_size=8, epochs=2), [0, 1], x, y)
        out[kind] = (stacked, spec)
    return out


def _batches(b, k=6, seed=0):
    """Random batches over a few probed rows: row 0 the example, then ``b - 1`` other rows."""
    return np.concatenate([draws.random_batches(N, e, b, k, seed) for e in (0, 5, 17)])


def _direct(stacked, spec, x, batches, limits=(1.0, 0.0)):
    """Row 0's label of every batch, each batch laid out alone through ``conv_train.logits``."""
    b = batches.shape[1]
    z = np.stack(
        [conv_train.logits(stacked, spec, x[batch], train=True, batch=b, limits=limits)[:, 0] for batch in batches], 1
    )
    return accuracy.labels(z), z


def _flat(x):
    return np.ascontiguousarray(x.reshape(-1, 1))


# ---- the compiled kernel ------------------------------------------------------------


@pytest.mark.parametrize("b", [2, 3, 8])
@pytest.mark.parametrize("kind", normalisers.CONV_NAMES)
def test_batch_labels_are_row_zeros_training_mode_labels(conv_nets, kind, b):
    stacked, spec = conv_nets[kind]
    before = {k: v.copy() for k, v in stacked.items()}
    x, _ = _images()
    batches = _batches(b)
    limits = RENORM_LIMITS if kind == "batchrenorm" else (1.0, 0.0)
    want, _ = _direct(stacked, spec, x, batches, limits)
    geo, ns = spec.arch_on(8).geometry, spec.norm_settings(limits)
    for i in range(2):
        got = np.full(len(batches), -1, np.int64)
        conv.batch_labels(conv_train.model_arrays(stacked, spec, i), geo, ns, _flat(x), batches, got)
        assert np.array_equal(got, want[i]), (kind, b, i)
    for k, v in before.items():  # running statistics read, never written
        assert v.tobytes() == stacked[k].tobytes(), k


ROW_WISE = [k for k in normalisers.CONV_NAMES if k not in normalisers.BATCH_NAMES]


@pytest.mark.parametrize("b", [2, 3, 8])
@pytest.mark.parametrize("kind", ROW_WISE)
def test_a_row_wise_normalisers_probe_labels_row_zero_alone_as_in_its_batches(conv_nets, kind, b):
    """Without batch statistics the labeller labels each distinct row 0 once, alone: the labels the
    kernel gives row 0 in every one of its batches, and the direct computation's."""
    stacked, spec = conv_nets[kind]
    x, _ = _images()
    batches = _batches(b)
    got = companions.batch_predictions(stacked, spec, x, batches)
    geo, ns = spec.arch_on(8).geometry, spec.norm_settings()
    for i in range(2):
        whole = np.full(len(batches), -1, np.int64)
        conv.batch_labels(conv_train.model_arrays(stacked, spec, i), geo, ns, _flat(x), batches, whole)
        assert np.array_equal(got[i], whole), (kind, b, i)
    assert np.array_equal(got, _direct(stacked, spec, x, batches)[0])


def test_batch_labels_follow_strides_and_residual_connections():
    """A deeper network (a stride-2 layer, a residual connection), initial weights: the same rule."""
    spec = conv_train.ConvSpec("batchnorm", (4, 8, 8), 2, strides=(1, 2, 1), skips=(-1, -1, 1))
    stacked = {k: v[None] for k, v in conv_train.initial_state(spec, 5).items()}
    x, _ = _images()
    batches = _batches(3)
    want, _ = _direct(stacked, spec, x, batches)
    assert np.array_equal(companions.batch_predictions(stacked, spec, x, batches), want)


def test_batch_labels_depend_on_the_companions_under_batch_norm(conv_nets):
    """The equality above is not vacuous: under batch norm row 0's label changes with its batch."""
    stacked, spec = conv_nets["batchnorm"]
    x, _ = _images()
    for e in (0, 3, 11):
        labels = companions.batch_predictions(stacked, spec, x, draws.exact_pairs(N, e))
        if any(len(set(row)) > 1 for row in labels.tolist()):
            return
    pytest.fail("no probed example's label changed with its companion")


def test_batch_labels_agree_with_pytorch_in_training_mode(conv_nets):
    """The module in training mode (batch norm's momentum 0) on each batch of 3: the same label of
    row 0 wherever its two largest logits are more than NEAR_TIE apart."""
    torch = pytest.importorskip("torch")
    conv_torch = pytest.importorskip("bnstudy.nets.conv_torch")
    stacked, spec = conv_nets["batchnorm"]
    x, _ = _images()
    batches = _batches(3)
    got = companions.batch_predictions(stacked, spec, x, batches)
    for i in range(2):
        ref = conv_torch.build_module(spec, state={k: v[i] for k, v in stacked.items()}).train()
        for m in ref.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.momentum = 0.0
        with torch.no_grad():
            z = np.stack([ref(conv_torch.images(x[batch])).numpy()[0] for batch in batches])
        top = np.sort(z, axis=-1)
        clear = top[:, -1] - top[:, -2] > NEAR_TIE
        assert clear.sum() > len(batches) // 2
        assert np.array_equal(got[i][clear], z.argmax(-1)[clear])


# ---- the companion study's functions on either network ------------------------------


def _mlp_stack(norm):
    spec = NetSpec(norm, virtual_batch=2)
    stacked = mlp.initial_stack(spec, [0, 1])
    rng = np.random.default_rng(3)
    for key in [k for k in stacked if k.endswith(("running_mean", "running_var"))]:
        shift = rng.standard_normal(stacked[key].shape).astype(np.float32) * np.float32(0.3)
        stacked[key] = stacked[key] + (np.abs(shift) if key.endswith("var") else shift)
    return stacked, spec


_DESIGN = {"batch_sizes": [2, 3], "batches_per_example": 4, "one_class_batch_size": 3, "seed": 0}


@pytest.mark.parametrize("norm", normalisers.NAMES)
def test_mlp_labels_are_the_probers(norm):
    stacked, spec = _mlp_stack(norm)
    x, y = _images()
    limits = (1.5, 0.5) if norm == "batchrenorm" else (1.0, 0.0)
    prober = Prober(stacked, spec, x, limits)
    for b in (2, 3, 8):
        batches = _batches(b)
        assert np.array_equal(companions.batch_predictions(stacked, spec, x, batches, limits), prober.labels(batches))
    rows = companions.probe_network(stacked, spec, x, y, [1, 6], limits=limits, **_DESIGN)
    inference = kernels.predict(stacked, spec, x[[1, 6]])
    for r in rows:
        plans = {(d, b): q for d, b, q in companions.example_plans(y, r["example"], [2, 3], 4, 3, 0)}
        labels = prober.labels(plans[(r["design"], r["batch_size"])])[r["model"]]
        assert r["inference_label"] == inference[r["model"], [1, 6].index(r["example"])]
        assert (r["flips"], r["correct"]) == (
            int((labels != r["inference_label"]).sum()),
            int((labels == r["label"]).sum()),
        )


@pytest.mark.parametrize("kind", ["batchnorm", "groupnorm"])
def test_conv_probe_network_is_the_direct_computation(conv_nets, kind):
    stacked, spec = conv_nets[kind]
    x, y = _images()
    rows = companions.probe_network(stacked, spec, x, y, [2, 9], **_DESIGN)
    assert len(rows) == 2 * 2 * 6  # models x examples x (random 2 and 3, exact, three one-class)
    inference = accuracy.labels(conv_train.logits(stacked, spec, x))
    for r in rows:
        plans = {(d, b): q for d, b, q in companions.example_plans(y, r["example"], [2, 3], 4, 3, 0)}
        batches = plans[(r["design"], r["batch_size"])]
        labels = _direct(stacked, spec, x, batches)[0][r["model"]]
        assert np.array_equal(companions.batch_predictions(stacked, spec, x, batches)[r["model"]], labels)
        assert r["inference_label"] == inference[r["model"], r["example"]] and r["batches"] == len(batches)
        assert (r["flips"], r["correct"]) == (
            int((labels != r["inference_label"]).sum()),
            int((labels == r["label"]).sum()),
        )
    if kind == "groupnorm":  # each image normalised alone: the control never flips
        assert sum(r["flips"] for r in rows) == 0


def test_conv_batch_renorm_probes_take_the_limits(conv_nets):
    """The limits reach the convolutional probe: batch renorm with (1, 0) is batch norm on the same
    weights, and with other limits it is the direct computation with them."""
    stacked, spec = conv_nets["batchrenorm"]
    x, _ = _images()
    batches = np.concatenate([draws.exact_pairs(N, e) for e in (0, 3, 11)])
    as_bn = companions.batch_predictions(stacked, conv_train.ConvSpec("batchnorm", (4, 8), 2), x, batches)
    assert np.array_equal(companions.batch_predictions(stacked, spec, x, batches), as_bn)
    relaxed = companions.batch_predictions(stacked, spec, x, batches, RENORM_LIMITS)
    assert np.array_equal(relaxed, _direct(stacked, spec, x, batches, RENORM_LIMITS)[0])
    assert not np.array_equal(relaxed, as_bn)


def test_labeller_is_the_specs_own_and_checks_its_input(conv_nets):
    stacked, spec = conv_nets["batchnorm"]
    x, _ = _images()
    assert type(companions.labeller(stacked, spec, x)).__name__ == "ConvLabeller"
    assert type(companions.labeller(*_mlp_stack("batchnorm"), x)).__name__ == "MlpLabeller"
    with pytest.raises(ValueError, match="b >= 2"):
        companions.batch_predictions(stacked, spec, x, np.zeros((3, 1), np.int64))
    with pytest.raises(ValueError, match="row indices"):
        companions.batch_predictions(stacked, spec, x, np.array([[0, N]]))
    with pytest.raises(AttributeError, match="labeller"):
        companions.labeller(stacked, "batchnorm", x)  # not a spec: no labeller of its own


def test_probe_files_reads_a_convolutional_weights_file(conv_nets, tmp_path):
    """A weights file of convolutional networks (``kind: conv``) is probed as its stack is."""
    from bnstudy.nets import weights

    stacked, spec = conv_nets["batchnorm"]
    x, y = _images()
    design = {k: v for k, v in _DESIGN.items() if k != "seed"}
    path = tmp_path / "grid.safetensors"
    weights.write(
        path, spec, Recipe(batch_size=8, epochs=2), [3, 4], [{k: v[i] for k, v in stacked.items()} for i in (0, 1)]
    )
    rows = companions.probe_files([path], "conv", x, y, 40, [2, 9], seed=0, **design)
    direct = companions.probe_network(stacked, spec, x, y, [2, 9], **_DESIGN)
    head = {"network": "conv", "normaliser": "batchnorm", "train_batch_size": 8}
    assert rows == [head | {"seed": 3 + r.pop("model")} | r for r in direct]


@pytest.mark.parametrize("kind", ["batchnorm", "batchrenorm", "ghostbatchnorm"])
def test_conv_probes_leave_every_tensor_bit_identical(conv_nets, kind):
    """The paper's claim for the convolutional network's probes: training mode reads the running
    statistics and writes nothing (PyTorch's BatchNorm2d would update them, even without gradients)."""
    stacked, spec = conv_nets[kind]
    before = {k: v.copy() for k, v in stacked.items()}
    x, y = _images()
    companions.probe_network(stacked, spec, x, y, [2, 9], **_DESIGN)
    assert before.keys() == stacked.keys()
    assert all(np.array_equal(before[k], stacked[k]) and before[k].dtype == stacked[k].dtype for k in before)
    assert any("running" in k for k in before)  # the buffers are among the tensors checked


def test_the_exact_design_over_a_sample_of_companions(conv_nets):
    """companions.exact_companions: each example paired with every row of one seeded sample of the
    test rows but itself, the same sample for every example; without it, with every other row."""
    pool = draws.exact_pool(N, 7, 0)
    assert len(pool) == 7 == len(set(pool.tolist())) and np.array_equal(pool, np.sort(pool))
    assert np.array_equal(draws.exact_pool(N, 7, 0), pool) and draws.exact_pool(N, None, 0) is None
    for e in (int(pool[0]), next(r for r in range(N) if r not in pool)):
        pairs = draws.exact_pairs(N, e, pool)
        assert (pairs[:, 0] == e).all() and pairs[:, 1].tolist() == [r for r in pool.tolist() if r != e]
    assert draws.exact_pairs(N, 3).tolist() == [[3, r] for r in range(N) if r != 3]
    stacked, spec = conv_nets["batchnorm"]
    x, y = _images()
    rows = companions.probe_network(stacked, spec, x, y, [int(pool[0]), 9], exact_companions=7, **_DESIGN)
    exact = {r["example"]: r["batches"] for r in rows if r["design"] == "exact"}
    assert exact == {int(pool[0]): 6, 9: 7 - int(9 in pool)}
    for r in rows:
        if r["design"] == "exact":
            labels = _direct(stacked, spec, x, draws.exact_pairs(N, r["example"], pool))[0][r["model"]]
            assert r["flips"] == int((labels != r["inference_label"]).sum())
