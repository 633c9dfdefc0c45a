"""Study 2's evaluation: accuracy in both modes, test batches, summary keys."""

import pandas as pd
import pytest
import torch

from bnstudy import batch_size
from bnstudy import model as mlp
from bnstudy.model import NetSpec

SPEC = NetSpec("batchnorm", widths=(64, 12, 10, 10))


def _data(n=37):
    g = torch.Generator().manual_seed(1)
    return torch.randn(n, 64, generator=g), torch.arange(n) % 10


def _stack(spec=SPEC, seeds=(0, 1, 2)):
    stacked = mlp.initial_stack(spec, list(seeds))
    x, _ = _data()
    with torch.no_grad():
        for k in range(3):
            mlp.forward(stacked, spec, x[k * 6:(k + 1) * 6].expand(len(seeds), -1, -1), train=True, update=True)
    return stacked


def test_test_batches_score_every_row_exactly_once():
    for n, b in ((37, 4), (36, 4), (5, 2), (899, 64)):
        batches, scored = batch_size.test_batches(n, b, seed=0)
        assert batches.shape == scored.shape and batches.shape[1] == b
        counts = torch.bincount(batches[scored], minlength=n)
        assert torch.equal(counts, torch.ones(n, dtype=torch.long))
        assert all(len(set(row.tolist())) == b for row in batches)  # no row twice in a batch


def test_test_batches_are_seeded():
    a, _ = batch_size.test_batches(37, 4, seed=0)
    b, _ = batch_size.test_batches(37, 4, seed=0)
    c, _ = batch_size.test_batches(37, 4, seed=1)
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_inference_accuracy_matches_the_plain_module():
    stacked = _stack()
    x, y = _data()
    acc = batch_size.inference_accuracy(stacked, SPEC, x, y)
    for i, state in enumerate(mlp.unstack(stacked)):
        net = mlp.build_module(SPEC)
        net.load_state_dict(state)
        with torch.no_grad():
            expected = (net.eval()(x).argmax(1) == y).double().mean()
        assert float(acc[i]) == float(expected)


def test_train_mode_accuracy_matches_the_plain_module_on_the_same_batches():
    stacked = _stack()
    x, y = _data()
    acc = batch_size.train_mode_accuracy(stacked, SPEC, x, y, 4, seed=5)
    batches, scored = batch_size.test_batches(len(y), 4, seed=5)
    for i, state in enumerate(mlp.unstack(stacked)):
        net = mlp.build_module(SPEC)
        net.load_state_dict(state)
        net.train()
        correct = 0
        with torch.no_grad():
            for idx, mask in zip(batches, scored):
                correct += int(((net(x[idx]).argmax(1) == y[idx]) & mask).sum())
        assert abs(float(acc[i]) - correct / len(y)) < 1e-12


def test_evaluation_leaves_running_statistics_untouched():
    stacked = _stack()
    before = {k: v.clone() for k, v in stacked.items()}
    x, y = _data()
    batch_size.inference_accuracy(stacked, SPEC, x, y)
    batch_size.train_mode_accuracy(stacked, SPEC, x, y, 2, seed=0)
    batch_size.remedy_rows(stacked, SPEC, [0, 1, 2], x, y, x, y, 4, seed=0)
    for k in stacked:
        assert torch.equal(stacked[k], before[k]), k


def test_batchrenorm_training_mode_uses_the_limits():
    spec = NetSpec("batchrenorm", widths=(64, 12, 10, 10))
    stacked = _stack(spec)
    x, y = _data()
    plain = batch_size.train_mode_accuracy(stacked, spec, x, y, 37, seed=0, limits=(1.0, 0.0))
    unclipped = batch_size.train_mode_accuracy(stacked, spec, x, y, 37, seed=0, limits=(1e9, 1e9))
    inference = batch_size.inference_accuracy(stacked, spec, x, y)
    bn = batch_size.train_mode_accuracy(stacked, NetSpec("batchnorm", widths=spec.widths), x, y, 37, seed=0)
    assert torch.equal(plain, bn)  # rmax 1, dmax 0 is batch norm
    torch.testing.assert_close(unclipped, inference)  # unclipped r, d give the inference function


def test_remedy_rows_give_one_row_per_seed_and_remedy_and_distances_per_layer():
    stacked = _stack()
    x, y = _data()
    acc, dist = batch_size.remedy_rows(stacked, SPEC, [0, 1, 2], x, y, x, y, 4, seed=0)
    assert sorted({r["mode"] for r in acc}) == ["cumulative", "debiased_ema", "exact", "precise_bn"]
    assert len(acc) == 4 * 3
    assert len(dist) == 5 * 3 * 2  # (ema + 4 remedies) x seeds x layers
    exact = [r for r in dist if r["statistics"] == "exact"]
    assert all(r["mean_distance"] == 0 for r in exact)


def test_summary_json_has_the_issue_keys():
    summary = pd.DataFrame([
        {"normaliser": n, "batch_size": 4, "mode": m, "seeds": 3, "mean": 0.9, "sd": 0.01,
         "ci_low": 0.88, "ci_high": 0.92}
        for n, modes in (("none", ("inference", "training")),
                         ("batchnorm", ("inference", "training", "precise_bn", "debiased_ema")))
        for m in modes
    ])
    out = batch_size.summary_json(summary)
    for n in ("none", "batchnorm"):
        assert {"inference_accuracy", "inference_ci", "train_mode_accuracy"} <= set(out[n]["4"])
    assert {"precise_bn_accuracy", "debiased_ema_accuracy"} <= set(out["batchnorm"]["4"])
    assert out["batchnorm"]["4"]["inference_ci"] == [0.88, 0.92]


def test_gain_interval_matches_scipy_welch():
    from scipy import stats

    a, b = [0.97, 0.975, 0.968, 0.972, 0.979], [0.969, 0.971, 0.965, 0.974, 0.970]
    diff, lo, hi = batch_size.gain_interval(a, b, 0.95)
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert diff == pytest.approx(sum(a) / 5 - sum(b) / 5)
    assert (lo, hi) == pytest.approx((ci.low, ci.high))
