"""Conformance of PyTorch's BatchNorm1d with the NumPy reference, semantic by semantic,
and proof that the conformance check fails when a semantic is broken on purpose."""

import numpy as np
import pytest
import torch

from bnstudy.nets import reference
from bnstudy.nets.reference import BatchNorm1dReference, BatchOfOneError, conformance


@pytest.fixture(scope="module")
def verdicts():
    return conformance(BatchNorm1dReference)


@pytest.mark.parametrize("semantic", reference.SEMANTICS)
def test_pytorch_conforms_to_reference(verdicts, semantic):
    assert verdicts[semantic], f"PyTorch and the reference disagree on {semantic}"


# ---- deliberately broken references: each must be caught by its semantic ----------
class BiasedRunningVar(BatchNorm1dReference):
    def running_update(self, mean, var, n):
        factor = self.update_factor()
        self.running_mean = (1 - factor) * self.running_mean + factor * mean
        self.running_var = (1 - factor) * self.running_var + factor * var  # biased: wrong
        self.num_batches_tracked += 1


class KeepMistakenForMomentum(BatchNorm1dReference):
    def update_factor(self):
        return 1.0 / (self.num_batches_tracked + 1) if self.momentum is None else 1.0 - self.momentum


class EpsOutsideSqrt(BatchNorm1dReference):
    def train_forward(self, x, update=True):
        x = np.asarray(x, float)
        if len(x) < 2:  # refuses a batch of one like the reference: only eps is broken
            raise BatchOfOneError(f"batch statistics need more than 1 value per feature, got {len(x)} row")
        mean, var = reference.batch_moments(x)
        if update:
            self.running_update(mean, var, len(x))
        return self.gamma * (x - mean) / (np.sqrt(var) + self.eps) + self.beta


class MomentumNoneAsDefault(BatchNorm1dReference):
    def update_factor(self):
        return 0.1 if self.momentum is None else self.momentum


class InferenceWithBatchStatistics(BatchNorm1dReference):
    def eval_forward(self, x):
        mean, var = reference.batch_moments(np.asarray(x, float))
        return reference.normalise_with(x, mean, var, self.eps, self.gamma, self.beta)


class AcceptsBatchOfOne(BatchNorm1dReference):
    def train_forward(self, x, update=True):
        x = np.asarray(x, float)
        if len(x) == 1:
            return np.broadcast_to(self.beta, x.shape).copy()
        return super().train_forward(x, update)


class NoBeta(BatchNorm1dReference):
    def train_forward(self, x, update=True):
        return super().train_forward(x, update) - self.beta


# Each broken reference, the semantic it breaks, and every scenario that must then
# disagree with PyTorch: the broken semantic itself and the scenarios built on it
# (the eps and inference scenarios read running statistics after updates, so a
# wrong update shows there too). Every other scenario must still agree.
BROKEN = [
    (
        BiasedRunningVar,
        "running_update_unbiased",
        {"running_update_unbiased", "inference_forward", "eps", "momentum_none"},
    ),
    (KeepMistakenForMomentum, "running_update_unbiased", {"running_update_unbiased", "inference_forward", "eps"}),
    (EpsOutsideSqrt, "eps", {"eps", "training_forward"}),
    (MomentumNoneAsDefault, "momentum_none", {"momentum_none"}),
    (InferenceWithBatchStatistics, "inference_forward", {"inference_forward", "eps"}),
    (AcceptsBatchOfOne, "batch_of_one_error", {"batch_of_one_error"}),
    (NoBeta, "training_forward", {"training_forward", "eps"}),
]


@pytest.mark.parametrize("broken, semantic, failing", BROKEN, ids=[b.__name__ for b, _, _ in BROKEN])
def test_conformance_check_detects_broken_semantic(broken, semantic, failing):
    # Detected means: the check of that semantic ran and found a disagreement, and the
    # checks the break cannot touch still agree (a crash would propagate, not pass).
    verdicts = conformance(broken)
    assert semantic in failing
    assert {s for s, ok in verdicts.items() if not ok} == failing, verdicts


class CrashesInTraining(BatchNorm1dReference):
    def train_forward(self, x, update=True):
        raise RuntimeError("not implemented")


class CrashesOnBatchOfOne(BatchNorm1dReference):
    def train_forward(self, x, update=True):
        if len(x) == 1:
            raise TypeError("cannot handle one row")  # a crash, not a refusal
        return super().train_forward(x, update)


class RefusesEveryBatch(BatchNorm1dReference):
    def train_forward(self, x, update=True):
        raise ValueError("refuses everything")


@pytest.mark.parametrize(
    "broken, error",
    [(CrashesInTraining, RuntimeError), (CrashesOnBatchOfOne, TypeError), (RefusesEveryBatch, ValueError)],
    ids=["crash", "crash_on_batch_of_one", "value_error_outside_batch_of_one"],
)
def test_a_crashing_implementation_raises_instead_of_reading_as_nonconforming(broken, error):
    # Only a ValueError in the batch-of-one scenario is an answer (a refusal); every
    # other exception reaches the caller, so a crash can never pass a negative test.
    with pytest.raises(error):
        conformance(broken)


def test_biased_running_variance_leaves_training_output_untouched_yet_is_caught():
    # The classic silent bug: training outputs agree, only the running update differs.
    verdicts = conformance(BiasedRunningVar)
    assert verdicts["training_forward"]
    assert not verdicts["running_update_unbiased"]


# ---- small facts ------------------------------------------------------------------
@pytest.mark.parametrize("impl", ["torch", "reference"])
def test_batch_of_two_normalises_to_minus_one_and_plus_one(impl):
    rng = np.random.default_rng(7)
    x = rng.normal(3.0, 5.0, size=(2, 6))
    if impl == "torch":
        layer = torch.nn.BatchNorm1d(6, eps=1e-300).double().train()  # PyTorch needs eps > 0
        with torch.no_grad():
            y = layer(torch.from_numpy(x)).numpy()
    else:
        y = BatchNorm1dReference(6, eps=1e-300).train_forward(x)
    np.testing.assert_allclose(np.abs(y), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(np.sign(y), np.sign(x - x.mean(0)))


@pytest.mark.parametrize("impl", ["torch", "reference"])
def test_two_four_four_six_normalises_to_about_minus_root_two_zero_zero_root_two(impl):
    x = np.array([[2.0], [4.0], [4.0], [6.0]])
    if impl == "torch":
        with torch.no_grad():
            y = torch.nn.BatchNorm1d(1).double().train()(torch.from_numpy(x)).numpy()
    else:
        y = BatchNorm1dReference(1).train_forward(x)
    np.testing.assert_allclose(y[:, 0], [-1.41421, 0.0, 0.0, 1.41421], atol=1e-5)


def test_reference_refuses_batch_of_one():
    with pytest.raises(BatchOfOneError):
        BatchNorm1dReference(3).train_forward(np.ones((1, 3)))


def test_momentum_none_is_plain_average_of_batch_statistics():
    batches = [np.random.default_rng(i).normal(size=(n, 2)) for i, n in enumerate([3, 5, 4])]
    ref = BatchNorm1dReference(2, momentum=None)
    for x in batches:
        ref.train_forward(x)
    np.testing.assert_allclose(ref.running_mean, np.mean([x.mean(0) for x in batches], axis=0))
    np.testing.assert_allclose(ref.running_var, np.mean([x.var(0, ddof=1) for x in batches], axis=0))
