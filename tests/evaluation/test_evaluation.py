"""Study 2's evaluation: accuracy in both modes, test batches, divergence, summary keys.

Each function is checked against an independent computation: PyTorch (the plain
``nn.Sequential`` and :mod:`bnstudy.nets.torchnet`, float32 with the tolerance stated, or
float64), or values worked out by hand on a tiny two-model stack.
"""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from bnstudy.base import normalisers
from bnstudy.base.runtime import STREAM_EVAL_BATCHES, derive_seed
from bnstudy.evaluation import accuracy, means
from bnstudy.evaluation.distance import distances
from bnstudy.nets import model as mlp
from bnstudy.nets import torchnet
from bnstudy.nets.model import NetSpec
from bnstudy.studies.batch_size import estimates, evaluation

SPEC = NetSpec("batchnorm", widths=(64, 12, 10, 10))
ROOT = Path(__file__).resolve().parents[2]


def _data(n=37, seed=1):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 64)).astype(np.float32), np.arange(n) % 10


def _stack(spec=SPEC, seeds=(0, 1, 2)):
    """A stack whose running statistics moved: three training-mode passes through torchnet."""
    stacked = torchnet.tensors(mlp.initial_stack(spec, list(seeds)))
    x, _ = _data()
    x = torch.from_numpy(x)
    with torch.no_grad():
        for k in range(3):
            torchnet.forward(stacked, spec, x[k * 6 : (k + 1) * 6].expand(len(seeds), -1, -1), train=True, update=True)
    return {k: v.numpy() for k, v in stacked.items()}


def _module(stacked, spec, i):
    net = mlp.build_module(spec)
    net.load_state_dict({k: torch.from_numpy(v) for k, v in mlp.unstack(stacked)[i].items()})
    return net


# ---- test batches -------------------------------------------------------------------


def test_test_batches_score_every_row_exactly_once():
    for n, b in ((37, 4), (36, 4), (5, 2), (899, 64), (7, 7)):
        batches, scored = accuracy.test_batches(n, b, seed=0)
        assert batches.shape == scored.shape and batches.shape[1] == b
        assert batches.dtype == np.int64 and scored.dtype == bool
        assert np.array_equal(np.bincount(batches[scored], minlength=n), np.ones(n, np.int64))
        assert all(len(set(row.tolist())) == b for row in batches)  # no row twice in a batch
        full, rest = divmod(n, b)
        assert scored[:full].all() and scored[full:].sum() == rest


def test_test_batches_follow_the_documented_draws():
    """Batches in the order of one PCG64 permutation; the fill: the first rows of a second one."""
    n, b, seed = 37, 4, 3
    rng = np.random.default_rng(derive_seed(seed, STREAM_EVAL_BATCHES, b))
    perm = rng.permutation(n)
    fill = perm[:36][rng.permutation(36)[:3]]
    batches, scored = accuracy.test_batches(n, b, seed)
    assert np.array_equal(batches[:9].ravel(), perm[:36])
    assert np.array_equal(batches[9], np.concatenate([perm[36:], fill]))
    assert scored[9].tolist() == [True, False, False, False]


def test_test_batches_are_seeded_and_refuse_impossible_sizes():
    a, _ = accuracy.test_batches(37, 4, seed=0)
    b, _ = accuracy.test_batches(37, 4, seed=0)
    c, _ = accuracy.test_batches(37, 4, seed=1)
    assert a.tobytes() == b.tobytes() and not np.array_equal(a, c)
    for n, size in ((3, 4), (5, 1)):
        with pytest.raises(ValueError):
            accuracy.test_batches(n, size, seed=0)


# ---- accuracies against PyTorch ----------------------------------------------------


