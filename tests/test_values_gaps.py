"""Values the other tests left open: the fine-tuning streams' exact rows, the remedies' error
message and float32 arithmetic from float64 inputs, the largest state difference, interval
comparisons that touch, the CNN summary at three batch sizes and the accumulation summary's
texts. Every expected value is computed here (NumPy, scipy, f-strings)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from bnstudy.base.runtime import derive_seed
from bnstudy.nets import model as mlp
from bnstudy.nets.model import NetSpec
from bnstudy.paper.latex import macro_name
from bnstudy.studies.accumulation import report as accumulation_report
from bnstudy.studies.accumulation import science as accumulation
from bnstudy.studies.batch_size import remedies
from bnstudy.studies.conv import report as conv_report
from bnstudy.studies.finetune import science as finetune
from float32_by_hand import exact_by_hand, linear32
from share_reference import logit_t_interval

# ---- fine-tuning streams: the exact seeded rows ----------------------------------------------

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
        lambda: remedies.training_mode_layer_inputs(stacked, SPEC, x, batches),
        lambda: remedies.cumulative_average(stacked, SPEC, x, batches),
        lambda: remedies.precise_statistics(stacked, SPEC, x, batches),
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
    inputs, starts = remedies.training_mode_layer_inputs(stacked, WIDE, x, batches)
    assert starts.dtype == np.int64 and starts.tolist() == [0, 4, 7, 12, 14]
    pre1, pre2 = _training_inputs_by_hand(stacked, x, batches, WIDE.eps)
    assert list(inputs) == list(mlp.NORMS)
    for got, want in zip(inputs.values(), (pre1, pre2)):
        assert got.dtype == np.float32 and got.shape == want.shape
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    same, _ = remedies.training_mode_layer_inputs(stacked, WIDE, x.astype(np.float32), batches)
    for layer in mlp.NORMS:
        assert inputs[layer].tobytes() == same[layer].tobytes()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_statistics_of_float64_rows_are_float32_arithmetic_bit_for_bit(seed):
    stacked = _stack(WIDE, seeds=(0, 1, 2, 3), seed=seed)
    x = _x64(23, 7, seed + 20)
    got = remedies.exact_statistics(stacked, WIDE, x)
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


# ---- the CNN summary: touching intervals, three batch sizes, a normaliser after none ----------


def test_compare_reads_touching_intervals_as_overlapping():
    a = pd.Series({"ci_low": 0.1, "ci_high": 0.2})
    assert conv_report.compare(a, pd.Series({"ci_low": 0.2, "ci_high": 0.3})) == "overlapping"
    assert conv_report.compare(a, pd.Series({"ci_low": 0.0, "ci_high": 0.1})) == "overlapping"
    assert conv_report.compare(a, pd.Series({"ci_low": 0.2000001, "ci_high": 0.3})) == "below"
    assert conv_report.compare(a, pd.Series({"ci_low": 0.0, "ci_high": 0.0999999})) == "above"


C_NORMS = ("batchnorm", "none", "renorm")  # sorted: renorm comes after none
C_SIZES = (2, 4, 8)
C_SEEDS = (0, 1, 2)
MLP_FLIP = {2: 0.5, 4: 0.3, 8: 0.2}  # the MLP's exact flip rate: above the CNN's at 2, below it at 8


def _c_inference(n, b, s):
    return {"batchnorm": 0.9, "none": 0.85, "renorm": 0.88}[n] + 0.004 * b + 0.013 * s + 0.002 * s * s * (b % 3)


def _c_train(n, b, s):
    return _c_inference(n, b, s) - (0.1 - 0.01 * b + 0.005 * s if n == "batchnorm" else 0.0)


def _c_loss(n, b, s):
    return 0.3 + 0.011 * b + 0.02 * s + 0.05 * C_NORMS.index(n)


def _c_flip(b, s):
    return 0.2 + 0.02 * b + 0.011 * s


def _t(values, confidence=0.9):
    v = np.asarray(values, float)
    mean, sd = float(v.mean()), float(v.std(ddof=1))
    half = sps.t.ppf(0.5 + confidence / 2, len(v) - 1) * sd / math.sqrt(len(v))
    return mean, mean - half, mean + half


def _share(values, confidence=0.9):
    """An accuracy or a flip rate over seeds: the t interval on the logit scale."""
    mean, _, lo, hi = logit_t_interval(values, confidence)
    return mean, lo, hi


def _conv_inputs():
    runs = pd.DataFrame(
        [
            {"normaliser": n, "batch_size": b, "seed": s}
            | {"inference_accuracy": _c_inference(n, b, s), "train_mode_accuracy": _c_train(n, b, s)}
            | {"final_loss": _c_loss(n, b, s)}
            for s in (1, 2, 0)
            for b in (8, 2, 4)
            for n in C_NORMS
        ]
    )
    rates = pd.DataFrame(
        [
            {"batch_size": b, "design": d, "seed": s}
            | {"flip_rate": _c_flip(b, s), "train_mode_accuracy": 0.7, "ever_flipped": 0.3 + 0.01 * s}
            for b in C_SIZES
            for d in ("random", "exact")
            for s in C_SEEDS
        ]
    )
    mlp_rows = pd.DataFrame(
        [
            {"model": "mlp", "normaliser": n, "batch_size": b, "measure": measure}
            | {"seeds": 5, "mean": mean, "sd": 0.01, "ci_low": mean - 0.01, "ci_high": mean + 0.01}
            for n in C_NORMS
            for b in C_SIZES
            for measure, mean in (("inference_accuracy", 0.8 + 0.01 * b), ("train_mode_accuracy", 0.6 + 0.02 * b))
        ]
        + [
            {"model": "mlp", "normaliser": "batchnorm", "batch_size": b, "measure": "exact_flip_rate"}
            | {"seeds": 5, "mean": MLP_FLIP[b], "sd": 0.01, "ci_low": MLP_FLIP[b] - 0.02, "ci_high": MLP_FLIP[b] + 0.02}
            for b in C_SIZES
        ]
    )
    design = {"channels": (4, 8), "groups": 2, "epochs": 1, "mlp_seeds": 5, "examples": 10}
    design |= {"draws": 3, "exact_examples": 2, "exact_per_class": 1, "pairs": 7}
    return runs, rates, mlp_rows, design


def _pts(v):
    return f"{100 * v:.1f}"


def test_conv_report_max_macros_are_those_of_the_largest_of_three_batch_sizes():
    runs, rates, mlp_rows, design = _conv_inputs()
    m = conv_report.report(runs, rates, mlp_rows, 0.9, {n: n for n in C_NORMS}, design, image_side=8)["macros"]
    assert m["convBatchSizes"] == "2, 4 and 8" and m["convBatchMin"] == "2" and m["convBatchMax"] == "8"
    for where, b in (("min", 2), ("max", 8)):
        for n in C_NORMS:
            for short, f in (("inf", _c_inference), ("train", _c_train)):
                mean, lo, hi = _share([f(n, b, s) for s in C_SEEDS])
                assert m[macro_name("conv", "cnn", n, short, where)] == _pts(mean)
                assert m[macro_name("conv", "cnn", n, short, where, "ci")] == f"[{_pts(lo)}, {_pts(hi)}]"
            mlp_inf = 0.8 + 0.01 * b
            assert m[macro_name("conv", "mlp", n, "inf", where)] == _pts(mlp_inf)
            assert m[macro_name("conv loss", n, where)] == f"{_t([_c_loss(n, b, s) for s in C_SEEDS])[0]:.2f}"
        mean, lo, hi = _share([_c_flip(b, s) for s in C_SEEDS])
        assert m[macro_name("conv", "cnn", "flip", "exact", where)] == _pts(mean)
        assert m[macro_name("conv", "cnn", "flip", "random", where, "ci")] == f"[{_pts(lo)}, {_pts(hi)}]"
        assert m[macro_name("conv", "mlp", "flip", "exact", where)] == _pts(MLP_FLIP[b])
        want = "below" if hi < MLP_FLIP[b] - 0.02 else "above" if lo > MLP_FLIP[b] + 0.02 else "overlapping"
        assert m[macro_name("conv flip compare", where)] == want
        inf, train = (_t([f("batchnorm", b, s) for s in C_SEEDS])[0] for f in (_c_inference, _c_train))
        assert m[macro_name("conv gap", "cnn", where)] == _pts(inf - train)
        assert m[macro_name("conv gap", "mlp", where)] == _pts((0.8 + 0.01 * b) - (0.6 + 0.02 * b))
    # the inputs tell the sizes apart: batch 4's values differ from batch 8's
    assert m["convCnnBatchnormInfMax"] != _pts(_t([_c_inference("batchnorm", 4, s) for s in C_SEEDS])[0])
    assert {m["convFlipCompareMin"], m["convFlipCompareMax"]} == {"below", "above"}


def test_conv_report_gains_cover_a_normaliser_sorted_after_none():
    runs, rates, mlp_rows, design = _conv_inputs()
    m = conv_report.report(runs, rates, mlp_rows, 0.9, {n: n for n in C_NORMS}, design, image_side=8)["macros"]
    for where, b in (("min", 2), ("max", 8)):
        for n in ("batchnorm", "renorm"):
            for short, f in (("inf", _c_inference), ("train", _c_train)):
                gain, lo, hi = _t([f(n, b, s) - _c_inference("none", b, s) for s in C_SEEDS])
                assert m[macro_name("conv gain", n, short, where)] == f"{100 * gain:+.1f}"
                # every seed alike (no spread): no degenerate interval is printed
                ci = r"\text{(every seed alike)}" if lo == hi else f"[{100 * lo:+.1f}, {100 * hi:+.1f}]"
                assert m[macro_name("conv gain", n, short, where, "ci")] == ci
                words = "lies wholly below zero" if hi < 0 else "lies wholly above zero" if lo > 0 else "contains zero"
                assert m[macro_name("conv gain", n, short, where, "verdict")] == words
        assert macro_name("conv gain", "none", "inf", where) not in m
    assert m["convGainRenormInfMax"] == f"{100 * 0.03:+.1f}"


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
    m = accumulation_report.report(runs, grid, diffs, batch, micro, 0.9, 3, 64, 1e-3)["macros"]
    assert m["accumFirstRunning"] == "within $3 \\times 10^{-8}$"
    zero = {key: 0.0 for key in running}
    runs, grid, diffs, batch, micro = _accumulation_inputs(zero)
    m = accumulation_report.report(runs, grid, diffs, batch, micro, 0.9, 3, 64, 1e-3)["macros"]
    assert m["accumFirstRunning"] == "identical, bit for bit"


def test_accumulation_ghost_intervals_from_zero_to_zero_are_not_resolved():
    running = {(m, s): 0.0 for m in (2, 4) for s in (0, 1, 2)}
    out = accumulation_report.report(*_accumulation_inputs(running), 0.9, 3, 64, 1e-3)
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
    from bnstudy.studies.batch_size import macros as batch_size_macros

    loss, exact = _paired(-0.05, -0.1, 0.0), _paired(0.01, -0.02, 0.04)
    text = batch_size_macros.recovery_sentence(loss, exact, 0.2, 2)
    assert "contains zero, so there is no established loss to recover" in text
    assert batch_size_macros._side(_paired(-0.05, -0.1, -1e-12)) == "below"
    assert batch_size_macros._side(_paired(0.05, 0.0, 0.1)) == "zero"


def test_published_comparison_skips_a_size_the_source_did_not_publish_and_goes_on():
    from bnstudy.studies.companions import summary as companions_summary

    rows = [
        {"design": "random", "measure": "flip_rate", "batch_size": b, "mean": m, "ci_low": lo, "ci_high": hi}
        for b, m, lo, hi in ((2, 0.2, 0.15, 0.25), (16, 0.05, 0.04, 0.06))
    ]
    published = {"flip_rate": {16: 0.032}}  # nothing published at b = 2, the first size
    m = companions_summary.published_ratio_macros({}, pd.DataFrame(rows), published, [2, 16])
    assert m["compPublishedComparison"].startswith("at $b=16$ the published 3.2")
    assert "lies below our interval" in m["compPublishedComparison"]
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
