"""Training-mode serving with live running statistics (bnstudy.studies.serving.science): the stream kernel
bit for bit against the documented steps in NumPy and within rounding against PyTorch,
the streams, the measures by hand, the summary's intervals, the config checks, and the
rules' outputs in the test config's manifest."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats as sps

from bnstudy.base.config import ConfigError, check_cross_fields
from bnstudy.nets import model
from bnstudy.studies.serving import report as serving_report
from bnstudy.studies.serving import science as serving
from conftest import hashed_outputs
from serving_families import FAMILIES, SECTION

WIDTHS = (6, 5, 4, 3)


def _network(seed=0, m=2, momentum=0.1, tracked=7):
    """A stack of ``m`` tiny batch-norm networks with non-trivial affine and running statistics."""
    spec = model.NetSpec("batchnorm", WIDTHS, groups=1, eps=1e-5, momentum=momentum)
    rng = np.random.default_rng(seed)
    states = []
    for s in range(m):
        state = model.initial_state(spec, s)
        for layer in model.NORMS:
            f = state[f"{layer}.weight"].shape[0]
            state[f"{layer}.weight"] = (0.5 + rng.random(f)).astype(np.float32)
            state[f"{layer}.bias"] = (rng.random(f) - 0.5).astype(np.float32)
            state[f"{layer}.running_mean"] = (rng.random(f) - 0.5).astype(np.float32)
            state[f"{layer}.running_var"] = (0.5 + rng.random(f)).astype(np.float32)
            state[f"{layer}.num_batches_tracked"] = np.array(tracked, np.int64)
        states.append(state)
    return model.stack(states), spec


def _data(n=23, seed=1):
    rng = np.random.default_rng(seed)
    return (rng.random((n, WIDTHS[0])) * 4 - 2).astype(np.float32), np.arange(n, dtype=np.int64) % 3


def _reference(state, spec, x, batches):
    """The documented serving arithmetic for one network, one float32 operation at a time."""
    f32 = np.float32
    st = {k: np.array(v, copy=True) for k, v in state.items()}
    eps = f32(spec.eps)
    tracked = int(st["1.num_batches_tracked"])
    labels = []

    def linear(a, w, b):
        out = np.tile(b, (a.shape[0], 1))
        for k in range(a.shape[1]):
            out = out + a[:, k : k + 1] * w[:, k][None, :]
        return out

    def norm(h, layer, t):
        n = f32(h.shape[0])
        mean = np.zeros(h.shape[1], f32)
        for r in range(h.shape[0]):
            mean = mean + h[r]
        mean = mean / n
        var = np.zeros(h.shape[1], f32)
        for r in range(h.shape[0]):
            d = h[r] - mean
            var = var + d * d
        var = var / n
        invstd = f32(1) / np.sqrt(var + eps)
        y = ((h - mean) * invstd) * st[f"{layer}.weight"] + st[f"{layer}.bias"]
        factor = f32(1) / f32(t) if spec.momentum is None else f32(spec.momentum)
        keep = f32(1) - factor
        st[f"{layer}.running_mean"] = keep * st[f"{layer}.running_mean"] + factor * mean
        st[f"{layer}.running_var"] = keep * st[f"{layer}.running_var"] + factor * (var * (n / (n - f32(1))))
        return np.where(y > 0, y, f32(0))

    for rows in batches:
        tracked += 1
        a = norm(linear(x[rows], st["0.weight"], st["0.bias"]), "1", tracked)
        a = norm(linear(a, st["3.weight"], st["3.bias"]), "4", tracked)
        labels.append(np.argmax(linear(a, st["6.weight"], st["6.bias"]), axis=1))
    return np.array(labels), st


@pytest.mark.parametrize("momentum", [0.1, 0.5, None])
def test_serving_is_the_documented_arithmetic_bit_for_bit(momentum):
    stacked, spec = _network(momentum=momentum)
    x, y = _data()
    batches = serving.stream_batches(serving.stream_rows(y, "random", 3, passes=2), len(y), 5)
    labels, after = serving.serve_stack(stacked, spec, x, batches)
    for i, state in enumerate(model.unstack(stacked)):
        want_labels, want = _reference(state, spec, x, batches)
        assert np.array_equal(labels[i], want_labels)
        for layer in ("1", "4"):
            for name in ("running_mean", "running_var"):
                assert after[f"{layer}.{name}"][i].tobytes() == want[f"{layer}.{name}"].tobytes(), (layer, name)
            assert int(after[f"{layer}.num_batches_tracked"][i]) == 7 + len(batches)


def test_serving_agrees_with_pytorch_training_mode():
    stacked, spec = _network()
    x, y = _data()
    batches = serving.stream_batches(serving.stream_rows(y, "sorted", 0), len(y), 4)
    labels, after = serving.serve_stack(stacked, spec, x, batches)
    for i, state in enumerate(model.unstack(stacked)):
        net = model.build_module(spec)
        net.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in state.items()})
        net.train()
        with torch.no_grad():
            got = [net(torch.from_numpy(x[rows])).argmax(1).numpy() for rows in batches]
        assert np.array_equal(labels[i], np.array(got))
        for layer in ("1", "4"):
            for name in ("running_mean", "running_var"):
                torch_value = net.state_dict()[f"{layer}.{name}"].numpy()
                np.testing.assert_allclose(after[f"{layer}.{name}"][i], torch_value, rtol=1e-5, atol=1e-6)


def test_serving_a_convolutional_network_agrees_with_pytorch_training_mode():
    """The same stream through the convolutional network (strides, a residual connection) and its
    PyTorch module in training mode: labels, running statistics and batch counts after the stream."""
    from bnstudy.nets import conv_torch, conv_train

    spec = conv_train.ConvSpec("batchnorm", (4, 4), 2, strides=(2, 1), skips=(-1, 0))
    rng = np.random.default_rng(5)
    x = rng.standard_normal((48, 64)).astype(np.float32)
    y = rng.integers(0, 10, 48).astype(np.int64)
    stacked, _ = spec.train_models(model_recipe(), [0, 1], x, y)
    batches = serving.stream_batches(serving.stream_rows(y, "random", 0), len(y), 8)
    labels, after = serving.serve_stack(stacked, spec, x, batches)
    for i, state in enumerate(model.unstack(stacked)):
        net = conv_torch.build_module(spec, state=state).train()
        with torch.no_grad():
            got = [net(conv_torch.images(x[rows])).argmax(1).numpy() for rows in batches]
        assert np.array_equal(labels[i], np.array(got))
        for layer in spec.norm_layers():
            for name in ("running_mean", "running_var"):
                torch_value = net.state_dict()[f"{layer}.{name}"].numpy()
                np.testing.assert_allclose(after[f"{layer}.{name}"][i], torch_value, rtol=1e-5, atol=1e-6)
            assert int(after[f"{layer}.num_batches_tracked"][i]) == int(state[f"{layer}.num_batches_tracked"]) + 6
        assert not np.array_equal(after["1.running_mean"][i], state["1.running_mean"])


def model_recipe():
    from bnstudy.nets.recipe import Recipe

    return Recipe(batch_size=8, epochs=1)


def test_serving_leaves_the_trained_stack_unchanged_and_moves_only_running_statistics():
    stacked, spec = _network()
    copy = {k: v.copy() for k, v in stacked.items()}
    x, y = _data()
    _, after = serving.serve_stack(stacked, spec, x, serving.stream_batches(np.arange(len(y)), len(y), 4))
    for k, v in stacked.items():
        assert v.tobytes() == copy[k].tobytes(), k
        moved = "running" in k or "num_batches" in k
        assert (after[k].tobytes() != v.tobytes()) == moved, k


def test_serving_refuses_a_network_without_running_statistics():
    spec = model.NetSpec("layernorm", WIDTHS, groups=1)
    stacked = model.initial_stack(spec, [0])
    x, y = _data()
    with pytest.raises(ValueError, match="no"):
        serving.serve_stack(stacked, spec, x, serving.stream_batches(np.arange(len(y)), len(y), 4))


def test_streams_are_seeded_passes_over_every_row():
    y = np.array([2, 0, 1, 2, 0, 1, 1, 2, 0, 0, 2])
    n = len(y)
    for stream in serving.STREAMS:
        order = serving.stream_rows(y, stream, 5, passes=3)
        assert order.dtype == np.int64 and len(order) == 3 * n
        for p in range(3):
            assert sorted(order[p * n : (p + 1) * n]) == list(range(n))
        assert np.array_equal(order, serving.stream_rows(y, stream, 5, passes=3))
        assert not np.array_equal(order, serving.stream_rows(y, stream, 6, passes=3))
    order = serving.stream_rows(y, "sorted", 5, passes=3).reshape(3, n)
    assert all(list(y[o]) == sorted(y) for o in order)  # classes ascending in every pass
    assert len({tuple(o) for o in order}) > 1  # the order within a class changes between passes
    with pytest.raises(ValueError):
        serving.stream_rows(y, "backwards", 0)


def test_stream_batches_cut_each_pass_and_drop_its_leftover_rows():
    order = np.array([4, 0, 3, 1, 2, 10, 11, 12, 13, 14]) % 5
    batches = serving.stream_batches(order, 5, 2)
    assert batches.tolist() == [[4, 0], [3, 1], [0, 1], [2, 3]]
    with pytest.raises(ValueError):
        serving.stream_batches(order, 5, 6)


def test_movement_and_batch_accuracy_by_hand():
    before = {"1.running_mean": [[0.0, 1.0]], "1.running_var": [[4.0, 1.0]]}
    before |= {"4.running_mean": [[0.0]], "4.running_var": [[1.0]]}
    after = {"1.running_mean": [[1.0, 1.0]], "1.running_var": [[2.0, 1.5]]}
    after |= {"4.running_mean": [[-3.0]], "4.running_var": [[1.0]]}
    moved = serving.movement(before, after, eps=0.0)
    assert moved["mean_shift"][0] == pytest.approx((0.5 + 0.0 + 3.0) / 3, abs=1e-15)
    assert moved["var_change"][0] == pytest.approx((0.5 + 0.5 + 0.0) / 3, abs=1e-15)
    labels = np.array([[[1, 0], [2, 2]]])
    y = np.array([1, 0, 2, 0])
    assert serving.batch_accuracy(labels, y, np.array([[0, 1], [2, 3]])).tolist() == [[1.0, 0.5]]


def _networks():
    rows = []
    for b in (4, 16):
        for seed, (acc_r, acc_s, before, after_r, after_s) in enumerate(
            [(0.9, 0.2, 0.95, 0.96, 0.90), (0.8, 0.1, 0.93, 0.93, 0.85), (0.85, 0.3, 0.94, 0.92, 0.86)]
        ):
            for stream, acc, after in (("random", acc_r, after_r), ("sorted", acc_s, after_s)):
                rows.append(
                    dict(
                        train_batch_size=b,
                        stream=stream,
                        seed=seed,
                        test_rows=899,
                        served=896,
                        stream_accuracy=acc,
                        inference_before=before,
                        inference_after=after,
                        mean_shift=0.1,
                        var_change=0.2,
                    )
                )
    return rows


def test_summary_intervals_are_student_t_over_seeds_paired_by_seed():
    summary = serving.summarise(_networks(), 0.95, SECTION["unadjusted"])  # each interval at 95%
    change = summary["4"]["sorted"]["inference_change"]
    d = [0.90 - 0.95, 0.85 - 0.93, 0.86 - 0.94]
    mean = sum(d) / 3
    sd = math.sqrt(sum((v - mean) ** 2 for v in d) / 2)
    half = sps.t.ppf(0.975, 2) * sd / math.sqrt(3)
    assert change["mean"] == pytest.approx(mean, abs=1e-15)
    assert change["ci"] == pytest.approx([mean - half, mean + half], abs=1e-12)
    assert change["seeds"] == 3
    gap = summary["16"]["sorted_minus_random"]["stream_accuracy"]
    assert gap["mean"] == pytest.approx(-0.65, abs=1e-12)
    assert gap["ci"][0] < -0.65 < gap["ci"][1]


def test_along_means_average_the_seeds_per_position():
    along = [
        dict(train_batch_size=4, stream=s, seed=seed, position=p, accuracy=0.25 * (seed + p))
        for s in ("sorted", "random")
        for seed in (0, 1)
        for p in (1, 0)
    ]
    means = serving.along_means(along)
    assert [(r["stream"], r["position"]) for r in means] == [("random", 0), ("random", 1), ("sorted", 0), ("sorted", 1)]
    assert [r["accuracy"] for r in means] == [0.125, 0.375, 0.125, 0.375]


def test_macros_and_table_print_the_summary():
    summary = serving.summarise(_networks(), 0.95, SECTION["bonferroni"])
    settings = dict(
        batch_size=16,
        passes=1,
        batches=56,
        served=896,
        test_rows=899,
        stream_rows=899,
        held_out_rows=449,
        held_out=0.5,
        replicates=1,
        momentum=0.1,
        confidence=0.95,
    )
    m = serving_report.macros(summary, settings, FAMILIES["bonferroni"])
    assert m["servingSortedChangeBFour"] == "$-7.0$"  # (-5 - 8 - 8) / 3 points
    assert m["servingRandomServedBOneSix"] == "85.0\\%"
    assert m["servingSortedServedMin"] == m["servingSortedServedMax"] == "20.0\\%"
    assert m["servingSeeds"] == "3" and m["servingBatches"] == "56"
    assert m["servingTrainedWeight"] == "0.0027"  # 0.9 ** 56
    assert m["servingSortedMinusRandomServedMin"] == m["servingSortedMinusRandomServedMax"] == "$-65.0$"
    assert m["servingSortedMinusRandomServedLossCells"] == "2"
    # both -7.0 [-13.2, -0.8] (Bonferroni over the 2 training batch sizes: t at 1 - 0.025 / 2, 2 df)
    assert m["servingSortedLossCells"] == "2" and m["servingSortedGainCells"] == "0"
    assert serving_report.points(-0.00049) == "$-0.05$" and serving_report.points(0.0123) == "$+1.2$"
    rows = serving_report.table_rows(summary)
    assert [r[0] for r in rows] == ["4", "16"] and all(len(r) == len(serving_report.HEADER) for r in rows)


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("train_batch_sizes", [4, 8], "config error: serving.train_batch_sizes[1]: 8 is not one of grid.batch_sizes"),
        ("batch_size", 900, "config error: serving.batch_size: 900 is larger than the test half"),
        ("normaliser", "batchrenorm", None),
    ],
)
def test_serving_config_cross_checks(test_config, key, value, message):
    check_cross_fields(test_config)
    test_config["serving"][key] = value
    if message is None:
        check_cross_fields(test_config)
        test_config["normalisers"] = [n for n in test_config["normalisers"] if n != value]
        message = f"config error: serving.normaliser: {value} is not one of normalisers"
    with pytest.raises(ConfigError) as e:
        check_cross_fields(test_config)
    assert str(e.value).startswith(message)


def test_serving_batch_size_may_be_every_streamed_row_and_no_more(test_config):
    import math

    n = test_config["split"]["test_size"]
    streamed = n - math.floor(test_config["serving"]["held_out"] * n)
    test_config["serving"]["batch_size"] = streamed
    check_cross_fields(test_config)
    test_config["serving"]["batch_size"] = streamed + 1
    with pytest.raises(ConfigError, match="config error: serving.batch_size: .* larger than the streamed rows"):
        check_cross_fields(test_config)


def _cell(m=3, n_test=40):
    """A trained cell of ``m`` tiny networks (trained at batch 4) and its test half of ``n_test`` rows."""
    from bnstudy.evaluation.accuracy import TrainedCell

    stacked, spec = _network(seed=4, m=m)
    x, y = _data(n_test, seed=6)
    metas = [{"seed": s, "batch_size": 4} for s in (5, 2, 9)[:m]]
    return TrainedCell(stacked, spec, metas, x, y, (1.0, 0.0))


def test_the_control_serves_training_rows_as_a_random_stream_and_scores_the_held_out_test_rows():
    """serve_training_rows: the training rows of training_rows(...), cut as a stream and served through
    serve_stack, the model left behind scored on the random stream's held-out test rows, bit for bit;
    before the stream, the same accuracy as serve_cell's."""
    from bnstudy.evaluation.accuracy import inference_accuracy

    cell = _cell()
    x_train, y_train = _data(31, seed=8)
    rows = serving.serve_training_rows(cell, x_train, y_train, 5, 3, passes=2, held_out=0.25, replicates=2)
    networks, _ = serving.serve_cell(cell, 5, 3, passes=2, held_out=0.25, replicates=2)
    served, held = serving.held_out_split(cell.y, 0.25, 3)
    assert [(r["replicate"], r["seed"]) for r in rows] == [(r, s) for r in range(2) for s in (5, 2, 9)]
    for r in range(2):
        order = serving.training_rows(31, len(served), 3, 2, r)
        batches = serving.stream_batches(order, len(served), 5)
        labels, after = serving.serve_stack(cell.stacked, cell.spec, x_train, batches)
        acc = inference_accuracy(after, cell.spec, cell.x[held], cell.y[held])
        moved = serving.movement(cell.stacked, after, cell.spec.eps)
        for i, row in enumerate(r_ for r_ in rows if r_["replicate"] == r):
            assert row["stream"] == "training_rows" and row["train_batch_size"] == 4
            assert row["inference_after"] == float(acc[i])
            assert row["stream_accuracy"] == np.count_nonzero(labels[i] == y_train[batches]) / batches.size
            assert row["mean_shift"] == float(moved["mean_shift"][i])
            assert row["served"] == batches.size == next(x["served"] for x in networks)
    before = {(x["seed"], x["replicate"]): x["inference_before"] for x in networks if x["stream"] == "random"}
    assert all(row["inference_before"] == before[(row["seed"], row["replicate"])] for row in rows)
    # the control moves the statistics away from where the test rows' stream leaves them
    random = {(x["seed"], x["replicate"]): x["mean_shift"] for x in networks if x["stream"] == "random"}
    assert any(row["mean_shift"] != random[(row["seed"], row["replicate"])] for row in rows)