@pytest.mark.parametrize("kind", normalisers.NAMES)
def test_inference_accuracy_matches_the_plain_module(kind):
    spec = NetSpec(kind, widths=(64, 16, 12, 10), groups=4)
    stacked = _stack(spec)
    x, y = _data()
    acc = accuracy.inference_accuracy(stacked, spec, x, y)
    assert acc.dtype == np.float64 and acc.shape == (3,)
    for i in range(3):
        with torch.no_grad():
            label = _module(stacked, spec, i).eval()(torch.from_numpy(x)).argmax(1).numpy()
        assert acc[i] == np.count_nonzero(label == y) / len(y)


def test_train_mode_logits_match_torchnet_on_the_same_batches_float32():
    """Within 1e-5 of PyTorch's float32 training-mode forward (different summation order)."""
    stacked = _stack()
    x, _ = _data()
    batches, scored = accuracy.test_batches(len(x), 4, seed=5)
    ours = accuracy.train_mode_logits(stacked, SPEC, x, 4, seed=5)
    with torch.no_grad():
        theirs = torchnet.forward(
            torchnet.tensors(stacked), SPEC, torch.from_numpy(x[batches]).expand(3, -1, -1, -1), train=True
        ).numpy()
    np.testing.assert_allclose(ours[:, batches[scored]], theirs[:, scored], rtol=1e-5, atol=1e-5)
    assert ours.dtype == np.float32 and ours.shape == (3, len(x), 10)


def test_train_mode_accuracy_matches_the_plain_module_on_the_same_batches():
    stacked = _stack()
    x, y = _data()
    acc = accuracy.train_mode_accuracy(stacked, SPEC, x, y, 4, seed=5)
    batches, scored = accuracy.test_batches(len(y), 4, seed=5)
    for i in range(3):
        net = _module(stacked, SPEC, i).train()  # nn.BatchNorm1d in training mode
        correct = 0
        with torch.no_grad():
            for idx, mask in zip(batches, scored):
                correct += int(((net(torch.from_numpy(x[idx])).argmax(1).numpy() == y[idx]) & mask).sum())
        assert acc[i] == correct / len(y)


def test_batchrenorm_training_mode_uses_the_limits():
    spec = NetSpec("batchrenorm", widths=(64, 12, 10, 10))
    stacked = _stack(spec)
    x, y = _data()
    plain = accuracy.train_mode_logits(stacked, spec, x, 37, seed=0, limits=(1.0, 0.0))
    bn = accuracy.train_mode_logits(stacked, NetSpec("batchnorm", widths=spec.widths), x, 37, seed=0)
    assert plain.tobytes() == bn.tobytes()  # rmax 1, dmax 0 is batch norm, bit for bit
    unclipped = accuracy.train_mode_logits(stacked, spec, x, 37, seed=0, limits=(1e9, 1e9))
    inference = (
        torchnet.forward(torchnet.tensors(stacked), spec, torch.from_numpy(x).expand(3, -1, -1), train=False)
        .detach()
        .numpy()
    )
    np.testing.assert_allclose(unclipped, inference, rtol=1e-4, atol=1e-4)  # unclipped r, d: inference
    limited = accuracy.train_mode_logits(stacked, spec, x, 37, seed=0, limits=(1.5, 0.5))
    batches, _ = accuracy.test_batches(37, 37, seed=0)  # one batch: every row, permuted
    with torch.no_grad():
        ref = torchnet.forward(
            torchnet.tensors(stacked),
            spec,
            torch.from_numpy(x[batches[0]]).expand(3, -1, -1),
            train=True,
            limits=(1.5, 0.5),
        ).numpy()
    np.testing.assert_allclose(limited[:, batches[0]], ref, rtol=1e-5, atol=1e-5)
    assert not np.allclose(limited, plain, atol=1e-3) and not np.allclose(limited, unclipped, atol=1e-3)


