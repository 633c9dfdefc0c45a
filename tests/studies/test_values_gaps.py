"""Values the other tests left open: the fine-tuning streams' exact rows, the remedies' error
message and float32 arithmetic from float64 inputs, the largest state difference and the
accumulation summary's texts. Every expected value is computed here (NumPy, scipy, f-strings)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import accumulation_families as af
from bnstudy.base.runtime import derive_seed
from bnstudy.evaluation import recompute
from bnstudy.nets import model as mlp
from bnstudy.nets.model import NetSpec
from bnstudy.studies.accumulation import report as accumulation_report
from bnstudy.studies.accumulation import science as accumulation
from bnstudy.studies.batch_size import remedies
from bnstudy.studies.finetune import science as finetune
from float32_by_hand import exact_by_hand, linear32

# ---- fine-tuning streams: the exact seeded rows ----------------------------------------------

FAMILIES = af.section()  # the accumulation study's families, as the test config declares them
Y = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1])  # 11 rows, three classes


def _epoch(rng, y, b, stream):
    """One epoch: a PCG64 permutation, for class_sorted sorted by label (stable) and its full
    batches shuffled; the n mod b leftover rows dropped."""
    n = len(y)
    perm = rng.permutation(n)
    if stream == "class_sorted":
        perm = perm[np.argsort(y[perm], kind="stable")]
    full = n // b
    batches = [perm[j * b : (j + 1) * b] for j in range(full)]
    if stream == "class_sorted":
        batches = [batches[j] for j in rng.permutation(full)]
    return [int(r) for batch in batches for r in batch]


def _stream(y, stream, seed, network, steps, b):
    index = {"shuffle": 0, "class_sorted": 1}[stream]
    rng = np.random.default_rng(derive_seed(seed, 18, network, index))
    rows = []
    while len(rows) < steps * b:
        rows += _epoch(rng, y, b, stream)
    return rows[: steps * b]


@pytest.mark.parametrize("stream", ["shuffle", "class_sorted"])
@pytest.mark.parametrize(("seed", "network", "steps", "b"), [(0, 0, 7, 3), (5, 2, 4, 2), (1, 3, 9, 4)])
def test_stream_rows_are_the_documented_seeded_epochs(stream, seed, network, steps, b):
    assert finetune.STREAM_FINETUNE == 18 and finetune.STREAMS == ("shuffle", "class_sorted")
    got = finetune.stream_rows(Y, stream, seed, network, steps, b)
    assert got.dtype == np.int64
    assert got.tolist() == _stream(Y, stream, seed, network, steps, b)


def test_stream_rows_accept_a_batch_of_every_row():
    got = finetune.stream_rows(Y, "shuffle", 2, 1, 3, len(Y))
    assert got.dtype == np.int64 and got.tolist() == _stream(Y, "shuffle", 2, 1, 3, len(Y))
    assert sorted(got[: len(Y)].tolist()) == list(range(len(Y)))


@pytest.mark.parametrize("b", [1, 0, 12])
def test_stream_rows_refuse_a_batch_size_out_of_range_with_its_message(b):
    with pytest.raises(ValueError) as info:
        finetune.stream_rows(Y, "shuffle", 0, 0, 4, b)
    assert str(info.value) == f"fine-tuning needs 2 <= batch_size <= 11 rows; got {b}"


@pytest.mark.parametrize("stream", ["shuffle", "class_sorted"])
def test_stream_rows_of_zero_steps_are_an_empty_int64_array(stream):
    got = finetune.stream_rows(Y, stream, 0, 0, 0, 2)
    assert isinstance(got, np.ndarray) and got.dtype == np.int64 and got.shape == (0,)


# ---- remedies: the training-mode pass's message and float32 arithmetic ------------------------

SPEC = NetSpec("batchnorm", widths=(6, 4, 3, 3))
WIDE = NetSpec("batchnorm", widths=(7, 9, 8, 3))


def _stack(spec, seeds=(0, 1, 2), seed=0):
    stacked = {k: np.array(v) for k, v in mlp.initial_stack(spec, list(seeds)).items()}
    rng = np.random.default_rng(seed)
    for layer in mlp.NORMS:
        shape = stacked[f"{layer}.weight"].shape
        stacked[f"{layer}.weight"] = (0.5 + rng.random(shape)).astype(np.float32)
        stacked[f"{layer}.bias"] = (0.3 * rng.standard_normal(shape)).astype(np.float32)
    for key in ("0.bias", "3.bias"):
        stacked[key] = (0.2 * rng.standard_normal(stacked[key].shape)).astype(np.float32)
    return stacked


def _x64(n, features, seed):
    """Float64 rows that float32 cannot hold exactly."""
    return np.random.default_rng(seed).standard_normal((n, features)) * 2 + 0.5


@pytest.mark.parametrize("batches", [[[0, 1], [2]], [[3], [0, 1, 2]], [[0, 1, 2], [4, 5], [6]], []])
def test_training_mode_pass_refuses_batches_under_two_rows_or_none_with_one_message(batches):
    stacked, x = _stack(SPEC), _x64(8, 6, 0).astype(np.float32)
    for call in (
        lambda: recompute.training_mode_layer_inputs(stacked, SPEC, x, batches),
        lambda: remedies.cumulative_average(stacked, SPEC, x, batches),
        lambda: recompute.precise_statistics(stacked, SPEC, x, batches),
    ):
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value) == "a training-mode pass needs batches of at least 2 rows"


def _batch_norm32(h, gamma, beta, eps):
    """Training-mode batch norm and ReLU of one batch, float32 throughout, rows added in order."""
    n = np.float32(h.shape[0])
    s = np.zeros(h.shape[1], np.float32)
    for r in range(h.shape[0]):
        s = s + h[r]
    mean = s / n
    s = np.zeros(h.shape[1], np.float32)
    for r in range(h.shape[0]):
        d = h[r] - mean
        s = s + d * d
    invstd = np.float32(1) / np.sqrt(s / n + eps)
    y = ((h - mean) * invstd) * gamma + beta
    return np.where(y > 0, y, np.float32(0)).astype(np.float32)


def _training_inputs_by_hand(stacked, x, batches, eps):
    rows = [r for b in batches for r in b]
    x32 = np.asarray(x)[rows].astype(np.float32)
    eps = np.float32(eps)
    pre1s, pre2s = [], []
    for i in range(stacked["0.weight"].shape[0]):
        pre1 = linear32(x32, stacked["0.weight"][i], stacked["0.bias"][i])
        out1, start = [], 0
        for b in batches:
            out1.append(_batch_norm32(pre1[start : start + len(b)], stacked["1.weight"][i], stacked["1.bias"][i], eps))
            start += len(b)
        pre2s.append(linear32(np.concatenate(out1), stacked["3.weight"][i], stacked["3.bias"][i]))
        pre1s.append(pre1)
    return np.stack(pre1s), np.stack(pre2s)


@pytest.mark.parametrize("seed", [0, 1])
def test_training_mode_layer_inputs_from_float64_rows_are_float32_arithmetic_bit_for_bit(seed):
    stacked = _stack(WIDE, seed=seed)
    x = _x64(14, 7, seed + 10)
    batches = [[3, 0, 7, 1], [2, 5, 4], [13, 9, 8, 12, 10], [6, 11]]
    inputs, starts = recompute.training_mode_layer_inputs(stacked, WIDE, x, batches)
    assert all(starts[layer].dtype == np.int64 and starts[layer].tolist() == [0, 4, 7, 12, 14] for layer in mlp.NORMS)
    pre1, pre2 = _training_inputs_by_hand(stacked, x, batches, WIDE.eps)
    assert list(inputs) == list(mlp.NORMS)
    for got, want in zip(inputs.values(), (pre1, pre2)):
        assert got.dtype == np.float32 and got.shape == want.shape
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    same, _ = recompute.training_mode_layer_inputs(stacked, WIDE, x.astype(np.float32), batches)
    for layer in mlp.NORMS:
        assert inputs[layer].tobytes() == same[layer].tobytes()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_statistics_of_float64_rows_are_float32_arithmetic_bit_for_bit(seed):
    stacked = _stack(WIDE, seeds=(0, 1, 2, 3), seed=seed)
    x = _x64(23, 7, seed + 20)
    got = recompute.exact_statistics(stacked, WIDE, x)
    want = exact_by_hand(stacked, x, WIDE.eps)
    assert list(got) == list(mlp.NORMS)
    for layer in mlp.NORMS:
        for g, w in zip(got[layer], want[layer]):
            assert g.dtype == np.float32 and g.shape == w.shape
            assert np.array_equal(g.view(np.uint32), w.view(np.uint32)), layer


# ---- accumulation: the largest difference between two state dicts -----------------------------


def test_parameter_distance_is_the_float64_difference_of_float32_values():
    """(1 + 2**-23) - (-2**-24) is 1 + 2**-23 + 2**-24 in float64, exactly; in float32 it
    rounds (a tie, to 1 + 2**-22): the distance is the float64 one. (The float64 widening
    cannot be undone by a mutant: ``astype(None)`` is float64 too.)"""
    a = {
        "0.weight": np.array([[1 + 2.0**-23, 0.5]], np.float32),
        "0.bias": np.array([3.0, 1e-8], np.float32),
        "1.running_mean": np.array([0.1, -0.3], np.float32),
    }
    b = {
        "0.weight": np.array([[-(2.0**-24), 0.25]], np.float32),
        "0.bias": np.array([3.0 + 2.0**-22, -1e-8], np.float32),
        "1.running_mean": np.array([0.1, 0.7], np.float32),
    }
    got = accumulation.parameter_distance(a, b)

    def want(key):
        return float(np.max(np.abs(a[key].astype(np.float64) - b[key].astype(np.float64))))

    assert got == {"parameters": want("0.weight"), "pre_norm_biases": want("0.bias"), "running": want("1.running_mean")}
    assert got["parameters"] == 1 + 2.0**-23 + 2.0**-24
    assert float(np.float32(1 + 2.0**-23) - np.float32(-(2.0**-24))) != got["parameters"]


# ---- the accumulation summary: first-step running difference and ghost at exactly zero --------


def _accumulation_inputs(first_running):
    batch, micro, seeds = 8, (2, 4), (0, 1, 2)
    runs, grid = [], []
    for m in micro:
        for mode in ("inference", "recomputed", "training"):
            for s in seeds:
                acc = 0.7 + 0.01 * m + 0.02 * s + (0.05 if mode == "training" else 0.0)
                runs.append({"variant": "scaled", "micro_batch": m, "seed": s, "mode": mode, "accuracy": acc - 0.05})
                ghost = acc + 0.03 + 0.001 * s * s if (m, mode) == (4, "inference") else acc  # else [0, 0]
                runs.append({"variant": "accumulate", "micro_batch": m, "seed": s, "mode": mode, "accuracy": acc})
                runs.append({"variant": "ghost", "micro_batch": m, "seed": s, "mode": mode, "accuracy": ghost})
    for b in (batch, *micro):
        for mode in ("inference", "recomputed", "training"):
            for s in seeds:
                grid.append(
                    {"normaliser": "batchnorm", "batch_size": b, "seed": s, "mode": mode}
                    | {"accuracy": 0.6 + 0.01 * b + 0.03 * s}
                )
    differences = pd.DataFrame(
        [
            {"micro_batch": m, "seed": s, "after": after, "parameters": 1e-6, "pre_norm_biases": 1e-7}
            | {"running": first_running[(m, s)] if after == "first_step" else 1e-5}
            | {"scale": 2.0, "label_disagreement": 0.01}
            for m in micro
            for s in seeds
            for after in ("first_step", "run")
        ]
    )
    return pd.DataFrame(runs), pd.DataFrame(grid), differences, batch, list(micro)


def test_accumulation_first_running_difference_reads_within_its_power_of_ten():
    running = {(m, s): 0.0 for m in (2, 4) for s in (0, 1, 2)} | {(4, 1): 2.6e-8, (2, 2): 1e-9}
    runs, grid, diffs, batch, micro = _accumulation_inputs(running)
    m = accumulation_report.report(runs, grid, diffs, batch, micro, 0.9, 3, 64, 1e-3, FAMILIES)["macros"]
    assert m["accumFirstRunning"] == "within $3 \\times 10^{-8}$"
    zero = {key: 0.0 for key in running}
    runs, grid, diffs, batch, micro = _accumulation_inputs(zero)
    m = accumulation_report.report(runs, grid, diffs, batch, micro, 0.9, 3, 64, 1e-3, FAMILIES)["macros"]
    assert m["accumFirstRunning"] == "identical, bit for bit"


def test_accumulation_ghost_intervals_from_zero_to_zero_are_not_resolved():
    running = {(m, s): 0.0 for m in (2, 4) for s in (0, 1, 2)}
    out = accumulation_report.report(*_accumulation_inputs(running), 0.9, 3, 64, 1e-3, FAMILIES)
    pair = out["paired"].set_index(["micro_batch", "comparison", "mode"])
    for key in ((2, "inference"), (2, "recomputed"), (2, "training"), (4, "recomputed"), (4, "training")):
        r = pair.loc[(key[0], "ghost_vs_accumulate", key[1])]
        assert (r.ci_low, r.ci_high) == (0.0, 0.0)
    assert pair.loc[(4, "ghost_vs_accumulate", "inference")].ci_low > 0
    assert out["macros"]["accumGhostResolved"] == "inference mode at micro-batch 4"


# ---- edges the mutation sample of 2026-12-03 found open ---------------------------------------


def _paired(gain, lo, hi, b=2):
    from types import SimpleNamespace

    return SimpleNamespace(gain=gain, ci_low_adj=lo, ci_high_adj=hi, batch_size=b)


def test_an_interval_ending_exactly_at_zero_establishes_no_loss():
    """A paired interval [-0.1, 0] contains zero: no loss is named, the sentence says so."""
    from bnstudy.studies.batch_size import sentences as batch_size_sentences

    loss, exact = _paired(-0.05, -0.1, 0.0), _paired(0.01, -0.02, 0.04)
    from batch_size_families import family

    text = batch_size_sentences.recovery_sentence(
        loss, exact, 0.2, 2, normalisers=family("normalisers"), remedies=family("remedies")
    )
    assert "contains zero, so there is no established loss to recover" in text
    assert batch_size_sentences.side_of(_paired(-0.05, -0.1, -1e-12)) == "below"
    assert batch_size_sentences.side_of(_paired(0.05, 0.0, 0.1)) == "zero"


def test_published_comparison_skips_a_size_the_source_did_not_publish_and_goes_on():
    from bnstudy.studies.companions import published as companions_published

    # two networks x two examples at each size; nothing published at b = 2, the first size
    rows = [
        {"network": "dependence", "design": "random", "batch_size": b, "seed": s, "example": e, "batches": 100}
        | {"flips": f}
        for b, flips in ((2, (20, 22, 18, 21)), (16, (5, 6, 4, 5)))
        for (s, e), f in zip(((0, 0), (0, 1), (1, 0), (1, 1)), flips)
    ]
    published = {"flip_rate": {16: 0.5}}
    m = companions_published.published_ratio_macros(pd.DataFrame(rows), published, [2, 16], 0.95)
    assert m["compPublishedComparison"].startswith("at $b=16$ the published 50.0")
    assert "lies above our interval" in m["compPublishedComparison"] and "$b=2$" not in m["compPublishedComparison"]
    assert m["compPublishedOutside"] == "at $b=16$"


@pytest.mark.parametrize("test_size", [34, 104, 202])
def test_the_digits_test_part_per_class_follows_the_split_seed(test_size):
    """At these test sizes the stratified allocation has ties that the split's seed breaks:
    ``parts`` must count the rows of the split the seed makes, not of another."""
    from bnstudy.base import config as config_module

    base = {"split": {"test_size": test_size, "seed": 0}, "data": {"name": "digits"}}
    counts = {s: tuple(config_module.split_class_counts(test_size, s)[1]) for s in range(4)}
    assert len(set(counts.values())) > 1  # the seed matters at this size
    for seed, expected in counts.items():
        cfg = base | {"split": {"test_size": test_size, "seed": seed}}
        assert tuple(config_module.parts(cfg).test_class_rows) == expected, seed


def test_crossed_components_count_networks_and_examples():
    from bnstudy.base import stats

    y = np.array([[0.1, 0.2, 0.3], [0.2, 0.2, 0.5]])
    c = stats.crossed_components(y, 0.95)
    assert (c["networks"], c["examples"]) == (2, 3)
