"""The four self-checks pass on shuffled and on sorted data, while the train/inference
divergence grows; the differential check against the reference sees the order."""

import numpy as np
import pytest
import torch

from bnstudy.compiled.layer import BatchNorm1d
from bnstudy.compiled.reductions import column_moments
from bnstudy.nets.data import synthetic_population
from bnstudy.studies.running_stats import selfchecks as sc
from bnstudy.studies.running_stats.science import pass_batches


@pytest.fixture(scope="module")
def x():
    return synthetic_population(0, 512, 16)


@pytest.fixture(scope="module")
def results(x):
    return {
        (order, b): sc.run(x, pass_batches(x, b, order, 0), keep=0.9)
        for order in ("shuffled", "sorted")
        for b in (8, 32)
    }


@pytest.mark.parametrize("order", ["shuffled", "sorted"])
@pytest.mark.parametrize("b", [8, 32])
@pytest.mark.parametrize("check", sc.CHECKS)
def test_self_check_passes_in_both_orders(results, order, b, check):
    assert results[(order, b)][f"{check}_pass"], results[(order, b)][check]


def test_divergence_doubles_when_sorted_though_self_checks_pass(results):
    for b in (8, 32):
        assert sc.self_checks_pass(results[("sorted", b)])
        assert results[("sorted", b)]["train_eval_rmse"] > 2 * results[("shuffled", b)]["train_eval_rmse"]


def test_differential_check_against_reference_sees_the_order(results):
    assert results[("shuffled", 8)]["differential_pass"]
    assert not results[("sorted", 8)]["differential_pass"]


class NoCentring(BatchNorm1d):
    """Broken on purpose: forgets to subtract the batch mean in training mode."""

    def forward(self, x):
        y = super().forward(x)
        if not self.training:
            return y
        mean, var = column_moments(x)
        return y + (mean / np.sqrt(var + self.eps)).astype(y.dtype)


class NoisyInference(BatchNorm1d):
    """Broken on purpose: inference output is not a function of the input alone."""

    rng = np.random.default_rng(0)

    def forward(self, x):
        y = super().forward(x)
        return y if self.training else y + (1e-3 * self.rng.random(y.shape)).astype(y.dtype)


class Flattening(BatchNorm1d):
    """Broken on purpose: inference output is flattened."""

    def forward(self, x):
        y = super().forward(x)
        return y if self.training else y.reshape(-1)


@pytest.mark.parametrize(
    "broken, check", [(NoCentring, "train_mean"), (NoisyInference, "inference_repeatable"), (Flattening, "shape")]
)
def test_self_checks_can_fail(x, broken, check):
    bn = broken(x.shape[1], eps=1e-5, momentum=0.1, dtype=np.float32)
    result = sc.run(x, pass_batches(x, 32, "shuffled", 0), keep=0.9, bn=bn)
    assert not result[f"{check}_pass"]
    assert all(result[f"{c}_pass"] for c in sc.CHECKS if c != check)  # only the broken check fails


# ---- the layer under test is the package's float32 kernel; PyTorch's layer agrees -------
# Stated tolerance of PyTorch's float32 layer against ours (both round in float32, in
# different orders): training outputs within TORCH_ATOL times the batch's amplification
# max(1, max|x| / sigma_batch) per feature (a narrow batch far from 0, as sorting makes,
# amplifies the rounding of its inputs by that factor; measured worst: 4e-7), inference
# outputs within TORCH_ATOL times max(1, max|x| / sigma_running), running statistics
# within TORCH_RTOL relative.
TORCH_ATOL = 1e-5
TORCH_RTOL = 1e-5


def amplification(x, var):
    return np.maximum(1.0, np.abs(x.astype(np.float64)).max(0) / np.sqrt(var.astype(np.float64) + 1e-5))


class TorchLayer:
    """``torch.nn.BatchNorm1d`` (float32) behind the array interface :func:`selfchecks.run` uses."""

    def __init__(self, features, keep):
        self.module = torch.nn.BatchNorm1d(features, eps=1e-5, momentum=1.0 - keep)
        self.weight = self.module.weight.detach().numpy()
        self.bias = self.module.bias.detach().numpy()
        self.eps = self.module.eps

    def train(self):
        self.module.train()

    def eval(self):
        self.module.eval()

    def __call__(self, x):
        with torch.no_grad():
            return self.module(torch.from_numpy(np.ascontiguousarray(x, np.float32))).numpy()


def test_layer_under_test_is_float32_package_layer(x):
    bn = sc.layer(x.shape[1], 0.9)
    assert isinstance(bn, BatchNorm1d) and bn.dtype == np.float32
    assert bn(x[:8]).dtype == np.float32


