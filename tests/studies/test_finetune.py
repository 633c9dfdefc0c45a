"""Fine-tuning in small batches (bnstudy.studies.finetune: science and report): the frozen-statistics
mode of the training loop against PyTorch's BatchNorm1d in eval mode inside a training loop
(autograd, torch.optim.Adam), the live mode's running statistics against PyTorch's training mode,
the batch streams, the summary's intervals by hand, the macros and table, the figure's
inputs, and the rules' outputs in the test config's manifest."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats as sps

from bnstudy.compiled import backprop, gradients, kernels, normkernels
from bnstudy.nets import model, train
from bnstudy.studies.finetune import macros as finetune_macros
from bnstudy.studies.finetune import science as finetune
from bnstudy.studies.finetune import sentences as finetune_sentences
from bnstudy.studies.finetune import summary as finetune_summary
from bnstudy.studies.finetune import tables as finetune_tables
from conftest import hashed_outputs

WIDTHS = (6, 5, 4, 3)


def _state(seed=0, tracked=7, momentum=0.1):
    """A tiny batch-norm network with non-trivial affine parameters and running statistics."""
    spec = model.NetSpec("batchnorm", WIDTHS, groups=1, eps=1e-5, momentum=momentum)
    return _perturbed(model.initial_state(spec, seed), model.NORMS, seed, tracked), spec


def _perturbed(state, layers, seed, tracked):
    """``state`` with each batch-norm layer's gamma, beta and running statistics drawn away from
    their initial values (seeded) and ``tracked`` batches counted."""
    rng = np.random.default_rng(seed)
    for layer in layers:
        f = state[f"{layer}.weight"].shape[0]
        state[f"{layer}.weight"] = (0.5 + rng.random(f)).astype(np.float32)
        state[f"{layer}.bias"] = (rng.random(f) - 0.5).astype(np.float32)
        state[f"{layer}.running_mean"] = (rng.random(f) - 0.5).astype(np.float32)
        state[f"{layer}.running_var"] = (0.5 + rng.random(f)).astype(np.float32)
        state[f"{layer}.num_batches_tracked"] = np.array(tracked, np.int64)
    return state


def _data(n=30, seed=1):
    rng = np.random.default_rng(seed)
    return (rng.random((n, WIDTHS[0])) * 4 - 2).astype(np.float32), np.arange(n, dtype=np.int64) % 3


def _module(state, spec):
    net = model.build_module(spec)
    net.load_state_dict({k: torch.from_numpy(np.array(v, copy=True)) for k, v in state.items()})
    return net


def _torch_finetune(state, spec, x, y, rows, b, lr, frozen):
    """PyTorch's loop: the module in eval mode (frozen) or training mode, autograd, torch.optim.Adam."""
    net = _module(state, spec)
    net.eval() if frozen else net.train()
    opt = torch.optim.Adam(net.parameters(), lr=lr, foreach=False)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    for k in range(len(rows) // b):
        idx = torch.from_numpy(rows[k * b : (k + 1) * b])
        loss = torch.nn.functional.cross_entropy(net(xt[idx]), yt[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return {k: v.numpy() for k, v in net.state_dict().items()}


def test_frozen_forward_is_the_inference_kernel_bit_for_bit():
    state, spec = _state()
    rng = np.random.default_rng(2)
    h = (rng.random((7, 5)) * 6 - 3).astype(np.float32)
    g, be, rm, rv = (state[f"1.{k}"] for k in ("weight", "bias", "running_mean", "running_var"))
    out, xhat, stats = np.empty_like(h), np.empty_like(h), np.empty((5, 5), np.float32)
    lp = normkernels.Params(g, be, rm, rv)
    gradients.frozen_forward(lp, np.float32(spec.eps), h, 7, normkernels.Keep(stats, xhat, xhat[:0]), out)
    invstd = stats[2]
    want = np.empty_like(h)
    kernels.norm_inference(normkernels.settings(kernels.BATCH, spec.eps), lp, h, True, want)
    assert out.tobytes() == want.tobytes()
    np.testing.assert_array_equal(invstd, np.float32(1) / np.sqrt(rv + np.float32(spec.eps)))
    assert (rm.tobytes(), rv.tobytes()) == (state["1.running_mean"].tobytes(), state["1.running_var"].tobytes())


def test_frozen_gradient_equals_autograd_through_batchnorm1d_in_eval_mode():
    """One SGD step of lr 1 on a batch: p0 - p1 is the gradient, against autograd on the eval-mode module."""
    state, spec = _state(seed=3)
    x, y = _data(12)
    flat = train.buffers(spec, state)[0]
    before = flat.copy()
    running = np.zeros((4, 5), np.float32)
    for i, layer in enumerate(model.NORMS):
        running[2 * i, : WIDTHS[i + 1]] = state[f"{layer}.running_mean"]
        running[2 * i + 1, : WIDTHS[i + 1]] = state[f"{layer}.running_var"]
    kept = running.copy()
    backprop.train_run(
        backprop.mlp_arch(WIDTHS), backprop.State(flat, running), backprop.Data(x, y),
        backprop.schedule(np.arange(12)[None], [12]), normkernels.settings(kernels.BATCH, spec.eps, 1, 0.1),
        backprop.optimiser(backprop.SGD, 1.0), 7, backprop.new_log(1), True,
    )  # fmt: skip
    assert running.tobytes() == kept.tobytes(), "frozen: the running statistics are never written"
    net = _module(state, spec).eval()
    torch.nn.functional.cross_entropy(net(torch.from_numpy(x)), torch.from_numpy(y)).backward()
    grads = dict(net.named_parameters())
    offset = 0
    for key, shape in spec.layout():
        size = int(np.prod(shape))
        ours = (before - flat)[offset : offset + size].reshape(shape)
        offset += size
        theirs = grads[key].grad.numpy()
        assert np.abs(theirs).max() > 0, key  # every parameter learns, the Linear before the norm included
        np.testing.assert_allclose(ours, theirs, atol=1e-6 + 1e-5 * float(np.abs(theirs).max()), err_msg=key)


@pytest.mark.parametrize("b", [2, 3])
def test_frozen_adam_finetuning_agrees_with_pytorch_eval_mode_in_a_training_loop(b):
    state, spec = _state(seed=4)
    x, y = _data()
    rows = finetune.stream_rows(y, "shuffle", 0, 0, 12, b)
    ours = finetune.run(state, spec, x, y, rows, b, 1e-2, frozen=True)
    theirs = _torch_finetune(state, spec, x, y, rows, b, 1e-2, frozen=True)
    for key, value in theirs.items():
        if "running" in key or "num_batches" in key:  # eval mode: never written, on either side
            assert ours[key].tobytes() == state[key].tobytes() and np.array_equal(value, state[key]), key
        else:
            assert np.abs(ours[key] - state[key]).max() > 1e-3, key  # it did learn
            np.testing.assert_allclose(ours[key], value, atol=2e-5, err_msg=key)


def test_live_finetuning_moves_the_running_statistics_as_pytorchs_training_mode():
    """Learning rate 0: the weights stay, bit for bit; the running statistics follow every batch."""
    state, spec = _state(seed=5)
    x, y = _data()
    rows = finetune.stream_rows(y, "class_sorted", 0, 0, 9, 2)
    ours = finetune.run(state, spec, x, y, rows, 2, 0.0, frozen=False)
    theirs = _torch_finetune(state, spec, x, y, rows, 2, 0.0, frozen=False)
    for key, value in theirs.items():
        if "running" in key:
            assert ours[key].tobytes() != state[key].tobytes(), key
            np.testing.assert_allclose(ours[key], value, rtol=1e-5, atol=1e-6, err_msg=key)
        elif "num_batches" in key:
            assert int(ours[key]) == int(value) == 7 + 9
        else:
            assert ours[key].tobytes() == state[key].tobytes(), key


def test_a_run_starts_from_the_given_network_and_the_path_is_made_of_prefix_runs():
    state, spec = _state(seed=6)
    x, y = _data()
    rows = finetune.stream_rows(y, "shuffle", 1, 0, 7, 2)
    assert finetune.marks(7, 3) == [0, 3, 6, 7]
    path = finetune.finetune_runs(state, spec, x, y, rows, 2, 1e-3, False, 3)
    assert len(path) == 4 and path[0] is state
    for k, s in zip((3, 6, 7), path[1:]):
        want = finetune.run(state, spec, x, y, rows[: 2 * k], 2, 1e-3, False)
        assert all(s[key].tobytes() == want[key].tobytes() for key in want), k
    assert int(path[-1]["1.num_batches_tracked"]) == 7 + 7
    frozen = finetune.finetune_runs(state, spec, x, y, rows, 2, 1e-3, True, 3)
    assert int(frozen[-1]["1.num_batches_tracked"]) == 7  # frozen: no update counted
    assert not np.array_equal(path[-1]["0.weight"], frozen[-1]["0.weight"])


def test_finetuning_refuses_another_normaliser():
    spec = model.NetSpec("groupnorm", WIDTHS, groups=1)
    x, y = _data()
    with pytest.raises(ValueError, match="batch norm"):
        finetune.run(model.initial_state(spec, 0), spec, x, y, np.arange(4), 2, 1e-3, False)


def test_streams_are_seeded_epochs_random_or_one_class_batches():
    y = np.repeat(np.arange(10), 90)[np.random.default_rng(0).permutation(900)]
    shuffled = finetune.stream_rows(y, "shuffle", 0, 3, 450, 2)
    assert len(shuffled) == 900 and sorted(shuffled) == list(range(900))  # one epoch: every row once
    assert np.array_equal(shuffled, finetune.stream_rows(y, "shuffle", 0, 3, 450, 2))
    assert not np.array_equal(shuffled, finetune.stream_rows(y, "shuffle", 0, 4, 450, 2))  # another network
    assert not np.array_equal(shuffled, finetune.stream_rows(y, "shuffle", 1, 3, 450, 2))  # another seed
    longer = finetune.stream_rows(y, "shuffle", 0, 3, 500, 2)
    assert np.array_equal(longer[:900], shuffled) and len(longer) == 1000  # the next epoch follows
    sorted_ = finetune.stream_rows(y, "class_sorted", 0, 3, 450, 2).reshape(-1, 2)
    classes = y[sorted_]
    assert (classes[:, 0] == classes[:, 1]).all()  # 90 rows per class: every batch holds one class
    assert (np.diff(classes[:, 0]) < 0).any()  # the batches in a random order, not sorted
    random_same = y[shuffled.reshape(-1, 2)]
    assert (random_same[:, 0] == random_same[:, 1]).mean() < 0.3
    with pytest.raises(ValueError, match="stream"):
        finetune.stream_rows(y, "sorted", 0, 0, 4, 2)


def _networks():
    rows = []
    base = {"steps": 4, "train_mode_before": 0.5, "start_mean_to_exact": 0.01, "start_var_to_exact": 0.02}
    after = {
        (0.001, "shuffle", "live"): [0.90, 0.92, 0.89],
        (0.001, "shuffle", "frozen"): [0.95, 0.93, 0.94],
        (0.001, "class_sorted", "live"): [0.80, 0.85, 0.84],
        (0.001, "class_sorted", "frozen"): [0.94, 0.94, 0.95],
    }
    before = [0.95, 0.94, 0.96]
    for (lr, stream, mode), values in after.items():
        for seed, v in enumerate(values):
            rows.append(
                {"seed": seed, "lr": lr, "stream": stream, "mode": mode, "inference_before": before[seed]}
                | base
                | {
                    "inference_after": v,
                    "train_mode_after": 0.5 + 0.1 * (mode == "live"),
                    "recomputed_after": v + 0.01 * (mode == "live"),
                    "mean_to_exact": 0.1,
                    "var_to_exact": 0.4 if mode == "live" else 0.05,
                    "mean_to_start": 0.1 * (mode == "live"),
                    "var_to_start": 0.3 * (mode == "live"),
                }
            )
    return rows[::-1]  # any order


def _t_interval(d):
    mean = math.fsum(d) / len(d)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in d) / (len(d) - 1))
    half = sps.t.ppf(0.975, len(d) - 1) * sd / math.sqrt(len(d))
    return mean, mean - half, mean + half


def test_summary_intervals_are_student_t_over_seeds_paired_by_seed():
    summary = finetune_summary.summarise(_networks(), 0.95)
    cell = summary["by_rate"]["0.001"]
    change = cell["class_sorted"]["live"]["inference_change"]
    mean, lo, hi = _t_interval([0.80 - 0.95, 0.85 - 0.94, 0.84 - 0.96])
    assert change["mean"] == pytest.approx(mean, abs=1e-15) and change["ci"] == pytest.approx([lo, hi], abs=1e-12)
    gap = cell["shuffle"]["frozen_minus_live"]["inference_after"]
    mean, lo, hi = _t_interval([0.05, 0.01, 0.05])
    assert gap["mean"] == pytest.approx(mean, abs=1e-15) and gap["ci"] == pytest.approx([lo, hi], abs=1e-12)
    sorted_gap = cell["class_sorted_minus_shuffle"]["live"]
    assert sorted_gap["mean"] == pytest.approx(-0.22 / 3, abs=1e-12)
    assert cell["shuffle"]["live"]["recomputed_gain"]["mean"] == pytest.approx(0.01, abs=1e-12)
    assert cell["shuffle"]["live"]["var_to_exact"]["mean"] == pytest.approx(0.4)
    assert (
        summary["start"]["inference_before"]["mean"] == pytest.approx(0.95)
        and summary["start"]["inference_before"]["seeds"] == 3
    )


def test_along_means_average_the_seeds_per_step():
    along = [
        dict(lr=lr, stream=s, mode=m, seed=seed, step=k, inference_accuracy=0.25 * (seed + k), mean_to_exact=k,
             var_to_exact=seed)
        for lr in (1e-3, 1e-4) for s in ("class_sorted", "shuffle") for m in ("frozen", "live")
        for seed in (0, 1) for k in (2, 0)
    ]  # fmt: skip
    means = finetune_summary.along_means(along)
    assert [(r["lr"], r["stream"], r["mode"], r["step"]) for r in means[:3]] == [
        (1e-4, "shuffle", "live", 0),
        (1e-4, "shuffle", "live", 2),
        (1e-4, "shuffle", "frozen", 0),
    ]
    assert [r["inference_accuracy"] for r in means[:2]] == [0.125, 0.625] and means[0]["var_to_exact"] == 0.5
    assert len(means) == 16


def test_macros_and_table_print_the_summary():
    summary = finetune_summary.summarise(_networks(), 0.95)
    settings = dict(source_batch_size=64, batch_size=2, steps=300, every=25, train_rows=898, momentum=0.1,
                    confidence=0.95)  # fmt: skip
    m = finetune_macros.macros(summary, settings)
    assert m["finetuneRateOne"] == "$1 \\times 10^{-3}$" and m["finetuneRates"] == m["finetuneRateOne"]
    assert m["finetuneRateOneClassSortedLiveChange"] == "$-12.0$"  # (-15 - 9 - 12) / 3 points
    assert m["finetuneRateOneShuffleFrozenMinusLive"] == "$+3.7$"
    assert m["finetuneRateOneShuffleFrozenMinusLiveVerdict"] == "contains zero"  # +3.7 [-2.1, +9.4]
    assert m["finetuneRateOneClassSortedFrozenMinusLiveVerdict"] == "lies wholly above zero"  # +11.3 [+5.1, +17.6]
    assert m["finetuneRateOneClassSortedLiveChangeVerdict"] == "lies wholly below zero"
    assert m["finetuneRateOneLiveSortedMinusShuffleVerdict"] == "lies wholly below zero"  # -0.10, -0.07, -0.05
    assert m["finetuneRateOneFrozenSortedMinusShuffleVerdict"] == "contains zero"  # -0.01, +0.01, +0.01
    assert m["finetuneRateOneShuffleLiveVarToExact"] == "0.40" and m["finetuneRateOneShuffleFrozenVarToStart"] == "0.00"
    assert m["finetuneStartInference"] == "95.0\\%" and m["finetuneSeeds"] == "3" and m["finetuneRows"] == "600"
    assert m["finetuneTrainedWeight"] == "$2 \\times 10^{-14}$"  # 0.9 ** 300
    assert finetune_sentences.points(-0.00049) == "$-0.05$" and finetune_sentences.points(0.0123) == "$+1.2$"
    rows = finetune_tables.table_rows(summary)
    assert [r[1] for r in rows] == ["random", "one-class"]
    assert all(len(r) == len(finetune_tables.HEADER) for r in rows)
    assert rows[1][2].startswith("$-12.0$ [")


def test_finetune_outputs_are_built_and_in_the_manifest(runs):
    from bnstudy.base import io

    results = hashed_outputs(
        runs,
        [
            "results/finetune/seeds0-1_networks.csv",  # the test config's one seed block
            "results/finetune/seeds0-1_along.csv",
            "results/finetune/seeds0-1_arms.csv",
            "results/finetune/along_mean.csv",
            "results/summary/finetune.json",
            "results/paper/macros/finetune.tex",
            "results/paper/tables/finetune.tex",
            "results/paper/figures/finetune.pdf",
        ],
    )
    summary = io.read_json(results / "summary" / "finetune.json")
    for cell in summary["by_rate"].values():
        for stream in finetune.STREAMS:
            assert cell[stream]["frozen"]["var_to_start"]["mean"] == 0  # frozen: the statistics never move
            assert cell[stream]["live"]["var_to_start"]["mean"] > 0


# ---- arms, conditions and controls (issue 29, item 10) ---------------------------------------


def test_momentum_zero_arm_is_training_mode_with_the_running_statistics_fixed():
    """Batch statistics in the forward and backward pass, running statistics untouched: PyTorch's
    training mode with BatchNorm1d's momentum 0 (its rule keeps the running averages exactly)."""
    state, spec = _state(seed=4)
    x, y = _data(24)
    rows = np.random.default_rng(5).permutation(24).astype(np.int64)
    got = finetune.run(state, spec, x, y, rows, 4, 1e-2, False, momentum=0.0)
    net = _module(state, spec)
    for mod in net.modules():
        if isinstance(mod, torch.nn.BatchNorm1d):
            mod.momentum = 0.0
    spec0 = model.NetSpec("batchnorm", WIDTHS, groups=1, eps=1e-5, momentum=0.0)
    want = _torch_finetune(state, spec0, x, y, rows, 4, 1e-2, False)
    for layer in model.NORMS:
        for k in ("running_mean", "running_var"):
            assert got[f"{layer}.{k}"].tobytes() == state[f"{layer}.{k}"].tobytes()
    for k in got:  # the biases before a normaliser apart: zero gradient but for rounding, which Adam scales up
        if "running" not in k and "num_batches" not in k and k not in ("0.bias", "3.bias"):
            np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-5, err_msg=k)
    live = finetune.run(state, spec, x, y, rows, 4, 1e-2, False)
    assert live["1.running_mean"].tobytes() != state["1.running_mean"].tobytes()  # the live arm moves them
    # the weights of the momentum-0 arm are the live arm's: momentum only touches the running statistics
    assert all(got[k].tobytes() == live[k].tobytes() for k in got if "running" not in k and "num_batches" not in k)