def test_trained_divergence_against_pytorch_float64():
    stacked = _stack()
    x, y = _data()
    ours = accuracy.trained_divergence(stacked, SPEC, x, y, 4, seed=2)
    batches, scored = accuracy.test_batches(len(y), 4, seed=2)
    s64 = {k: torch.from_numpy(v.astype(np.float64) if v.dtype == np.float32 else v) for k, v in stacked.items()}
    xb = torch.from_numpy(x[batches].astype(np.float64)).expand(3, -1, -1, -1)
    with torch.no_grad():
        train = torchnet.forward(s64, SPEC, xb, train=True).numpy()[:, scored]
        infer = torchnet.forward(s64, SPEC, xb, train=False).numpy()[:, scored]
    rows = batches[scored]
    rmse = np.sqrt(((train - infer) ** 2).mean(axis=(1, 2)))
    np.testing.assert_allclose(ours["train_eval_rmse"], rmse, rtol=1e-5)
    # labels: float64 reference and float32 kernels agree on these rows (no near-ties)
    for key, hits in (
        ("inference_accuracy", infer.argmax(-1) == y[rows]),
        ("train_mode_accuracy", train.argmax(-1) == y[rows]),
        ("label_disagreement", train.argmax(-1) != infer.argmax(-1)),
    ):
        assert np.array_equal(ours[key], hits.sum(1) / len(y)), key
    assert np.array_equal(ours["inference_accuracy"], accuracy.inference_accuracy(stacked, SPEC, x, y))
    assert np.array_equal(ours["train_mode_accuracy"], accuracy.train_mode_accuracy(stacked, SPEC, x, y, 4, 2))


# ---- a tiny two-model stack worked out by hand -----------------------------------------

# Two inputs, two hidden features per layer, two classes; identity Linear layers,
# batch norm with gamma 1, beta 0, running mean 0, variance 1. The output layer adds
# 0.5 to logit 0 (model A) or swaps the features first (model B):
#   A: logits = (h0 + 0.5, h1)  -> label 1 iff h1 > h0 + 0.5
#   B: logits = (h1 + 0.5, h0)  -> label 1 iff h0 > h1 + 0.5
TINY = NetSpec("batchnorm", widths=(2, 2, 2, 2))
TINY_X = np.array([[2.0, 0.0], [0.0, 3.0], [1.0, 4.0], [5.0, 1.0], [3.0, 2.0], [0.5, 6.0]], np.float32)
TINY_Y = np.array([0, 1, 1, 0, 1, 1])


def _tiny_stack():
    eye, swap = np.eye(2, dtype=np.float32), np.array([[0, 1], [1, 0]], np.float32)
    state = {
        "0.weight": eye,
        "0.bias": np.zeros(2, np.float32),
        "3.weight": eye,
        "3.bias": np.zeros(2, np.float32),
        "6.bias": np.array([0.5, 0.0], np.float32),
    }
    for norm in mlp.NORMS:
        state |= {
            f"{norm}.weight": np.ones(2, np.float32),
            f"{norm}.bias": np.zeros(2, np.float32),
            f"{norm}.running_mean": np.zeros(2, np.float32),
            f"{norm}.running_var": np.ones(2, np.float32),
            f"{norm}.num_batches_tracked": np.array(7, np.int64),
        }
    return mlp.stack([state | {"6.weight": eye}, state | {"6.weight": swap}])


def test_tiny_stack_inference_accuracy_by_hand():
    # inference: h = relu(x) / (1 + eps) twice, about x (all x >= 0)
    # A: label 1 iff x1 > x0 + 0.5: rows 1, 2, 5 -> labels 0 1 1 0 0 1; correct 0 1 2 3 5 -> 5/6
    # B: label 1 iff x0 > x1 + 0.5: rows 0, 3, 4 -> labels 1 0 0 1 1 0; correct 4 -> 1/6
    acc = accuracy.inference_accuracy(_tiny_stack(), TINY, TINY_X, TINY_Y)
    assert acc.tolist() == [5 / 6, 1 / 6]