@pytest.mark.parametrize("order", ["shuffled", "sorted"])
@pytest.mark.parametrize("b", [2, 8, 256])
def test_torch_batchnorm1d_float32_agrees_with_the_layer_on_the_same_pass(x, order, b):
    batches = pass_batches(x, b, order, 0)
    ours, theirs = sc.layer(x.shape[1], 0.9), TorchLayer(x.shape[1], 0.9)
    xt = x.astype(np.float32)
    for rows in batches:
        xb = xt[rows]
        gap = np.abs(ours(xb).astype(np.float64) - theirs(xb))
        assert np.all(gap <= TORCH_ATOL * amplification(xb, xb.astype(np.float64).var(0)))
    np.testing.assert_allclose(ours.running_mean, theirs.module.running_mean.numpy(), rtol=TORCH_RTOL, atol=1e-6)
    np.testing.assert_allclose(ours.running_var, theirs.module.running_var.numpy(), rtol=TORCH_RTOL)
    ours.eval(), theirs.eval()
    gap = np.abs(ours(xt).astype(np.float64) - theirs(xt))
    assert np.all(gap <= TORCH_ATOL * amplification(xt, ours.running_var))
    # and so the divergence and the differential check read the same on PyTorch's layer
    a = sc.run(x, batches, 0.9)
    t = sc.run(x, batches, 0.9, bn=TorchLayer(x.shape[1], 0.9))
    for key in ("train_eval_rmse", "differential_rmse"):
        assert a[key] == pytest.approx(t[key], rel=1e-5)
    assert a["differential_pass"] == t["differential_pass"]
    if b >= 8:  # the study's batch sizes: every self-check has the same verdict on both layers
        # (at b = 2 train_mean is float32 rounding amplified by narrow pairs, about 1e-4 on
        # both layers, right at MEAN_TOL, so the verdict there is rounding's, not the layer's)
        verdicts = [k for k in a if k.endswith("_pass")]
        assert [a[k] for k in verdicts] == [t[k] for k in verdicts]


def test_same_table_twice_gives_identical_values(x):
    a, b = sc.table(x, [8, 64], 0.9, 0), sc.table(x, [8, 64], 0.9, 0)
    assert [repr(r) for r in a] == [repr(r) for r in b]


def test_checks_measure_the_layer_outputs(x):
    # train_mean and train_var recomputed from the layer's own outputs with NumPy's reductions
    batches = pass_batches(x, 32, "shuffled", 0)
    result = sc.run(x, batches, 0.9)
    bn = sc.layer(x.shape[1], 0.9)
    worst_mean = worst_var = 0.0
    for rows in batches:
        xb = x[rows].astype(np.float32)
        y = bn(xb).astype(np.float64)
        v = xb.astype(np.float64).var(0)
        worst_mean = max(worst_mean, np.abs(y.mean(0)).max())
        worst_var = max(worst_var, np.abs(y.var(0) - v / (v + 1e-5)).max())
    assert result["train_mean"] == pytest.approx(worst_mean, rel=1e-6, abs=1e-12)
    assert result["train_var"] == pytest.approx(worst_var, rel=1e-6, abs=1e-12)


def test_table_has_one_row_per_order_and_batch_size(x):
    rows = sc.table(x, [16, 64], 0.9, 0)
    assert [(r["order"], r["batch_size"]) for r in rows] == [
        ("shuffled", 16),
        ("sorted", 16),
        ("shuffled", 64),
        ("sorted", 64),
    ]
    # each row is that order's and batch size's pass, with the config's keep and seed
    for r in rows:
        expected = sc.run(x, pass_batches(x, r["batch_size"], r["order"], 0), 0.9)
        assert r["keep"] == 0.9
        assert {k: r[k] for k in expected} == expected
    # the divergence recomputed with NumPy: training-mode outputs of the pass against
    # inference-mode outputs after it, RMSE over every row and feature
    batches = pass_batches(x, 16, "sorted", 0)
    bn = sc.layer(x.shape[1], 0.9)
    train_out = np.zeros(x.shape)
    for b_rows in batches:
        train_out[b_rows] = bn(x[b_rows].astype(np.float32))
    seen = np.zeros(len(x), bool)
    seen[np.concatenate(batches)] = True
    inference = bn.eval()(x.astype(np.float32)).astype(np.float64)
    divergence = np.sqrt(np.mean((train_out - inference)[seen] ** 2))
    assert rows[1]["train_eval_rmse"] == pytest.approx(divergence, rel=1e-9)
    assert rows[1]["train_eval_rmse"] > 0.1