@pytest.mark.parametrize("normaliser", ["none", "layernorm"])
def test_control_networks_fine_tune_as_pytorch_does(normaliser):
    spec = model.NetSpec(normaliser, WIDTHS, groups=1, eps=1e-5, momentum=0.1)
    state = model.initial_state(spec, 3)
    x, y = _data(20)
    rows = np.random.default_rng(6).permutation(20).astype(np.int64)
    got = finetune.run(state, spec, x, y, rows, 2, 1e-2, False)
    want = _torch_finetune(state, spec, x, y, rows, 2, 1e-2, False)
    assert sorted(got) == sorted(state)
    for k in got:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-5, err_msg=k)
    with pytest.raises(ValueError, match="no running statistics to freeze"):
        finetune.run(state, spec, x, y, rows, 2, 1e-2, True)


def test_shift_is_float32_scale_then_offset_and_arms_are_named():
    x = np.array([[0.5, -1.25], [2.0, 3.0]], np.float64)
    got = finetune.shift_inputs(x, 1.5, 0.25)
    assert got.dtype == np.float32
    assert got.tolist() == [[1.0, -1.625], [3.25, 4.75]]
    assert finetune.arm_settings("momentum0") == ("batchnorm", False, 0.0)
    assert finetune.arm_settings("frozen") == ("batchnorm", True, None)
    assert finetune.arm_settings("live") == ("batchnorm", False, None)
    assert finetune.arm_settings("layernorm") == ("layernorm", False, None)
    with pytest.raises(ValueError, match="unknown fine-tuning arm"):
        finetune.arm_settings("ghost")


