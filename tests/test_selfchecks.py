"""The four self-checks pass on shuffled and on sorted data, while the train/inference
divergence grows; the differential check against the reference sees the order."""

import numpy as np
import pytest
import torch

from bnstudy import selfchecks as sc
from bnstudy.data import synthetic_population
from bnstudy.running_stats import pass_batches


@pytest.fixture(scope="module")
def x():
    return synthetic_population(0, 512, 16)


@pytest.fixture(scope="module")
def results(x):
    return {(order, b): sc.run(x, pass_batches(x, b, order, 0), keep=0.9)
            for order in ("shuffled", "sorted") for b in (8, 32)}


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


class NoCentring(torch.nn.BatchNorm1d):
    """Broken on purpose: forgets to subtract the batch mean in training mode."""

    def forward(self, x):
        y = super().forward(x)
        return y + (x.mean(0) / torch.sqrt(x.var(0, unbiased=False) + self.eps) if self.training else 0)


class NoisyInference(torch.nn.BatchNorm1d):
    """Broken on purpose: inference output is not a function of the input alone."""

    def forward(self, x):
        return super().forward(x) + (0 if self.training else 1e-3 * torch.rand_like(x))


class Flattening(torch.nn.BatchNorm1d):
    """Broken on purpose: inference output is flattened."""

    def forward(self, x):
        return super().forward(x).reshape(-1) if not self.training else super().forward(x)


@pytest.mark.parametrize("broken, check", [(NoCentring, "train_mean"), (NoisyInference, "inference_repeatable"),
                                           (Flattening, "shape")])
def test_self_checks_can_fail(x, broken, check):
    torch.manual_seed(0)
    bn = broken(x.shape[1], eps=1e-5, momentum=0.1)
    result = sc.run(x, pass_batches(x, 32, "shuffled", 0), keep=0.9, bn=bn)
    assert not result[f"{check}_pass"]


def test_table_has_one_row_per_order_and_batch_size(x):
    rows = sc.table(x, [16, 64], 0.9, 0)
    assert [(r["order"], r["batch_size"]) for r in rows] == [
        ("shuffled", 16), ("sorted", 16), ("shuffled", 64), ("sorted", 64)]
    assert all(np.isfinite(r["train_eval_rmse"]) for r in rows)
