"""Study 1: companion probes -- batches, agreement with a plain loop, buffers, controls."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from bnstudy import companions, data, model as mlp, runtime, train
from bnstudy.model import NetSpec
from bnstudy.companions import normalise_batches_
from bnstudy.norms import normalise

runtime.configure(1)
N_TEST = 899


@pytest.fixture(scope="module")
def split():
    s = data.split_digits(0)
    return (torch.from_numpy(s.x_train), torch.from_numpy(s.y_train),
            torch.from_numpy(s.x_test), torch.from_numpy(s.y_test))


@pytest.fixture(scope="module")
def trained(split):
    """Tiny real networks: every normaliser, two seeds, two epochs at batch size 16."""
    x, y, _, _ = split
    nets = {}
    for norm in ("none", "batchnorm", "batchrenorm", "layernorm", "groupnorm"):
        spec = NetSpec(norm)
        recipe = train.Recipe(batch_size=16, epochs=2)
        stacked, _ = train.train_lockstep(spec, recipe, [0, 1], x, y)
        meta = spec.metadata() | recipe.metadata()
        nets[norm] = (stacked, spec, train.final_limits(meta, len(y)))
    return nets


def _clone(stacked):
    return {k: v.clone() for k, v in stacked.items()}


# ---- batches -------------------------------------------------------------------

def test_exact_pairs_cover_every_other_test_row_once():
    for example in (0, 417, N_TEST - 1):
        pairs = companions.exact_pairs(N_TEST, example)
        assert pairs.shape == (N_TEST - 1, 2)
        assert (pairs[:, 0] == example).all()
        assert sorted(pairs[:, 1].tolist()) == [i for i in range(N_TEST) if i != example]


def test_random_batches_hold_example_first_and_distinct_other_companions():
    batches = companions.random_batches(N_TEST, 37, 16, 300, seed=0)
    assert batches.shape == (300, 16)
    assert (batches[:, 0] == 37).all() and (batches[:, 1:] != 37).all()
    assert all(len(set(row.tolist())) == 16 for row in batches)
    assert batches.min() >= 0 and batches.max() < N_TEST
    assert torch.equal(batches, companions.random_batches(N_TEST, 37, 16, 300, seed=0))
    assert not torch.equal(batches, companions.random_batches(N_TEST, 37, 16, 300, seed=1))


def test_one_class_batches_draw_all_companions_from_one_class(split):
    y = split[3]
    example = int((y == 3).nonzero()[0])
    own = companions.one_class_batches(y, example, 16, 200, seed=0, own=True)
    other = companions.one_class_batches(y, example, 16, 200, seed=0, own=False)
    assert (own[:, 0] == example).all() and (own[:, 1:] != example).all()
    assert (y[own[:, 1:]] == 3).all()
    assert all(len(set(row.tolist())) == 16 for row in torch.cat([own, other]))
    classes = y[other[:, 1:]]
    assert (classes == classes[:, :1]).all() and (classes != 3).all()
    assert len(set(classes[:, 0].tolist())) == 9  # every other class is drawn


def test_examples_are_stratified_seeded_and_distinct(split):
    y = split[3].numpy()
    chosen = companions.choose_examples(y, 10, seed=0)
    assert len(set(chosen.tolist())) == 100
    assert np.bincount(y[chosen], minlength=10).tolist() == [10] * 10
    assert np.array_equal(chosen, companions.choose_examples(y, 10, seed=0))
    assert not np.array_equal(chosen, companions.choose_examples(y, 10, seed=1))


# ---- evaluation ---------------------------------------------------------------

@pytest.mark.parametrize("norm", ["none", "batchnorm", "batchrenorm", "layernorm", "groupnorm"])
def test_in_place_batch_normalisation_equals_norms_normalise(trained, split, norm):
    """The probes' fast normaliser is the training-mode function of norms.normalise."""
    stacked, spec, limits = trained[norm]
    pre = companions.first_layer(stacked, split[2])
    h = pre[:, companions.random_batches(N_TEST, 5, 8, 50, seed=0)]  # (M, 50, 8, F)
    p = mlp.norm_params(stacked, "1")
    buffers = {k: v.clone() for k, v in p.items()}
    settings = {"eps": spec.eps, "groups": spec.groups, "limits": limits}
    theirs = normalise(norm, h, p, train=True, update=False, momentum=spec.momentum, **settings)
    ours = normalise_batches_(norm, h.clone(), p, **settings)
    first = normalise_batches_(norm, h.clone(), p, first_row=True, **settings)
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(first, theirs[:, :, :1], rtol=1e-5, atol=1e-5)
    assert all(torch.equal(v, buffers[k]) for k, v in p.items())  # running statistics untouched


