"""The probes' compiled kernel: the same bits as the network's kernels, whatever the chunking."""

from __future__ import annotations

import numpy as np
import pytest

from bnstudy.base import normalisers
from bnstudy.compiled import kernels
from bnstudy.compiled.probes import Prober
from bnstudy.nets import data
from bnstudy.nets import model as mlp
from bnstudy.nets.model import NetSpec

NORMALISERS = normalisers.NAMES
LIMITS = {"batchrenorm": (2.0, 0.5)}
SETTINGS = dict(virtual_batch=5)  # ghost batch norm: batches of 16 in virtual batches of 5, 5 and 6


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint32)


@pytest.fixture(scope="module")
def x_test():
    return data.split_digits(0).x_test


def network(norm: str, seeds=(0, 1, 2)) -> dict:
    """Initial weights with normaliser parameters and running statistics far from their defaults,
    so that batch statistics, renorm's clipping and the affine parameters all matter."""
    stacked = mlp.initial_stack(NetSpec(norm, **SETTINGS), list(seeds))
    rng = np.random.default_rng(7)
    for key, value in stacked.items():
        if key.endswith(".weight") and key[0] in mlp.NORMS:
            stacked[key] = (0.5 + rng.random(value.shape)).astype(np.float32)
        elif key.endswith(".bias") and key[0] in mlp.NORMS:
            stacked[key] = (0.3 * rng.random(value.shape) - 0.1).astype(np.float32)
        elif key.endswith("running_mean"):
            stacked[key] = (0.3 * rng.random(value.shape) - 0.15).astype(np.float32)
        elif key.endswith("running_var"):
            stacked[key] = (0.2 + rng.random(value.shape)).astype(np.float32)
    return stacked


def batches_of(n: int, b: int, k: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(n)[:b] for _ in range(k)])


# ---- probes: the label kernels.logits gives row 0 of each batch --------------------------


@pytest.mark.parametrize("norm", NORMALISERS)
@pytest.mark.parametrize("b", [2, 3, 16, 64])
def test_probe_logits_and_labels_are_kernels_logits_of_row_zero_bit_for_bit(x_test, norm, b):
    stacked, spec, limits = network(norm), NetSpec(norm, **SETTINGS), LIMITS.get(norm, (1.0, 0.0))
    batches = batches_of(len(x_test), b, 37, seed=b)
    labels, z = Prober(stacked, spec, x_test, limits, rows=50).labels(batches, logits=True)  # several chunks
    full = kernels.logits(stacked, spec, x_test[batches.ravel()], train=True, batch=b, limits=limits)
    row0 = full.reshape(len(stacked["0.weight"]), len(batches), b, -1)[:, :, 0]
    assert np.array_equal(_bits(z), _bits(row0))
    assert np.array_equal(labels, row0.argmax(-1))


ROW_WISE = [n for n in NORMALISERS if n not in normalisers.BATCH_NAMES]


@pytest.mark.parametrize("norm", ROW_WISE)
def test_a_row_wise_normaliser_is_probed_once_per_distinct_row_zero_with_its_batches_bits(x_test, norm):
    """Without batch statistics row 0 alone decides its label: the prober computes each distinct
    row 0 once and gives it to each of its batches, the same bits as every batch computed whole."""
    assert ROW_WISE and "batchnorm" not in ROW_WISE
    stacked, spec = network(norm), NetSpec(norm, **SETTINGS)
    prober = Prober(stacked, spec, x_test, rows=50)
    for b in (2, 5, 64):
        batches = batches_of(len(x_test), b, 41, seed=b)
        batches[::3, 0] = batches[0, 0]  # one row 0 in many batches, beside other companions
        labels, z = prober.labels(batches, logits=True)
        whole_labels, whole_z = prober._probe(np.ascontiguousarray(batches), True)
        assert np.array_equal(labels, whole_labels) and np.array_equal(_bits(z), _bits(whole_z)), (norm, b)
        assert np.array_equal(prober.labels(batches), whole_labels)


@pytest.mark.parametrize("norm", ["batchnorm", "batchrenorm", "groupnorm", "ghostbatchnorm"])
def test_labels_do_not_depend_on_how_batches_are_chunked(x_test, norm):
    stacked, spec, limits = network(norm), NetSpec(norm, **SETTINGS), LIMITS.get(norm, (1.0, 0.0))
    for b in (2, 5, 64):
        batches = batches_of(len(x_test), b, 41, seed=b)
        results = [
            Prober(stacked, spec, x_test, limits, rows=rows).labels(batches, logits=True)
            for rows in (1, 7, 256, 100_000)
        ]
        for labels, z in results[1:]:
            assert np.array_equal(labels, results[0][0]) and np.array_equal(_bits(z), _bits(results[0][1]))


def test_batch_statistics_come_from_every_row_of_the_batch(x_test):
    """Changing only a companion changes row 0's logits (batch norm), never for layer norm."""
    batches = batches_of(len(x_test), 4, 30, seed=0)
    swapped = batches.copy()
    swapped[:, 3] = (swapped[:, 3] + 1) % len(x_test)
    swapped[np.any(swapped[:, 3:] == swapped[:, :1], axis=1), 3] += 2  # keep rows distinct from row 0
    for norm, moves in (("batchnorm", True), ("layernorm", False)):
        prober = Prober(network(norm), NetSpec(norm), x_test)
        _, z1 = prober.labels(batches, logits=True)
        _, z2 = prober.labels(swapped, logits=True)
        assert (not np.array_equal(z1, z2)) == moves, norm


def test_ghost_batch_norm_row_zero_sees_the_companions_of_its_virtual_batch_only(x_test):
    """Virtual batches of 5 rows: in a batch of 16, row 0's statistics come from rows 0-4."""
    batches = batches_of(len(x_test), 16, 30, seed=2)
    prober = Prober(network("ghostbatchnorm"), NetSpec("ghostbatchnorm", **SETTINGS), x_test)
    _, z = prober.labels(batches, logits=True)
    for column, moves in ((4, True), (5, False), (15, False)):
        swapped = batches.copy()
        swapped[:, column] = (swapped[:, column] + 1) % len(x_test)
        while True:  # keep the rows of each batch distinct
            clash = np.array([len(set(row)) < len(row) for row in swapped])
            if not clash.any():
                break
            swapped[clash, column] = (swapped[clash, column] + 1) % len(x_test)
        _, z2 = prober.labels(swapped, logits=True)
        assert (not np.array_equal(z, z2)) == moves, column


def test_probing_reads_the_stack_and_never_writes_it(x_test):
    stacked = network("batchrenorm")
    before = {k: v.copy() for k, v in stacked.items()}
    prober = Prober(stacked, NetSpec("batchrenorm"), x_test, (2.0, 0.5))
    prober.labels(batches_of(len(x_test), 16, 20, seed=1))
    assert all(np.array_equal(before[k], stacked[k]) and before[k].dtype == stacked[k].dtype for k in before)


def test_bad_batches_are_refused(x_test):
    prober = Prober(network("batchnorm"), NetSpec("batchnorm"), x_test)
    with pytest.raises(ValueError, match="b >= 2"):
        prober.labels(np.zeros((3, 1), np.int64))
    with pytest.raises(ValueError, match="row indices"):
        prober.labels(np.array([[0, len(x_test)]]))
    assert prober.labels(np.zeros((0, 4), np.int64)).shape == (3, 0)
