"""Study 1: companion probes -- batches, agreement with PyTorch's plain loop, buffers, controls."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bnstudy.base import normalisers
from bnstudy.base.runtime import STREAM_PROBE, derive_seed
from bnstudy.compiled import kernels
from bnstudy.nets import data, recipe, train
from bnstudy.nets import model as mlp
from bnstudy.nets.model import NetSpec
from bnstudy.studies.companions import draws
from bnstudy.studies.companions import science as companions

N_TEST = 899
NEAR_TIE = 1e-4  # logits whose two largest are closer than this may round to either label


@pytest.fixture(scope="module")
def split():
    s = data.split_digits(0)
    return s.x_train, s.y_train, s.x_test, s.y_test


@pytest.fixture(scope="module")
def trained(split):
    """Tiny real networks: every normaliser, two seeds, two epochs at batch size 16 (ghost batch
    norm in virtual batches of 8 rows: two per training batch, eight per probe batch of 64)."""
    x, y, _, _ = split
    nets = {}
    for norm in normalisers.NAMES:
        spec = NetSpec(norm, virtual_batch=8)
        rec = recipe.Recipe(batch_size=16, epochs=2)
        stacked, _ = train.train_models(spec, rec, [0, 1], x, y)
        nets[norm] = (stacked, spec, recipe.final_limits(spec.metadata() | rec.metadata(), len(y)))
    return nets


def _digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, "<i8").tobytes()).hexdigest()


# ---- batches -------------------------------------------------------------------


def test_exact_pairs_cover_every_other_test_row_once():
    for example in (0, 417, N_TEST - 1):
        pairs = draws.exact_pairs(N_TEST, example)
        assert pairs.shape == (N_TEST - 1, 2) and pairs.dtype == np.int64
        assert (pairs[:, 0] == example).all()
        assert pairs[:, 1].tolist() == [i for i in range(N_TEST) if i != example]


def test_random_batches_hold_example_first_and_distinct_other_companions():
    batches = draws.random_batches(N_TEST, 37, 16, 300, seed=0)
    assert batches.shape == (300, 16) and batches.dtype == np.int64
    assert (batches[:, 0] == 37).all() and (batches[:, 1:] != 37).all()
    assert all(len(set(row.tolist())) == 16 for row in batches)
    assert batches.min() >= 0 and batches.max() < N_TEST
    assert np.array_equal(batches, draws.random_batches(N_TEST, 37, 16, 300, seed=0))
    assert not np.array_equal(batches, draws.random_batches(N_TEST, 37, 16, 300, seed=1))


def test_random_companions_are_the_smallest_uniform_keys_of_their_own_stream():
    """The documented draw, written out: PCG64 seeded from (seed, STREAM_PROBE, example, b, design)."""
    n, example, b, k, seed = 50, 7, 4, 30, 3
    rng = np.random.Generator(np.random.PCG64(derive_seed(seed, STREAM_PROBE, example, b, 0)))  # 0: "random"
    pool = np.array([i for i in range(n) if i != example])
    keys = rng.random((k, len(pool)))
    expected = pool[np.argsort(keys, axis=1, kind="stable")[:, : b - 1]]
    assert np.array_equal(draws.random_batches(n, example, b, k, seed)[:, 1:], expected)


def test_one_class_batches_draw_all_companions_from_one_class(split):
    y = split[3]
    example = int(np.flatnonzero(y == 3)[0])
    own = draws.one_class_batches(y, example, 16, 200, seed=0, own=True)
    other = draws.one_class_batches(y, example, 16, 200, seed=0, own=False)
    assert (own[:, 0] == example).all() and (own[:, 1:] != example).all()
    assert (y[own[:, 1:]] == 3).all()
    assert all(len(set(row.tolist())) == 16 for row in np.concatenate([own, other]))
    classes = y[other[:, 1:]]
    assert (classes == classes[:, :1]).all() and (classes != 3).all()
    assert len(set(classes[:, 0].tolist())) == 9  # every other class is drawn


def test_draws_are_pinned_bytes():
    """NumPy's PCG64 stream, integer draws and random(): the same batches on every machine.
    A change here (e.g. a NumPy that changed a stream) changes every companion result."""
    y = np.arange(N_TEST) % 10
    assert _digest(draws.random_batches(N_TEST, 37, 16, 50, 0)) == (
        "5f8bb3d07e819382335c842740f4deacb578d5c611a7320c7fc591d2b80b97d7"
    )
    assert _digest(draws.random_batches(N_TEST, 898, 2, 30, 5)) == (
        "f4daef83ecbcfd2a4f83c8751105518dae21d764e20fa50b12d73eddcdcee59b"
    )
    assert _digest(draws.one_class_batches(y, 23, 16, 40, 0, own=True)) == (
        "8c55469c08cd0f069bfa54f59b58e1cd206f1b70487f52baa3f00401a5dd1312"
    )
    assert _digest(draws.one_class_batches(y, 23, 16, 40, 0, own=False)) == (
        "2d593df77f5d73d5407b1e9de22f3fbdf6c98204ba8b173e85de654a2ed269db"
    )


@pytest.mark.parametrize("m", [1, 2, 15, 63, 99, 100])
def test_smallest_in_order_is_the_head_of_a_stable_argsort(m):
    rng = np.random.default_rng(m)
    for keys in (
        rng.random((40, 100)),  # no ties
        rng.integers(0, 6, (40, 100)).astype(np.float64),  # ties everywhere, at the bound too
        np.where(rng.random((40, 100)) < 0.5, 0.25, rng.random((40, 100))),
    ):
        assert np.array_equal(draws.smallest_in_order(keys, m), np.argsort(keys, axis=1, kind="stable")[:, :m])
    with pytest.raises(ValueError):
        draws.smallest_in_order(np.zeros((2, 3)), 4)


def test_examples_are_stratified_seeded_and_distinct(split):
    y = split[3]
    chosen = draws.choose_examples(y, 10, seed=0)
    assert len(set(chosen.tolist())) == 100
    assert np.bincount(y[chosen], minlength=10).tolist() == [10] * 10
    assert np.array_equal(chosen, draws.choose_examples(y, 10, seed=0))
    assert not np.array_equal(chosen, draws.choose_examples(y, 10, seed=1))


# ---- evaluation: the compiled probes against PyTorch's plain loop ----------------


def _top_two_gap(z: np.ndarray) -> np.ndarray:
    top = np.sort(z, axis=-1)
    return top[..., -1] - top[..., -2]


@pytest.mark.parametrize("norm", normalisers.NAMES)
def test_probes_agree_with_the_plain_pytorch_loop_on_every_batch(trained, split, norm):
    """Labels equal on every batch, except where a network's two largest logits are within
    NEAR_TIE of each other in either computation (float32 rounding differs between
    PyTorch's kernels and the fixed order); on these cases there is no such batch."""
    pytest.importorskip("torch")
    stacked, spec, limits = trained[norm]
    x = split[2]
    disagreements = 0
    for batches in (
        draws.exact_pairs(N_TEST, 11)[::3],
        draws.random_batches(N_TEST, 11, 4, 60, 0),
        draws.random_batches(N_TEST, 600, 16, 40, 0),
        draws.random_batches(N_TEST, 600, 64, 15, 0),
    ):
        fast = companions.batch_predictions(stacked, spec, x, batches, limits)
        ref = companions.batch_logits_loop(stacked, spec, x, batches, limits)
        assert fast.shape == ref.shape[:2] == (2, len(batches))
        differ = fast != ref.argmax(-1)
        near_tie = _top_two_gap(ref) < NEAR_TIE
        assert not (differ & ~near_tie).any(), f"{int((differ & ~near_tie).sum())} clear disagreements"
        disagreements += int(differ.sum())
    assert disagreements == 0


def test_reference_labels_are_the_argmax_of_its_logits(trained, split):
    pytest.importorskip("torch")
    stacked, spec, limits = trained["batchrenorm"]
    batches = draws.random_batches(N_TEST, 5, 8, 12, 0)
    z = companions.batch_logits_loop(stacked, spec, split[2], batches, limits)
    assert np.array_equal(companions.batch_predictions_loop(stacked, spec, split[2], batches, limits), z.argmax(-1))


def test_batch_renorm_probes_depend_on_the_limits(trained, split):
    """The limits reach the probe: with rmax 1, dmax 0 batch renorm is batch norm."""
    stacked, _, limits = trained["batchrenorm"]
    assert limits != (1.0, 0.0)
    batches = draws.random_batches(N_TEST, 3, 2, 400, 0)
    as_bn = companions.batch_predictions(stacked, NetSpec("batchnorm"), split[2], batches)
    plain = companions.batch_predictions(stacked, NetSpec("batchrenorm"), split[2], batches, (1.0, 0.0))
    relaxed = companions.batch_predictions(stacked, NetSpec("batchrenorm"), split[2], batches, limits)
    assert np.array_equal(as_bn, plain)
    assert not np.array_equal(plain, relaxed)


# ---- probing never changes the network ------------------------------------------


def test_pytorch_training_mode_moves_buffers_even_without_gradients(trained, split):
    """Why the reference loop restores buffers: a BatchNorm1d in train mode updates under no_grad."""
    torch = pytest.importorskip("torch")
    stacked, spec, _ = trained["batchnorm"]
    net = mlp.build_module(spec)
    net.load_state_dict({k: torch.from_numpy(v) for k, v in mlp.unstack(stacked)[0].items()})
    before = {k: v.clone() for k, v in net.state_dict().items()}
    net.train()
    with torch.no_grad():
        net(torch.from_numpy(split[2][:16]))
    after = net.state_dict()
    assert not torch.equal(before["1.running_mean"], after["1.running_mean"])
    assert not torch.equal(before["4.running_var"], after["4.running_var"])
    assert after["1.num_batches_tracked"] == before["1.num_batches_tracked"] + 1


@pytest.mark.parametrize("norm", normalisers.BATCH_NAMES)
def test_probing_leaves_running_statistics_identical(trained, split, norm):
    stacked, spec, limits = trained[norm]
    before = {k: v.copy() for k, v in stacked.items()}
    _, _, x, y = split
    examples = draws.choose_examples(y, 1, seed=0)
    companions.probe_network(
        stacked,
        spec,
        x,
        y,
        examples,
        batch_sizes=[2, 16],
        batches_per_example=5,
        one_class_batch_size=16,
        seed=0,
        limits=limits,
    )
    batches = draws.random_batches(N_TEST, 0, 8, 20, 0)
    companions.batch_predictions(stacked, spec, x, batches, limits)
    if norm == "batchnorm":
        pytest.importorskip("torch")
        companions.batch_predictions_loop(stacked, spec, x, batches, limits)
    assert before.keys() == stacked.keys()
    for k, v in before.items():
        assert np.array_equal(v, stacked[k]) and v.dtype == stacked[k].dtype, k


# ---- controls and the batch dependence they rule out ----------------------------


def _probe(trained, split, norm, per_class=1):
    stacked, spec, limits = trained[norm]
    _, _, x, y = split
    examples = draws.choose_examples(y, per_class, seed=0)
    return pd.DataFrame(
        companions.probe_network(
            stacked,
            spec,
            x,
            y,
            examples,
            batch_sizes=[2, 4, 16, 64],
            batches_per_example=20,
            one_class_batch_size=16,
            seed=0,
            limits=limits,
        )
    )


def test_probe_counts_are_flips_against_inference_and_hits_of_the_true_label(trained, split):
    """Each row's counts recomputed from the labels of its batches: flips against the example's
    inference-mode label, correct against its true label (they differ for a misclassified example)."""
    stacked, spec, limits = trained["batchnorm"]
    _, _, x, y = split
    inference_all = kernels.predict(stacked, spec, x)[0]
    wrong, right = np.flatnonzero(inference_all != y)[:2], np.flatnonzero(inference_all == y)[:2]
    assert len(wrong) == 2
    examples = np.sort(np.concatenate([wrong, right]))
    rows = companions.probe_network(
        stacked,
        spec,
        x,
        y,
        examples,
        batch_sizes=[2, 4],
        batches_per_example=6,
        one_class_batch_size=4,
        seed=0,
        limits=limits,
    )
    inference = kernels.predict(stacked, spec, x[examples])
    assert len(rows) == 2 * len(examples) * 6  # models x examples x (random 2, 4, exact, three one-class)
    for r in rows:
        j = list(examples).index(r["example"])
        plans = {(d, b): q for d, b, q in companions.example_plans(y, r["example"], [2, 4], 6, 4, 0)}
        labels = companions.batch_predictions(stacked, spec, x, plans[(r["design"], r["batch_size"])], limits)
        labels = labels[r["model"]]
        assert r["batches"] == len(labels)
        assert r["label"] == y[r["example"]] and r["inference_label"] == inference[r["model"], j]
        assert r["flips"] == int((labels != inference[r["model"], j]).sum())
        assert r["correct"] == int((labels == y[r["example"]]).sum())


def test_a_grid_probe_with_fewer_batches_counts_the_first_of_the_same_batches(trained, split):
    """``batches_used`` (the config's grid_batches_per_example): each random and one-class design is
    probed with the first n of the batches the full design draws, so its counts are those of that
    prefix; the exact design stays whole, its rows the same as the full probe's."""
    stacked, spec, limits = trained["batchnorm"]
    _, _, x, y = split
    examples = draws.choose_examples(y, 1, seed=0)[:3]
    design = dict(batch_sizes=[2, 4], batches_per_example=8, one_class_batch_size=4, seed=0, limits=limits)
    full = companions.probe_network(stacked, spec, x, y, examples, **design)
    cut = companions.probe_network(stacked, spec, x, y, examples, batches_used=3, **design)
    key = lambda r: (r["model"], r["example"], r["design"], r["batch_size"])  # noqa: E731
    full, cut = {key(r): r for r in full}, {key(r): r for r in cut}
    assert full.keys() == cut.keys()
    sampled = 0
    for k, r in cut.items():
        if r["design"] == "exact":
            assert r == full[k]
            continue
        sampled += 1
        plans = {(d, b): q for d, b, q in companions.example_plans(y, r["example"], [2, 4], 8, 4, 0)}
        labels = companions.batch_predictions(stacked, spec, x, plans[(r["design"], r["batch_size"])][:3], limits)
        inference = full[k]["inference_label"]
        assert r["batches"] == 3 and full[k]["batches"] == 8
        assert r["flips"] == int((labels[r["model"]] != inference).sum())
        assert r["correct"] == int((labels[r["model"]] == r["label"]).sum())
    assert sampled == 2 * len(examples) * 5  # models x examples x (random 2, 4, three one-class)


@pytest.mark.parametrize("norm", ["none", "layernorm", "groupnorm"])
def test_controls_flip_rate_is_exactly_zero_on_trained_weights(trained, split, norm):
    rows = _probe(trained, split, norm)
    assert set(rows["design"]) == {"random", "exact", "own_class", "other_class", "any_class"}
    assert rows["batches"].sum() > 10_000
    assert (rows["flips"] == 0).all()


def test_batchnorm_labels_do_depend_on_companions(trained, split):
    rows = _probe(trained, split, "batchnorm")
    exact = rows[rows["design"] == "exact"]
    assert exact["flips"].sum() > 0


def test_inference_labels_are_kernels_predict(trained, split):
    stacked, spec, _ = trained["batchnorm"]
    rows = _probe(trained, split, "batchnorm")
    examples = sorted(set(rows["example"]))
    labels = kernels.predict(stacked, spec, split[2][examples])
    got = rows.drop_duplicates(["model", "example"]).pivot(index="model", columns="example", values="inference_label")
    assert np.array_equal(got[examples].to_numpy(), labels)


# ---- summaries ------------------------------------------------------------------


def test_summary_estimators_and_dependence_json(trained, split):
    rows = _probe(trained, split, "batchnorm", per_class=2)
    rows = rows.assign(network="dependence", normaliser="batchnorm", train_batch_size=16, seed=rows.pop("model"))
    rows = rows[rows["seed"] == 0]
    summary = pd.DataFrame(companions.summarise(rows, 200, 0.95, 0))
    for r in summary.itertuples():
        g = rows[(rows["design"] == r.design) & (rows["batch_size"] == r.batch_size)]
        assert r.flip_rate == pytest.approx((g["flips"] / g["batches"]).mean())
        assert r.ever_flipped == pytest.approx((g["flips"] > 0).mean())
        assert r.flip_rate_ci_low <= r.flip_rate <= r.flip_rate_ci_high
        assert r.examples == 20
    result = companions.dependence_json(summary)
    assert set(result) == {
        "2",
        "4",
        "16",
        "64",
        "exact_flip_rate_b2",
        "inference_accuracy",
        "one_class_same_flip",
        "one_class_other_flip",
        "one_class_any_flip",
    }
    assert set(result["2"]) == {"flip_rate", "flip_ci", "train_mode_accuracy", "ever_flipped"}


# ---- the pipeline's exact b = 2 rate, recomputed independently ---------------------


@pytest.fixture
def results(request):
    """``results/`` of the suite's test-config run, or ``$BNSTUDY_RESULTS`` (e.g. a paper run)."""
    if "BNSTUDY_RESULTS" in os.environ:
        return Path(os.environ["BNSTUDY_RESULTS"])
    base, _, _ = request.getfixturevalue("runs")  # only then: the runs take minutes
    return base / "cores4" / "results"


@pytest.mark.pipeline
@pytest.mark.asks_for("runs")  # through the results fixture: ordered with the tests that wait for the runs
def test_pipeline_exact_b2_flip_rate_recomputed_with_plain_modules(results):
    """From the saved weights, split and examples: plain nn.Sequential, one pair at a time.

    PyTorch's float32 rounding differs from the pipeline's fixed order, so a pair whose
    two largest logits are within NEAR_TIE may count differently; the rates agree to
    within those pairs (none, in the runs so far)."""
    torch = pytest.importorskip("torch")
    # companions.json describes the first dependence network (seed 0 in both configs)
    from bnstudy.base import io
    from bnstudy.nets import weights

    path = results / "runs" / "dependence" / "networks.safetensors"
    net = weights.load_module(path, seed=0)
    x = torch.from_numpy(io.read_array(results / "data" / "x_test.npy"))
    examples = io.read_table(results / "companions" / "examples.csv")["example"].tolist()
    state = {k: v.clone() for k, v in net.state_dict().items()}
    flips = near = 0
    with torch.no_grad():
        # every inference-mode label first: the training-mode passes below move the buffers
        labels = net.eval()(x[examples]).argmax(1).tolist()
        net.train()
        for e, label in zip(examples, labels):
            others = [o for o in range(len(x)) if o != e]
            for other in others:
                z = net(x[[e, other]])[0]
                flips += int(z.argmax()) != label
                top = torch.topk(z, 2).values
                near += float(top[0] - top[1]) < NEAR_TIE
    pairs = len(examples) * (len(x) - 1)
    reported = json.loads((results / "summary" / "companions.json").read_text())["exact_flip_rate_b2"]
    assert abs(reported - flips / pairs) <= near / pairs + 1e-12
    for k, v in net.state_dict().items():  # batch norm's own buffers moved; the file did not
        if "running" in k:
            assert not torch.equal(v, state[k])
    saved = io.read_weights(path)  # values compared (a count may be stored with shape (1,))
    assert all(np.array_equal(v.numpy().ravel(), saved[f"seed0/{k}"].ravel()) for k, v in state.items())


def test_a_ratio_near_one_gets_the_digits_that_tell_it_from_one():
    from bnstudy.studies.companions.published import ratio_words

    assert ratio_words(0.017, 0.01) == "1.7 times theirs"
    assert ratio_words(0.0064, 0.006) == "1.07 times theirs"
    # a ratio that rounds to 1.00 gets a third decimal, never a claim that the two rates are equal:
    # 45.1% against 45.3% is 0.996 times theirs (the two percentages print apart, and so does the ratio)
    assert ratio_words(0.45115, 0.453) == "0.996 times theirs"
    assert ratio_words(0.00602, 0.006) == "1.003 times theirs"
    assert ratio_words(0.0060001, 0.006) == "within 0.1\\% of theirs"  # 1.000 at three decimals
    assert ratio_words(0.006, 0.006) == "the same as theirs"
    for ours in (0.45115, 0.00602, 0.0060001, 0.006, 0.0064, 0.0055):
        assert "1.00 times" not in ratio_words(ours, 0.006 if ours < 0.1 else 0.453)
    assert ratio_words(0.1, 0.0) == "theirs zero"