@pytest.mark.parametrize("norm", ["none", "batchnorm", "batchrenorm", "layernorm", "groupnorm"])
def test_vectorised_probes_agree_with_per_batch_loop(trained, split, norm):
    stacked, spec, limits = trained[norm]
    x = split[2]
    for batches in (companions.exact_pairs(N_TEST, 11), companions.random_batches(N_TEST, 11, 4, 100, 0),
                    companions.random_batches(N_TEST, 600, 64, 40, 0)):
        fast = companions.batch_predictions(stacked, spec, x, batches, limits)
        slow = companions.batch_predictions_loop(stacked, spec, x, batches, limits)
        assert fast.shape == (2, len(batches))
        assert torch.equal(fast, slow)


def test_probes_sharing_a_workspace_across_batch_sizes_give_the_same_labels(trained, split):
    """probe_network reuses scratch buffers from plan to plan (sizes up and down)."""
    stacked, spec, limits = trained["batchrenorm"]
    pre = companions.first_layer(stacked, split[2])
    plans = [companions.random_batches(N_TEST, 7, b, 30, 0) for b in (64, 2, 16, 4, 64)]
    workspace = {}
    shared = [companions.probe_labels(stacked, spec, pre, batches, limits, workspace=workspace) for batches in plans]
    fresh = [companions.probe_labels(stacked, spec, pre, batches, limits) for batches in plans]
    assert workspace and all(torch.equal(a, b) for a, b in zip(shared, fresh))


def test_batch_renorm_probes_depend_on_the_limits(trained, split):
    """The limits reach the probe: with rmax 1, dmax 0 batch renorm is batch norm."""
    stacked, _, limits = trained["batchrenorm"]
    assert limits != (1.0, 0.0)
    batches = companions.random_batches(N_TEST, 3, 2, 400, 0)
    as_bn = companions.batch_predictions(stacked, NetSpec("batchnorm"), split[2], batches)
    plain = companions.batch_predictions(stacked, NetSpec("batchrenorm"), split[2], batches, (1.0, 0.0))
    relaxed = companions.batch_predictions(stacked, NetSpec("batchrenorm"), split[2], batches, limits)
    assert torch.equal(as_bn, plain)
    assert not torch.equal(plain, relaxed)


# ---- probing never changes the network ------------------------------------------

def test_pytorch_training_mode_moves_buffers_even_without_gradients(trained, split):
    """Why the probe needs care: a plain BatchNorm1d in train mode updates under no_grad."""
    stacked, spec, _ = trained["batchnorm"]
    net = mlp.build_module(spec)
    net.load_state_dict(mlp.unstack(stacked)[0])
    before = copy.deepcopy(net.state_dict())
    net.train()
    with torch.no_grad():
        net(split[2][:16])
    after = net.state_dict()
    assert not torch.equal(before["1.running_mean"], after["1.running_mean"])
    assert not torch.equal(before["4.running_var"], after["4.running_var"])
    assert after["1.num_batches_tracked"] == before["1.num_batches_tracked"] + 1


@pytest.mark.parametrize("norm", ["batchnorm", "batchrenorm"])
def test_probing_leaves_running_statistics_identical(trained, split, norm):
    stacked, spec, limits = trained[norm]
    before = _clone(stacked)
    _, _, x, y = split
    examples = companions.choose_examples(y.numpy(), 1, seed=0)
    companions.probe_network(stacked, spec, x, y, examples, batch_sizes=[2, 16], batches_per_example=5,
                             one_class_batch_size=16, seed=0, limits=limits)
    batches = companions.random_batches(N_TEST, 0, 8, 20, 0)
    companions.batch_predictions(stacked, spec, x, batches, limits)
    companions.batch_predictions_loop(stacked, spec, x, batches, limits)
    assert before.keys() == stacked.keys()
    for k in before:
        assert torch.equal(before[k], stacked[k]), k