def _tiny_train_outputs(batches):
    """In a batch of two rows each normalised feature is about +1 for the larger row and -1 for
    the smaller; after ReLU about (1, 0), and again at layer 2: h[r, f] = [x[r, f] > x[s, f]]."""
    h = np.zeros_like(TINY_X, dtype=np.float64)
    for r, s in batches:
        h[r], h[s] = TINY_X[r] > TINY_X[s], TINY_X[s] > TINY_X[r]
    return h


def test_tiny_stack_train_mode_and_divergence_by_hand():
    stacked = _tiny_stack()
    batches, scored = accuracy.test_batches(6, 2, seed=0)
    assert scored.all()
    h = _tiny_train_outputs(batches)
    label_a, label_b = (h[:, 1] > h[:, 0] + 0.5), (h[:, 0] > h[:, 1] + 0.5)
    eval_a, eval_b = TINY_X[:, 1] > TINY_X[:, 0] + 0.5, TINY_X[:, 0] > TINY_X[:, 1] + 0.5
    out = accuracy.trained_divergence(stacked, TINY, TINY_X, TINY_Y, 2, seed=0)
    assert out["train_mode_accuracy"].tolist() == [np.mean(label_a == TINY_Y), np.mean(label_b == TINY_Y)]
    assert out["inference_accuracy"].tolist() == [5 / 6, 1 / 6]
    assert out["label_disagreement"].tolist() == [np.mean(label_a != eval_a), np.mean(label_b != eval_b)]
    # logits: A (h0 + 0.5, h1) against (x0 + 0.5, x1); B (h1 + 0.5, h0) against (x1 + 0.5, x0):
    # the same squared differences, so the same RMSE for both models
    rmse = np.sqrt(((h - TINY_X) ** 2).mean())
    np.testing.assert_allclose(out["train_eval_rmse"], [rmse, rmse], rtol=1e-4)
    assert (
        accuracy.train_mode_accuracy(stacked, TINY, TINY_X, TINY_Y, 2, 0).tolist()
        == out["train_mode_accuracy"].tolist()
    )


def test_sum_of_squared_differences_by_hand():
    a = np.array([[[1.0, 2.0], [3.0, 4.0]], [[0.5, 0.0], [0.0, -0.5]]], np.float32)
    b = np.zeros_like(a)
    out = np.empty(2, np.float64)
    accuracy._sum_squared_differences(a, b, out)
    assert out.tolist() == [30.0, 0.5]


# ---- determinism and independence of the models ---------------------------------------


def test_same_call_gives_the_same_bytes_and_a_model_alone_the_same_numbers():
    spec = NetSpec("batchrenorm", widths=(64, 12, 10, 10))
    stacked = _stack(spec)
    x, y = _data()
    first = accuracy.trained_divergence(stacked, spec, x, y, 4, 0, (2.0, 1.0))
    second = accuracy.trained_divergence(stacked, spec, x, y, 4, 0, (2.0, 1.0))
    alone = accuracy.trained_divergence({k: v[1:2] for k, v in stacked.items()}, spec, x, y, 4, 0, (2.0, 1.0))
    for key in first:
        assert first[key].tobytes() == second[key].tobytes(), key
        assert first[key][1:2].tobytes() == alone[key].tobytes(), key
    a = accuracy.train_mode_logits(stacked, spec, x, 4, 0, (2.0, 1.0))
    assert a.tobytes() == accuracy.train_mode_logits(stacked, spec, x, 4, 0, (2.0, 1.0)).tobytes()


def test_evaluation_leaves_the_stack_untouched():
    stacked = _stack()
    before = {k: v.copy() for k, v in stacked.items()}
    x, y = _data()
    accuracy.inference_accuracy(stacked, SPEC, x, y)
    accuracy.train_mode_accuracy(stacked, SPEC, x, y, 2, seed=0)
    accuracy.trained_divergence(stacked, SPEC, x, y, 4, seed=0)
    evaluation.remedy_rows(stacked, SPEC, [0, 1, 2], x, y, x, y, 4, seed=0)
    for k in stacked:
        assert stacked[k].tobytes() == before[k].tobytes(), k