def _conv_state(seed=6, tracked=5):
    """A small residual convolutional batch-norm network (8x8 images) with non-trivial affine
    parameters and running statistics."""
    from bnstudy.nets import conv_train

    spec = conv_train.ConvSpec("batchnorm", (4, 6, 6), 2, strides=(2, 1, 1), skips=(-1, -1, 1))
    return _perturbed(conv_train.initial_state(spec, seed), conv_train.norm_keys(spec), seed, tracked), spec


def test_conv_finetuning_agrees_with_pytorch_batchnorm2d_in_a_training_loop():
    """The convolutional network: frozen (BatchNorm2d in eval mode) against PyTorch's loop with
    autograd and torch.optim.Adam on the same batches; live at learning rate 0, the running
    statistics following every batch as in PyTorch's training mode (the weights stay bit for bit;
    live Adam steps are not compared: a convolution's bias before batch norm gets gradients that are
    zero in exact arithmetic, whose rounding Adam turns into full steps, as in the MLP)."""
    from bnstudy.nets import conv_torch

    state, spec = _conv_state()
    rng = np.random.default_rng(7)
    x = rng.standard_normal((24, 64)).astype(np.float32)
    y = np.arange(24, dtype=np.int64) % 3
    rows = finetune.stream_rows(y, "shuffle", 0, 0, 12, 3)
    xt, yt = conv_torch.images(x), torch.from_numpy(y)
    for frozen, lr in ((True, 1e-2), (False, 0.0)):
        ours = finetune.run(state, spec, x, y, rows, 3, lr, frozen=frozen)
        net = conv_torch.build_module(spec, state=state)
        net.eval() if frozen else net.train()
        opt = torch.optim.Adam(net.parameters(), lr=lr, foreach=False)
        for k in range(len(rows) // 3):
            idx = torch.from_numpy(rows[k * 3 : (k + 1) * 3])
            loss = torch.nn.functional.cross_entropy(net(xt[idx]), yt[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        for key, value in net.state_dict().items():
            value = value.numpy()
            if "num_batches" in key:
                assert int(ours[key]) == int(value) == 5 + (0 if frozen else len(rows) // 3), key
            elif ("running" in key) == frozen:  # frozen: statistics never written; live at lr 0: weights kept
                assert ours[key].tobytes() == state[key].tobytes() and np.array_equal(value, state[key]), key
            else:
                assert np.abs(ours[key] - state[key]).max() > 1e-4, key  # it learned, or the statistics moved
                np.testing.assert_allclose(ours[key], value, rtol=1e-4, atol=5e-5, err_msg=key)


# ---- fine-tuning jobs per seed block ---------------------------------------------------------


def _loop_rows(seeds, major):
    """Rows in the nesting one job over ``seeds`` writes: ``major`` outside the seeds (the arms'
    condition) or seeds outermost (``major=None``: the fine-tuning runs)."""
    import itertools

    outer = ["same", "shifted"] if major else [None]
    rows = []
    for condition, seed, lr, stream in itertools.product(outer, seeds, [1e-3, 1e-2], finetune.STREAMS):
        rows.append({"seed": seed, "lr": lr, "stream": stream} | ({"condition": condition} if major else {}))
    return rows


@pytest.mark.parametrize("major", [None, "condition"])
def test_the_seed_blocks_rows_join_in_the_order_of_one_job_over_every_seed(major, tmp_path):
    import pandas as pd

    from bnstudy.base import io

    whole = pd.DataFrame(_loop_rows([0, 1, 2, 3, 4], major))
    paths = []
    for k, seeds in enumerate(([0, 1], [2, 3], [4])):
        paths.append(tmp_path / f"block{k}.csv")
        io.write_table(paths[-1], pd.DataFrame(_loop_rows(seeds, major)))
    pd.testing.assert_frame_equal(io.read_blocks(paths, major), whole)
    if major:  # block after block would put seed 0's shifted rows before seed 2's same rows
        assert not io.read_blocks(paths).equals(whole)
    io.write_table(tmp_path / "whole.csv", whole)
    pd.testing.assert_frame_equal(io.read_blocks([tmp_path / "whole.csv"], major), whole)


def test_a_single_fine_tuning_rate_is_refused_before_any_job():
    """The section sets the smaller rate against the larger (\\finetuneRateOne, \\finetuneRateTwo): a config
    with one rate is refused by the schema in one line naming the key, not by LaTeX at the end of a build."""
    import yaml

    from bnstudy.base.config import ConfigError, load_schema, validate
    from conftest import ROOT

    config = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    schema = load_schema(ROOT / "workflow" / "schemas" / "config.schema.yaml")
    validate(config, schema)
    config["finetune"]["lrs"] = [1e-3]
    with pytest.raises(ConfigError, match=r"finetune\.lrs"):
        validate(config, schema)


def test_the_contrast_counts_say_each_count_once_and_never_a_zero():
    from bnstudy.studies.finetune.sentences import contrast_counts, side_clause

    assert side_clause(3, 1, 8) == "lies below zero in 3 cells, above zero in 1 and contains zero in 4"
    assert side_clause(0, 0, 8) == "contains zero in all 8 cells"
    assert side_clause(8, 0, 8) == "lies below zero in all 8 cells"  # never "in 8 cells" beside "in all 8"
    assert side_clause(0, 4, 4) == "lies above zero in all 4 cells"
    assert side_clause(2, 1, 4) == "lies below zero in 2 cells, above zero in 1 and contains zero in 1"
    assert side_clause(1, 0, 4) == "lies below zero in 1 cell and contains zero in 3"
    assert "1 cells" not in side_clause(2, 1, 4)
    keys = [(c, k) for c in ("same", "shifted") for k in ("statistics_update", "live_minus_none")]
    below = dict.fromkeys(keys, 0) | {("shifted", "live_minus_none"): 2}
    text = contrast_counts(below, dict.fromkeys(keys, 0), 8)
    assert " 0 " not in text and "in 0" not in text and "layer norm" not in text
    assert text.endswith("that of live batch norm's change minus no normaliser's contains zero in all 8 cells as "
                         "trained; shifted, it lies below zero in 2 cells and contains zero in 6")  # fmt: skip
    # a batch-norm-specific part, a member of the declared family, is counted at the family's level in
    # its own paragraph: never a second, unadjusted verdict here
    reported = contrast_counts(below, dict.fromkeys(keys, 0), 8, ("live_minus_none",))
    assert "no normaliser" not in reported and reported.startswith("the interval of the statistics update")
    assert text.startswith("the interval of the statistics update (live minus momentum~0) contains zero in all 8 cells "
                           "in both conditions;")  # fmt: skip


def test_the_controls_are_the_grids_normalisers_without_running_statistics():
    from bnstudy.studies.finetune.macros import controls_macros

    two = controls_macros(["live", "frozen", "momentum0", "none", "layernorm"])
    assert two["finetuneControlsSentence"].startswith("Two controls") and "finetuneOneControl" not in two
    one = controls_macros(["live", "frozen", "momentum0", "none"])
    assert one["finetuneControlsSentence"] == (
        "One control with no running statistics, the grid's networks without a normaliser,"
    )
    assert one["finetuneOneControl"] == "1" and one["finetuneControlsCaption"] == "the networks without a normaliser"


@pytest.mark.parametrize("split", [(0, 0), (4, 0), (0, 4), (1, 0), (2, 1), (1, 1), (0, 3)])
@pytest.mark.parametrize("controls", [(), ("live_minus_none",), ("live_minus_none", "live_minus_layernorm")])
def test_the_contrast_counts_in_their_place_in_every_split(split, controls):
    """The exploratory counts rendered in the section for every split of a condition's four cells: never
    a control's part (its family's paragraph counts it), never 'in 1 cells', each verdict once."""
    import re
    from pathlib import Path

    from bnstudy.studies.finetune.sentences import contrast_counts
    from test_sentences import in_place, problems

    keys = [(c, k) for c in ("same", "shifted") for k in ("statistics_update", "gradient_path", *controls)]
    below = {key: split[0] if key[0] == "same" else split[1] for key in keys}
    above = {key: split[1] if key[0] == "same" else 0 for key in keys}
    text = contrast_counts(below, above, 4, controls)
    assert text.count("that of") == 1 and "normaliser" not in text and "layer norm" not in text, text
    assert not re.search(r"\b1 cells\b", text) and " 0 " not in text and "in 0" not in text, text
    section = (Path(__file__).resolve().parents[2] / "paper" / "sections" / "finetune.tex").read_text()
    (window,) = in_place("finetune.tex", "finetuneContrastCounts", text)
    assert not problems(window), window
    assert "\\finetuneContrastCounts" in section