# ---- controls and the batch-dependence they rule out ----------------------------

def _probe(trained, split, norm, per_class=1):
    stacked, spec, limits = trained[norm]
    _, _, x, y = split
    examples = companions.choose_examples(y.numpy(), per_class, seed=0)
    return pd.DataFrame(companions.probe_network(
        stacked, spec, x, y, examples, batch_sizes=[2, 4, 16, 64], batches_per_example=20,
        one_class_batch_size=16, seed=0, limits=limits))


@pytest.mark.parametrize("norm", ["none", "layernorm", "groupnorm"])
def test_controls_flip_rate_is_exactly_zero_on_trained_weights(trained, split, norm):
    rows = _probe(trained, split, norm)
    assert set(rows["design"]) == {"random", "exact", "own_class", "other_class"}
    assert rows["batches"].sum() > 10_000
    assert (rows["flips"] == 0).all()


def test_batchnorm_labels_do_depend_on_companions(trained, split):
    rows = _probe(trained, split, "batchnorm")
    exact = rows[rows["design"] == "exact"]
    assert exact["flips"].sum() > 0


# ---- summaries ------------------------------------------------------------------

def test_summary_estimators_and_dependence_json(trained, split):
    rows = _probe(trained, split, "batchnorm", per_class=2)
    rows = rows.assign(network="dependence", normaliser="batchnorm", train_batch_size=16,
                       seed=rows.pop("model"))
    rows = rows[rows["seed"] == 0]
    summary = pd.DataFrame(companions.summarise(rows, 200, 0.95, 0))
    for r in summary.itertuples():
        g = rows[(rows["design"] == r.design) & (rows["batch_size"] == r.batch_size)]
        assert r.flip_rate == pytest.approx((g["flips"] / g["batches"]).mean())
        assert r.ever_flipped == pytest.approx((g["flips"] > 0).mean())
        assert r.flip_rate_ci_low <= r.flip_rate <= r.flip_rate_ci_high
        assert r.examples == 20
    result = companions.dependence_json(summary)
    assert set(result) == {"2", "4", "16", "64", "exact_flip_rate_b2", "inference_accuracy",
                           "one_class_same_flip", "one_class_other_flip"}
    assert set(result["2"]) == {"flip_rate", "flip_ci", "train_mode_accuracy", "ever_flipped"}


# ---- the pipeline's exact b = 2 rate, recomputed independently ---------------------

@pytest.fixture
def results(runs):
    """``results/`` of the suite's test-config run, or ``$BNSTUDY_RESULTS`` (e.g. a paper run)."""
    if "BNSTUDY_RESULTS" in os.environ:
        return Path(os.environ["BNSTUDY_RESULTS"])
    base, _, _ = runs
    return base / "cores4" / "results"


@pytest.mark.pipeline
def test_pipeline_exact_b2_flip_rate_recomputed_with_plain_modules(results):
    """From the saved weights, split and examples: plain nn.Sequential, one pair at a time."""
    from bnstudy import io

    RESULTS = results
    weights = sorted((RESULTS / "runs" / "dependence").glob("seed*.safetensors"))
    assert len(weights) == 1
    net = mlp.load_module(weights[0])
    x = torch.from_numpy(io.read_array(RESULTS / "data" / "x_test.npy"))
    examples = io.read_table(RESULTS / "companions" / "examples.csv")["example"].tolist()
    state = copy.deepcopy(net.state_dict())
    flips = 0
    with torch.no_grad():
        # every inference-mode label first: the training-mode passes below move the buffers
        labels = net.eval()(x[examples]).argmax(1).tolist()
        net.train()
        for e, label in zip(examples, labels):
            for other in range(len(x)):
                if other != e:
                    flips += int(net(x[[e, other]])[0].argmax()) != label
    expected = flips / (len(examples) * (len(x) - 1))
    reported = json.loads((RESULTS / "summary" / "companions.json").read_text())["exact_flip_rate_b2"]
    assert reported == pytest.approx(expected, abs=1e-12)
    for k, v in net.state_dict().items():  # batch norm's own buffers moved; the file did not
        if "running" in k:
            assert not torch.equal(v, state[k])
    assert all(torch.equal(v, io.read_weights(weights[0])[k]) for k, v in state.items())