@pytest.mark.slow
def test_evaluation_and_remedies_do_not_import_pytorch():
    src = str(ROOT / "src")
    code = f"import sys; sys.path.insert(0, {src!r}); "
    code += "import bnstudy.studies.batch_size.evaluation, bnstudy.studies.batch_size.remedies; "
    code += "print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


# ---- remedy rows, trained cells -----------------------------------------------------


def test_remedy_rows_give_one_row_per_seed_and_remedy_and_distances_per_layer():
    stacked = _stack()
    x, y = _data()
    acc, dist = evaluation.remedy_rows(stacked, SPEC, [10, 11, 12], x, y, x, y, 4, seed=0)
    assert sorted({r["mode"] for r in acc}) == ["cumulative", "debiased_ema", "exact", "precise_bn"]
    assert len(acc) == 4 * 3 and {r["seed"] for r in acc} == {10, 11, 12}
    assert len(dist) == 5 * 3 * 2  # (ema + 4 remedies) x seeds x layers
    assert {r["statistics"] for r in dist} == {"ema", "debiased_ema", "cumulative", "precise_bn", "exact"}
    assert set(dist[0]) == {"seed", "statistics", "layer", "mean_distance", "var_distance"}
    assert set(acc[0]) == {"seed", "mode", "accuracy"}


def test_remedy_rows_accuracy_is_the_plain_module_with_the_replaced_statistics():
    from bnstudy.studies.batch_size import remedies

    stacked = _stack()
    x, y = _data()
    acc, _ = evaluation.remedy_rows(stacked, SPEC, [0, 1, 2], x, y, x, y, 4, seed=0)
    stats = remedies.all_statistics(stacked, SPEC, x, y, 4, 0)
    for row in acc:
        i = row["seed"]
        net = _module(stacked, SPEC, i).eval()
        for layer, (mean, var) in stats[row["mode"]].items():
            net[int(layer)].running_mean.copy_(torch.from_numpy(mean[i]))
            net[int(layer)].running_var.copy_(torch.from_numpy(var[i]))
        with torch.no_grad():
            label = net(torch.from_numpy(x)).argmax(1).numpy()
        assert row["accuracy"] == np.count_nonzero(label == y) / len(y), row


def test_load_trained_reads_numpy_and_the_final_renorm_limits(tmp_path):
    from bnstudy.nets.recipe import Recipe, renorm_schedule

    spec = NetSpec("batchrenorm", widths=(64, 12, 10, 10))
    stacked = _stack(spec, seeds=(0, 1))
    recipe = Recipe(batch_size=4, epochs=3)
    from bnstudy.nets import weights

    states = mlp.unstack(stacked)
    paths = [tmp_path / "seeds0-0.safetensors", tmp_path / "seeds1-1.safetensors"]
    for i, (path, state) in enumerate(zip(paths, states)):
        weights.write(path, spec, recipe, [i], [state])
    x, y = _data()
    for name, array in (("x", x), ("y", y), ("y_train", np.arange(50))):
        np.save(tmp_path / f"{name}.npy", array)
    cell = accuracy.load_trained(paths, tmp_path / "x.npy", tmp_path / "y.npy", tmp_path / "y_train.npy")
    assert isinstance(cell.x, np.ndarray) and isinstance(cell.y, np.ndarray) and cell.spec == spec
    assert [m["seed"] for m in cell.metas] == ["0", "1"]
    assert np.array_equal(cell.x, x) and np.array_equal(cell.y, y)
    assert cell.limits == renorm_schedule("batchrenorm", recipe, 50).final
    # (io.write_weights currently stores a 0-d num_batches_tracked as shape [1]: compare values)
    assert all(np.array_equal(cell.stacked[k].reshape(2, -1), stacked[k].reshape(2, -1)) for k in stacked)


# ---- summaries ------------------------------------------------------------------------