def test_the_control_needs_as_many_training_rows_as_a_stream_serves(test_config):
    test_config["serving"]["training_rows"] = True
    check_cross_fields(test_config)
    test_config["split"]["test_size"] = 1600  # 1797 - 1600 = 197 training rows; about 800 test rows served
    with pytest.raises(ConfigError, match=r"config error: serving.training_rows: a stream serves \d+ test rows, more"):
        check_cross_fields(test_config)
    test_config["serving"]["training_rows"] = False  # off: the training rows are not drawn
    check_cross_fields(test_config)


def test_serving_outputs_are_built_and_in_the_manifest(runs):
    from bnstudy.base import io

    results = hashed_outputs(
        runs,
        [
            "results/serving/networks.csv",
            "results/serving/along.csv",
            "results/summary/serving.json",
            "results/paper/macros/serving.tex",
            "results/paper/tables/serving.tex",
            "results/paper/figures/serving.pdf",
        ],
    )
    summary = io.read_json(results / "summary" / "serving.json")
    for cell in summary["by_train_batch_size"].values():
        for stream in serving.STREAMS:
            assert 0 <= cell[stream]["stream_accuracy"]["mean"] <= 1
        assert cell["sorted"]["stream_accuracy"]["mean"] < cell["random"]["stream_accuracy"]["mean"]