def test_summary_json_has_the_issue_keys():
    summary = pd.DataFrame(
        [
            {
                "normaliser": n,
                "batch_size": 4,
                "mode": m,
                "seeds": 3,
                "mean": 0.9,
                "sd": 0.01,
                "ci_low": 0.88,
                "ci_high": 0.92,
            }
            for n, modes in (
                ("none", ("inference", "training")),
                ("batchnorm", ("inference", "training", "precise_bn", "debiased_ema")),
            )
            for m in modes
        ]
    )
    out = estimates.summary_json(summary)
    for n in ("none", "batchnorm"):
        assert {"inference_accuracy", "inference_ci", "train_mode_accuracy"} <= set(out[n]["4"])
    assert {"precise_bn_accuracy", "debiased_ema_accuracy"} <= set(out["batchnorm"]["4"])
    assert out["batchnorm"]["4"]["inference_ci"] == [0.88, 0.92]


def test_gain_interval_matches_scipy_welch():
    from scipy import stats

    a, b = [0.97, 0.975, 0.968, 0.972, 0.979], [0.969, 0.971, 0.965, 0.974, 0.970]
    diff, lo, hi = evaluation.gain_interval(a, b, 0.95)
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert diff == pytest.approx(sum(a) / 5 - sum(b) / 5)
    assert (lo, hi) == pytest.approx((ci.low, ci.high))
    assert all(np.isnan(evaluation.gain_interval([0.9], [0.8, 0.7])[1:]))


def test_gain_interval_by_hand():
    # means 2 and 1; unbiased variances 1 and 1: se = sqrt(1/3 + 1/3); Welch df = (2/3)**2 / (2 * (1/3)**2 / 2) = 4
    from scipy import stats

    diff, lo, hi = evaluation.gain_interval([1.0, 2.0, 3.0], [0.0, 1.0, 2.0], 0.95)
    half = stats.t.ppf(0.975, 4) * np.sqrt(2 / 3)
    assert diff == 1.0
    assert (lo, hi) == pytest.approx((1 - half, 1 + half), rel=1e-12)
    assert evaluation.gain_interval([0.5, 0.5], [0.25, 0.25]) == (0.25, 0.25, 0.25)


def test_mean_in_order_adds_in_the_given_order():
    assert means.mean_in_order([1.0, 2.0, 4.0]) == 7 / 3
    # in order: (1e16 + 1) + 1 = 1e16 (each 1 is lost), then -1e16 gives 0; another order would not
    assert means.mean_in_order([1e16, 1.0, 1.0, -1e16]) == 0.0
    assert means.mean_in_order([1.0, 1.0, 1e16, -1e16]) == 0.5  # 1 + 1 first: 2 + 1e16 is exact
    with pytest.raises(ValueError):
        means.mean_in_order([])


def test_correct_rows_by_hand():
    rows = accuracy.correct_rows(np.array([[True, False, True], [False, False, True]]), [7, 9], "exact")
    assert rows == [
        {"seed": 7, "mode": "exact", "row": 0, "correct": 1},
        {"seed": 7, "mode": "exact", "row": 1, "correct": 0},
        {"seed": 7, "mode": "exact", "row": 2, "correct": 1},
        {"seed": 9, "mode": "exact", "row": 0, "correct": 0},
        {"seed": 9, "mode": "exact", "row": 1, "correct": 0},
        {"seed": 9, "mode": "exact", "row": 2, "correct": 1},
    ]
    assert all(type(r["seed"]) is int and type(r["correct"]) is int for r in rows)


def test_remedy_rows_extend_correct_with_every_row_of_every_remedy_and_seed():
    stacked = _stack()
    x, y = _data()
    correct = [{"seed": -1}]  # extended, not replaced
    acc, _ = evaluation.remedy_rows(stacked, SPEC, [10, 11, 12], x, y, x, y, 4, seed=0, correct=correct)
    assert correct[0] == {"seed": -1}
    table = pd.DataFrame(correct[1:])
    assert len(table) == 4 * 3 * len(y)
    for row in acc:
        rows = table[(table["mode"] == row["mode"]) & (table["seed"] == row["seed"])]
        assert rows["row"].tolist() == list(range(len(y)))
        assert rows["correct"].sum() / len(y) == row["accuracy"]


def test_remedy_rows_pass_the_last_batch_policy_on():
    from bnstudy.studies.batch_size import remedies

    stacked = _stack()
    x, y = _data()  # 37 rows in batches of 5: two leftover rows to keep or drop
    for policy in ("keep", "drop"):
        _, dist = evaluation.remedy_rows(stacked, SPEC, [0, 1, 2], x, y, x, y, 5, seed=0, last_batch=policy)
        stats = remedies.all_statistics(stacked, SPEC, x, y, 5, 0, policy)
        want = distances(stats["cumulative"], stats["exact"], SPEC.eps)
        got = [r for r in dist if r["statistics"] == "cumulative"]
        assert [(r["mean_distance"], r["var_distance"]) for r in got] == [
            (r["mean_distance"], r["var_distance"]) for r in want
        ]
    keep = evaluation.remedy_rows(stacked, SPEC, [0, 1, 2], x, y, x, y, 5, seed=0, last_batch="keep")[1]
    drop = evaluation.remedy_rows(stacked, SPEC, [0, 1, 2], x, y, x, y, 5, seed=0)[1]
    assert [r["mean_distance"] for r in keep if r["statistics"] == "cumulative"] != [
        r["mean_distance"] for r in drop if r["statistics"] == "cumulative"
    ]


def test_labels_are_int64_row_indices():
    z = np.array([[[0.1, 0.9, 0.9], [2.0, -1.0, 0.0]]], np.float32)
    out = accuracy.labels(z)
    assert out.dtype == np.int64 and out.tolist() == [[1, 0]]  # the first largest logit


def test_refusals_name_what_was_given():
    with pytest.raises(ValueError, match=r"2 <= batch_size <= n rows; got 1 for 5"):
        accuracy.test_batches(5, 1, seed=0)
    with pytest.raises(ValueError, match=r"non-empty 1-D sequence, got shape \(0,\)"):
        means.mean_in_order([])


def test_training_mode_accuracy_and_divergence_pass_batch_renorms_limits_on():
    spec = NetSpec("batchrenorm", widths=(64, 12, 10, 10))
    stacked = _stack(spec)
    x, y = _data()
    limits = (1.5, 0.5)
    z = accuracy.train_mode_logits(stacked, spec, x, 5, seed=0, limits=limits)
    want = accuracy.share(accuracy.labels(z) == y[None, :])
    default = accuracy.share(accuracy.labels(accuracy.train_mode_logits(stacked, spec, x, 5, seed=0)) == y)
    assert not np.array_equal(want, default)  # the limits change some label, so passing them on shows
    assert accuracy.train_mode_accuracy(stacked, spec, x, y, 5, seed=0, limits=limits).tolist() == want.tolist()
    div = accuracy.trained_divergence(stacked, spec, x, y, 5, seed=0, limits=limits)
    assert div["train_mode_accuracy"].tolist() == want.tolist()


def test_remedy_distances_use_the_networks_eps():
    from dataclasses import replace

    from bnstudy.studies.batch_size import remedies

    spec = replace(SPEC, eps=0.5)  # far from the default: the variance distance moves with it
    stacked = _stack()
    x, y = _data()
    _, dist = evaluation.remedy_rows(stacked, spec, [0, 1, 2], x, y, x, y, 5, seed=0)
    stats = remedies.all_statistics(stacked, spec, x, y, 5, 0, "drop")
    want = distances(stats["cumulative"], stats["exact"], 0.5)
    other = distances(stats["cumulative"], stats["exact"], SPEC.eps)
    got = [r["var_distance"] for r in dist if r["statistics"] == "cumulative"]
    assert got == [r["var_distance"] for r in want] != [r["var_distance"] for r in other]
