"""The serving study by value: the streams, the movement of the running statistics, the
batch accuracies, the summary over seeds, the per-position means, every macro and every
table cell.

The serving kernel itself is held against NumPy and PyTorch in tests/studies/test_serving.py; here
each output is computed independently on tiny fixed inputs (plain Python floats,
NumPy, ``scipy.stats.t``) and compared whole: the complete macro dict with ``==``, every
table row, the table file's text, every key of every summary entry. The summary for the
macros and the table is written by hand so that its intervals take every branch: wholly
below zero, wholly above, containing zero, and ending exactly at zero.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from bnstudy.base.runtime import derive_seed
from bnstudy.base.stats import adjusted_confidence
from bnstudy.studies.serving import estimates
from bnstudy.studies.serving import report as serving_report
from bnstudy.studies.serving import science as serving
from serving_families import FAMILIES, SECTION

ADJUSTED = SECTION["bonferroni"]  # the test config's declarations, as the config's section

# ---- the streams ------------------------------------------------------------------------------

Y = np.array([i * 7 % 3 for i in range(40)]) + np.array([0, 0, 0, 2] * 10)  # classes 0..4, uneven counts


def _permutation(seed, stream_index, p, n):
    """The documented seeding: PCG64 from (seed, STREAM_SERVING = 17, stream index, pass)."""
    return np.random.Generator(np.random.PCG64(derive_seed(seed, 17, stream_index, p))).permutation(n)


def test_random_stream_is_one_seeded_permutation_per_pass():
    order = serving.stream_rows(Y, "random", 11, passes=3)
    want = np.concatenate([_permutation(11, 0, p, len(Y)) for p in range(3)])
    assert order.dtype == np.int64
    assert order.tolist() == want.tolist()


def test_sorted_stream_orders_classes_ascending_keeping_the_permutation_within_a_class():
    y = list(Y)
    order = serving.stream_rows(Y, "sorted", 11, passes=2)
    want = []
    for p in range(2):
        perm = _permutation(11, 1, p, len(y)).tolist()
        want += [i for c in sorted(set(y)) for i in perm if y[i] == c]
    assert order.dtype == np.int64
    assert order.tolist() == want
    # an unstable sort would shuffle the rows within a class: the inputs are long enough to tell
    perm = _permutation(11, 1, 0, len(y))
    assert perm[np.argsort(Y[perm])].tolist() != want[: len(y)]


def test_streams_accept_a_plain_list_of_labels():
    assert serving.stream_rows(list(Y), "sorted", 2).tolist() == serving.stream_rows(Y, "sorted", 2).tolist()


def test_one_pass_by_default():
    for stream in serving.STREAMS:
        order = serving.stream_rows(Y, stream, 9)
        assert order.tolist() == serving.stream_rows(Y, stream, 9, passes=1).tolist() and len(order) == len(Y)


def test_zero_passes_serve_no_rows():
    for stream in serving.STREAMS:
        order = serving.stream_rows(Y, stream, 4, passes=0)
        assert order.dtype == np.int64 and order.shape == (0,)


def test_an_unknown_stream_is_refused_by_name():
    with pytest.raises(ValueError, match=r"unknown stream 'reversed'; expected one of \('random', 'sorted'\)"):
        serving.stream_rows(Y, "reversed", 0)


def test_stream_batches_cut_every_pass_and_drop_its_last_rows():
    order = np.array([6, 2, 0, 5, 1, 3, 4, 13, 12, 11, 10, 9, 8, 7]) % 7  # two passes of n = 7
    batches = serving.stream_batches(order, 7, 3)
    assert batches.dtype == np.int64 and batches.flags["C_CONTIGUOUS"]
    assert batches.tolist() == [[6, 2, 0], [5, 1, 3], [6, 5, 4], [3, 2, 1]]
    assert serving.stream_batches(order, 7, 2).tolist() == [[6, 2], [0, 5], [1, 3], [6, 5], [4, 3], [2, 1]]


def test_stream_batches_are_int64_whatever_the_order_integer_type():
    order = np.array([2, 0, 3, 1, 4, 1, 4, 0, 2, 3], np.int32)
    batches = serving.stream_batches(order, 5, 2)
    assert batches.dtype == np.int64
    assert batches.tolist() == [[2, 0], [3, 1], [1, 4], [0, 2]]


def test_stream_batches_accept_the_bounds_two_and_n():
    order = [3, 0, 2, 1, 4]
    assert serving.stream_batches(order, 5, 5).tolist() == [[3, 0, 2, 1, 4]]
    assert serving.stream_batches(order, 5, 2).tolist() == [[3, 0], [2, 1]]


@pytest.mark.parametrize("b", [1, 6])
def test_stream_batches_refuse_a_batch_size_outside_two_to_n(b):
    with pytest.raises(ValueError, match=rf"serving needs 2 <= batch_size <= n rows; got {b} for 5"):
        serving.stream_batches(np.arange(5), 5, b)


# ---- movement and batch accuracy --------------------------------------------------------------


def _state(rng, features, shift=0.0):
    out = {}
    for layer, f in zip(("1", "4"), features):
        out[f"{layer}.running_mean"] = (rng.random((2, f)) * 2 - 1 + shift).astype(np.float32)
        out[f"{layer}.running_var"] = (0.6 + rng.random((2, f)) * 3).astype(np.float32)
    return out


def test_movement_is_float64_and_exact_against_plain_python_floats():
    rng = np.random.default_rng(5)
    before, after = _state(rng, (3, 2)), _state(rng, (3, 2), shift=0.3)
    eps = 0.5
    moved = serving.movement(before, after, eps)
    assert sorted(moved) == ["mean_shift", "var_change"]
    for i in range(2):
        shift, change = [], []
        for layer in ("1", "4"):  # layer 1's features, then layer 2's
            for j in range(before[f"{layer}.running_mean"].shape[1]):
                m0, m1 = float(before[f"{layer}.running_mean"][i, j]), float(after[f"{layer}.running_mean"][i, j])
                v0, v1 = float(before[f"{layer}.running_var"][i, j]), float(after[f"{layer}.running_var"][i, j])
                shift.append(abs(m1 - m0) / math.sqrt(v0 + eps))
                change.append(abs(v1 - v0) / v0)
        assert moved["mean_shift"][i] == math.fsum(shift) / 5
        assert moved["var_change"][i] == math.fsum(change) / 5
    assert moved["mean_shift"].dtype == moved["var_change"].dtype == np.float64
    assert moved["mean_shift"].shape == moved["var_change"].shape == (2,)


def test_movement_by_hand_with_eps():
    before = {"1.running_mean": [[1.0, -2.0]], "1.running_var": [[3.0, 0.5]]}
    before |= {"4.running_mean": [[0.0]], "4.running_var": [[8.0]]}
    after = {"1.running_mean": [[3.0, -2.5]], "1.running_var": [[1.5, 1.0]]}
    after |= {"4.running_mean": [[-3.0]], "4.running_var": [[10.0]]}
    moved = serving.movement(before, after, eps=1.0)
    # shifts 2 / 2, 0.5 / sqrt(1.5), 3 / 3; changes 1.5 / 3, 0.5 / 0.5, 2 / 8
    assert moved["mean_shift"].tolist() == [pytest.approx((1 + 0.5 / math.sqrt(1.5) + 1) / 3, abs=1e-15)]
    assert moved["var_change"].tolist() == [pytest.approx((0.5 + 1 + 0.25) / 3, abs=1e-15)]


def test_batch_accuracy_counts_hits_per_model_and_batch():
    y = np.array([0, 1, 2, 1, 0, 2])
    batches = np.array([[5, 0, 3], [1, 4, 2]])
    labels = np.array([[[2, 0, 1], [1, 1, 1]], [[0, 0, 0], [1, 0, 2]]])  # (M = 2, K = 2, b = 3)
    acc = serving.batch_accuracy(labels, y, batches)
    assert acc.dtype == np.float64
    assert acc.tolist() == [[1.0, 1 / 3], [1 / 3, 1.0]]
    assert serving.batch_accuracy(labels, list(y), batches).tolist() == acc.tolist()


# ---- the summary over seeds -------------------------------------------------------------------


def _networks():
    """Two training batch sizes, three and four seeds, every value distinct; rows shuffled."""
    rows = []
    for b, seeds in ((32, (4, 1, 7, 2)), (8, (3, 0, 5))):
        for k, seed in enumerate(seeds):
            before = 0.9 + 0.011 * k + 0.0007 * b
            for stream, base in (("sorted", 0.31), ("random", 0.83)):
                rows.append(
                    dict(
                        train_batch_size=b,
                        stream=stream,
                        seed=seed,
                        test_rows=97,
                        served=96,
                        stream_accuracy=base + 0.013 * k**2 + 0.001 * b + 0.0003 * seed,
                        inference_before=before,
                        inference_after=before + (0.02 if stream == "random" else -0.05) + 0.007 * (k - seed % 3),
                        mean_shift=0.1 + 0.05 * k + 0.002 * b + (0.3 if stream == "sorted" else 0.0),
                        var_change=0.2 + 0.03 * seed + 0.001 * b + (0.11 if stream == "sorted" else 0.0),
                    )
                )
    order = np.random.default_rng(3).permutation(len(rows))
    return [rows[i] for i in order]


def _interval(values, confidence):
    v = np.array(values, np.float64)
    n = len(v)
    mean, sd = float(v.mean()), float(v.std(ddof=1))
    half = sps.t.ppf(1 - (1 - confidence) / 2, n - 1) * sd / math.sqrt(n)
    # one stream replicate: the crossed interval is the t interval over networks
    return {
        "mean": mean,
        "sd": sd,
        "ci": [mean - half, mean + half],
        "seeds": n,
        "networks": n,
        "streams": 1,
        "sd_networks": sd,
        "sd_streams": float("nan"),
        "df": float(n - 1),
    }


def _assert_same(got, want, path=()):
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), path
        for k in want:
            _assert_same(got[k], want[k], (*path, k))
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), path
        for i, (g, w) in enumerate(zip(got, want)):
            _assert_same(g, w, (*path, i))
    elif isinstance(want, int):
        assert got == want and isinstance(got, int), path
    elif isinstance(want, float) and math.isnan(want):
        assert math.isnan(got), path
    else:
        assert got == pytest.approx(want, rel=1e-12, abs=1e-14), path


@pytest.mark.parametrize("adjustment", list(SECTION))
@pytest.mark.parametrize("confidence", [0.9, 0.99])
def test_summary_is_every_measure_over_seeds_paired_by_seed(confidence, adjustment):
    """Each measure over seeds at ``confidence``; the members of the families (each stream's change and
    class-sorted minus random served accuracy) at their family's level over the 2 training batch sizes:
    Bonferroni-adjusted, or ``confidence`` where declared unadjusted."""
    networks = _networks()
    summary = serving.summarise(networks, confidence, SECTION[adjustment])
    level = adjusted_confidence(confidence, 2) if adjustment == "bonferroni" else confidence
    want = {}
    for b in (8, 32):
        rows = {
            s: sorted((r for r in networks if r["train_batch_size"] == b and r["stream"] == s), key=lambda r: r["seed"])
            for s in serving.STREAMS
        }
        cell = {}
        for s in serving.STREAMS:
            cell[s] = {m: _interval([r[m] for r in rows[s]], confidence) for m in serving.MEASURES}
            cell[s]["inference_change"] = _interval(
                [r["inference_after"] - r["inference_before"] for r in rows[s]], level
            )
        cell["sorted_minus_random"] = {
            m: _interval([so[m] - ra[m] for so, ra in zip(rows["sorted"], rows["random"])], c)
            for m, c in (("stream_accuracy", level), ("inference_after", confidence))
        }
        want[str(b)] = cell
    assert list(summary) == ["8", "32"]
    _assert_same(summary, want)
    # the t quantile with n - 1 degrees of freedom, not the normal one and not the default 95 %
    change = summary["8"]["random"]["inference_change"]
    ratio = (change["ci"][1] - change["mean"]) / (change["sd"] / math.sqrt(3))
    assert ratio == pytest.approx(sps.t.ppf(0.5 + level / 2, 2), rel=1e-12)
    before = summary["8"]["random"]["inference_before"]  # no member: at confidence under either declaration
    ratio = (before["ci"][1] - before["mean"]) / (before["sd"] / math.sqrt(3))
    assert ratio == pytest.approx(sps.t.ppf(0.5 + confidence / 2, 2), rel=1e-12)
    # what the summary applied, for its families key: each family over the 2 training batch sizes
    # (no control served: the adaptation family, declared, has no member and no level)
    record = {"adjustment": adjustment, "members": 2, "confidence": confidence, "level": level, "smallest_effect": 0.01}
    none = record | {"members": 0, "level": None}
    records = estimates.family_records(summary, confidence, SECTION[adjustment])
    assert records == {"serving_order": record, "serving_change": record, "serving_adaptation": none}


def _crossed_by_hand(t, confidence):
    """Two-way random-effects ANOVA of a networks x streams table, written out with NumPy."""
    t = np.asarray(t, np.float64)
    m, r = t.shape
    grand = t.mean()
    ss_n = r * ((t.mean(axis=1) - grand) ** 2).sum()
    ss_s = m * ((t.mean(axis=0) - grand) ** 2).sum()
    ss_e = ((t - grand) ** 2).sum() - ss_n - ss_s
    ms_n, ms_s, ms_e = ss_n / (m - 1), ss_s / (r - 1), ss_e / ((m - 1) * (r - 1))
    return grand, ms_n, ms_s, ms_e


def test_crossed_interval_is_the_two_way_random_effects_interval():
    # network effects, stream effects and an interaction, every cell distinct
    t = np.array([[0.81 + 0.03 * i - 0.05 * j + 0.004 * ((i * j) % 3) for j in range(3)] for i in range(4)])
    got = serving.crossed_interval(t, 0.95)
    grand, ms_n, ms_s, ms_e = _crossed_by_hand(t, 0.95)
    assert ms_n + ms_s - ms_e > max(ms_n, ms_s)  # the unfloored branch
    var = (ms_n + ms_s - ms_e) / 12
    df = (ms_n + ms_s - ms_e) ** 2 / (ms_n**2 / 3 + ms_s**2 / 2 + ms_e**2 / 6)
    half = sps.t.ppf(0.975, df) * math.sqrt(var)
    assert got["mean"] == pytest.approx(grand, rel=1e-14)
    assert got["df"] == pytest.approx(df, rel=1e-12)
    assert got["ci"] == pytest.approx([grand - half, grand + half], rel=1e-12)
    assert got["sd_networks"] == pytest.approx(math.sqrt((ms_n - ms_e) / 3), rel=1e-12)
    assert got["sd_streams"] == pytest.approx(math.sqrt((ms_s - ms_e) / 4), rel=1e-12)
    assert (got["networks"], got["streams"], got["seeds"]) == (4, 3, 4)
    # wider than the t interval over networks of the stream-averaged values, which ignores the streams
    naive = _interval(t.mean(axis=1).tolist(), 0.95)
    assert got["ci"][1] - got["ci"][0] > naive["ci"][1] - naive["ci"][0]


def test_crossed_interval_floors_a_variance_estimate_below_a_factors_own():
    # a large residual and no stream effect: MS_net + MS_stream - MS_res falls below MS_net
    t = np.array([[0.5, 0.7, 0.6], [0.8, 0.6, 0.7], [0.6, 0.6, 0.6], [0.7, 0.5, 0.6]])
    grand, ms_n, ms_s, ms_e = _crossed_by_hand(t, 0.9)
    assert ms_n + ms_s - ms_e < max(ms_n, ms_s)
    got = serving.crossed_interval(t, 0.9)
    floor, df = max((ms_n, 3), (ms_s, 2))
    half = sps.t.ppf(0.95, df) * math.sqrt(floor / 12)
    assert got["df"] == df
    assert got["ci"] == pytest.approx([grand - half, grand + half], rel=1e-12)
    assert got["sd_streams"] == 0.0 or got["sd_networks"] == 0.0


def test_crossed_interval_with_one_network_is_over_streams_and_with_one_cell_unknown():
    got = serving.crossed_interval([[0.2, 0.4, 0.9]], 0.95)
    want = _interval([0.2, 0.4, 0.9], 0.95)
    assert got["ci"] == pytest.approx(want["ci"], rel=1e-12)
    assert math.isnan(got["sd_networks"]) and got["sd_streams"] == pytest.approx(want["sd"], rel=1e-12)
    one = serving.crossed_interval([[0.3]], 0.95)
    assert one["mean"] == 0.3 and all(math.isnan(v) for v in one["ci"])


def test_summary_crosses_networks_with_stream_replicates():
    rows = []
    for r in range(3):
        for seed in (0, 1, 2, 3):
            for stream, base in (("random", 0.8), ("sorted", 0.3)):
                rows.append(
                    dict(
                        train_batch_size=4,
                        stream=stream,
                        replicate=r,
                        seed=seed,
                        stream_accuracy=base + 0.01 * seed + 0.02 * r,
                        inference_before=0.9 + 0.001 * seed,
                        inference_after=0.88 - 0.03 * r * (stream == "sorted") + 0.002 * seed * r,
                        mean_shift=0.1 * (r + 1) + 0.01 * seed,
                        var_change=0.2 + 0.01 * seed * r,
                    )
                )
    summary = serving.summarise(rows[::-1], 0.95, ADJUSTED)  # one training batch size: each level 95%
    pick = lambda s, key: np.array(  # noqa: E731
        [[next(x[key] for x in rows if x["stream"] == s and x["seed"] == i and x["replicate"] == r) for r in range(3)]
         for i in range(4)]
    )  # fmt: skip
    change = pick("sorted", "inference_after") - pick("sorted", "inference_before")
    _assert_same(summary["4"]["sorted"]["inference_change"], serving.crossed_interval(change, 0.95))
    gap = pick("sorted", "stream_accuracy") - pick("random", "stream_accuracy")
    _assert_same(summary["4"]["sorted_minus_random"]["stream_accuracy"], serving.crossed_interval(gap, 0.95))
    with pytest.raises(ValueError, match="every stream replicate"):
        serving.summarise(rows[1:], 0.95, ADJUSTED)


# ---- the per-position means -------------------------------------------------------------------


def test_along_means_average_the_seeds_per_batch_size_stream_and_position():
    acc = {  # (b, stream, position) -> the seeds' accuracies
        (16, "sorted", 1): [0.25, 0.5, 0.9375],
        (4, "random", 0): [0.75, 1.0],
        (16, "random", 0): [0.0625, 0.125, 1.0],
        (4, "sorted", 2): [0.0, 0.25],
        (4, "sorted", 0): [0.5, 0.5],
        (16, "random", 2): [0.8125, 0.875, 0.9375],
        (4, "random", 1): [0.25, 0.0],
    }
    along = [
        dict(train_batch_size=b, stream=s, seed=10 + k, position=p, accuracy=a)
        for (b, s, p), values in acc.items()
        for k, a in enumerate(values)
    ]
    along = [along[i] for i in np.random.default_rng(1).permutation(len(along))]
    assert serving.along_means(along) == [
        {"train_batch_size": 4, "stream": "random", "position": 0, "accuracy": 0.875},
        {"train_batch_size": 4, "stream": "random", "position": 1, "accuracy": 0.125},
        {"train_batch_size": 4, "stream": "sorted", "position": 0, "accuracy": 0.5},
        {"train_batch_size": 4, "stream": "sorted", "position": 2, "accuracy": 0.125},
        {"train_batch_size": 16, "stream": "random", "position": 0, "accuracy": 1.1875 / 3},
        {"train_batch_size": 16, "stream": "random", "position": 2, "accuracy": 2.625 / 3},
        {"train_batch_size": 16, "stream": "sorted", "position": 1, "accuracy": 1.6875 / 3},
    ]


def test_along_means_refuse_an_unknown_stream():
    with pytest.raises(ValueError):
        serving.along_means([dict(train_batch_size=4, stream="reversed", seed=0, position=0, accuracy=0.5)])


# ---- macros and table from a summary written by hand ------------------------------------------


def _entry(mean, lo=None, hi=None, seeds=5):
    lo, hi = (mean - 0.01, mean + 0.01) if lo is None else (lo, hi)
    # the components' spreads: a tenth and a fifth of the mean's size, so that their maxima are known
    return {
        "mean": mean,
        "sd": 0.0123,
        "sd_networks": abs(mean) / 10,
        "sd_streams": abs(mean) / 5,
        "ci": [lo, hi],
        "seeds": seeds,
    }


def _stream(served, before, after, change, lo, hi, shift, var, seeds=5):
    values = dict(
        stream_accuracy=served, inference_before=before, inference_after=after, mean_shift=shift, var_change=var
    )
    out = {k: _entry(v, seeds=seeds) for k, v in values.items()}
    out["inference_change"] = _entry(change, lo, hi, seeds)
    return out


def _summary():
    """Three cells (in the order 16, 4, 128): changes wholly above zero, containing zero,
    starting and ending exactly at zero; one change that rounds to zero; one cell with
    fewer seeds."""
    return {
        "16": {
            "random": _stream(0.8876, 0.9502, 0.9498, -0.0004, -0.0031, 0.0023, 0.0712, 0.3321),
            "sorted": _stream(0.5864, 0.9507, 0.9374, -0.0133, -0.0266, 0.0, 0.2981, 0.8102),
            "sorted_minus_random": {
                "stream_accuracy": _entry(-0.3012, -0.6024, 0.0),
                "inference_after": _entry(-0.0124),
            },
        },
        "4": {
            "random": _stream(0.8512, 0.9437, 0.9561, 0.0124, 0.0071, 0.0177, 0.1234, 0.5678),
            "sorted": _stream(0.2143, 0.9418, 0.8733, -0.0704, -0.0912, -0.0496, 0.4567, 1.2345),
            "sorted_minus_random": {
                "stream_accuracy": _entry(-0.6369, -0.7012, -0.5726),
                "inference_after": _entry(-0.0828),
            },
        },
        "128": {
            "random": _stream(0.9123, 0.9611, 0.9657, 0.0046, 0.0, 0.0092, 0.0309, 0.1456, seeds=4),
            "sorted": _stream(0.8908, 0.9613, 0.9790, 0.0177, 0.0103, 0.0251, 0.0954, 0.2617, seeds=4),
            "sorted_minus_random": {
                "stream_accuracy": _entry(-0.0214, -0.0528, 0.0100, seeds=4),
                "inference_after": _entry(0.0133, seeds=4),
            },
        },
    }


PER_CELL = {
    # random
    "servingRandomServedBFour": "85.1\\%",
    "servingRandomBeforeBFour": "94.4\\%",
    "servingRandomAfterBFour": "95.6\\%",
    "servingRandomChangeBFour": "$+1.2$",
    "servingRandomChangeCiBFour": "[$+0.7$, $+1.8$]",
    "servingRandomShiftBFour": "0.12",
    "servingRandomVarChangeBFour": "0.57",
    "servingRandomServedBOneSix": "88.8\\%",
    "servingRandomBeforeBOneSix": "95.0\\%",
    "servingRandomAfterBOneSix": "95.0\\%",
    "servingRandomChangeBOneSix": "$-0.04$",  # -0.0004: a nonzero change printed with its sign
    "servingRandomChangeCiBOneSix": "[$-0.3$, $+0.2$]",
    "servingRandomShiftBOneSix": "0.07",
    "servingRandomVarChangeBOneSix": "0.33",
    "servingRandomServedBOneTwoEight": "91.2\\%",
    "servingRandomBeforeBOneTwoEight": "96.1\\%",
    "servingRandomAfterBOneTwoEight": "96.6\\%",
    "servingRandomChangeBOneTwoEight": "$+0.5$",
    "servingRandomChangeCiBOneTwoEight": "[$0.0$, $+0.9$]",
    "servingRandomShiftBOneTwoEight": "0.03",
    "servingRandomVarChangeBOneTwoEight": "0.15",
    # sorted
    "servingSortedServedBFour": "21.4\\%",
    "servingSortedBeforeBFour": "94.2\\%",
    "servingSortedAfterBFour": "87.3\\%",
    "servingSortedChangeBFour": "$-7.0$",
    "servingSortedChangeCiBFour": "[$-9.1$, $-5.0$]",
    "servingSortedShiftBFour": "0.46",
    "servingSortedVarChangeBFour": "1.23",
    "servingSortedServedBOneSix": "58.6\\%",
    "servingSortedBeforeBOneSix": "95.1\\%",
    "servingSortedAfterBOneSix": "93.7\\%",
    "servingSortedChangeBOneSix": "$-1.3$",
    "servingSortedChangeCiBOneSix": "[$-2.7$, $0.0$]",
    "servingSortedShiftBOneSix": "0.30",
    "servingSortedVarChangeBOneSix": "0.81",
    "servingSortedServedBOneTwoEight": "89.1\\%",
    "servingSortedBeforeBOneTwoEight": "96.1\\%",
    "servingSortedAfterBOneTwoEight": "97.9\\%",
    "servingSortedChangeBOneTwoEight": "$+1.8$",
    "servingSortedChangeCiBOneTwoEight": "[$+1.0$, $+2.5$]",
    "servingSortedShiftBOneTwoEight": "0.10",
    "servingSortedVarChangeBOneTwoEight": "0.26",
    # sorted - random, served
    "servingSortedMinusRandomServedBFour": "$-63.7$",
    "servingSortedMinusRandomServedCiBFour": "[$-70.1$, $-57.3$]",
    "servingSortedMinusRandomServedBOneSix": "$-30.1$",
    "servingSortedMinusRandomServedCiBOneSix": "[$-60.2$, $0.0$]",
    "servingSortedMinusRandomServedBOneTwoEight": "$-2.1$",
    "servingSortedMinusRandomServedCiBOneTwoEight": "[$-5.3$, $+1.0$]",
}

RANGES = {
    "servingRandomServedMin": "85.1\\%",
    "servingRandomServedMax": "91.2\\%",
    "servingRandomChangeMin": "$-0.04$",
    "servingRandomChangeMax": "$+1.2$",
    "servingRandomShiftMin": "0.03",
    "servingRandomShiftMax": "0.12",
    "servingSortedServedMin": "21.4\\%",
    "servingSortedServedMax": "89.1\\%",
    "servingSortedChangeMin": "$-7.0$",
    "servingSortedChangeMax": "$+1.8$",
    "servingSortedShiftMin": "0.10",
    "servingSortedShiftMax": "0.46",
    # each pair of ends in one macro, as the text prints them
    "servingRandomServedRange": "85.1\\% to 91.2\\%",
    "servingRandomChangeRange": "$-0.04$ to $+1.2$",
    "servingRandomShiftRange": "0.03 to 0.12",
    "servingSortedServedRange": "21.4\\% to 89.1\\%",
    "servingSortedChangeRange": "$-7.0$ to $+1.8$",
    "servingSortedShiftRange": "0.10 to 0.46",
    "servingSortedMinusRandomServedRange": "$-63.7$ to $-2.1$",
    "servingSortedMinusRandomServedMin": "$-63.7$",
    "servingSortedMinusRandomServedMax": "$-2.1$",
    # an interval ending exactly at zero is not a loss, one starting exactly at zero not a gain
    "servingSortedMinusRandomServedLossCells": "1",  # 4 only; 16 ends at 0
    "servingRandomLossCells": "0",  # 128 ends above 0
    "servingRandomGainCells": "1",  # 4 only; 128 starts at 0
    "servingSortedLossCells": "1",  # 4 only; 16 ends at 0
    "servingSortedGainCells": "1",  # 128
    # the same sides in words, the sizes in numeric order (4, 16, 128), and which intervals holding zero
    # lie within +-1 point: random 16 [-0.31, +0.23] and 128 [0, +0.92] do; sorted minus random 16
    # [-60.2, 0] and 128 [-5.28, +1.00] do not (+1.00 is not inside); sorted 16 [-2.66, 0] does not
    "servingSortedMinusRandomZeroSentence": "the adjusted intervals lie wholly below zero at batch 4, and contain "
    "zero at the other 2 batch sizes; both reach beyond $\\pm1.0$ points, the smallest effect declared to matter",
    "servingRandomChangeZeroSentence": "the adjusted intervals lie wholly above zero at batch 4, and contain zero at "
    "the other 2 batch sizes; both lie within $\\pm1.0$ points, the smallest effect declared to matter",
    "servingSortedChangeZeroSentence": "the adjusted intervals lie wholly below zero at batch 4, wholly above zero "
    "at batch 128, and contain zero at the other batch size; it reaches beyond $\\pm1.0$ points, the smallest "
    "effect declared to matter",
    # largest spreads of the change: |mean| / 5 between streams, / 10 between networks
    "servingRandomChangeSdStreamsMax": "0.2",  # 0.0124 / 5 = 0.248 points
    "servingRandomChangeSdNetworksMax": "0.1",
    "servingSortedChangeSdStreamsMax": "1.4",  # 0.0704 / 5
    "servingSortedChangeSdNetworksMax": "0.7",
}


def _abstract(b: str, adjusted: str) -> str:
    """The abstract's sentence of ``_summary()["4"]`` (its intervals both wholly below zero) as the cell
    of training batch ``b``, the smallest: the printed values of PER_CELL, the verdicts read off them;
    ``adjusted``: the families' adjustment in words (both Bonferroni-adjusted, over the cells)."""
    cell = {k.removeprefix("servingSorted"): v for k, v in PER_CELL.items() if k.endswith("BFour")}
    served = f"{cell['MinusRandomServedBFour']} points {cell['MinusRandomServedCiBFour']}"
    change = f"{cell['ChangeBFour']} points {cell['ChangeCiBFour']}"
    return (
        f"Served in training mode with live statistics, networks trained in batches of {b} score {served} on "
        "class-sorted test traffic against random traffic, and a class-sorted stream changes the inference-mode "
        f"accuracy of the model it leaves behind by {change} on held-out rows (both intervals lie wholly below "
        f"zero; intervals over networks and streams, each {adjusted})"
    )


@pytest.mark.parametrize(
    "passes, passes_tex, phrase, weight",
    [
        (1, "1", "one pass", "0.7"),  # 0.95 ** 7 = 0.698
        (2, "2", "2 passes", "0.49"),  # 0.95 ** 14 = 0.488
        (3, "3", "3 passes", "0.34"),  # 0.95 ** 21 = 0.341
    ],
)
def test_macros_are_the_whole_summary_printed(passes, passes_tex, phrase, weight):
    assert f"{0.95 ** (7 * passes):.2g}" == weight
    settings = dict(
        batch_size=1024,
        passes=passes,
        batches=7,
        served=7168,
        test_rows=7200,
        stream_rows=7175,
        held_out_rows=25,
        held_out=0.004,
        replicates=3,
        momentum=0.05,
        confidence=0.9,
    )
    want = {
        "servingBatchSize": "1{,}024",
        "servingPasses": passes_tex,
        "servingPassPhrase": phrase,
        "servingBatches": "7",
        "servingRows": "7{,}168",
        "servingMomentum": "0.05",
        "servingConfidence": "90\\%",
        "servingCells": "3",
        "servingTestRows": "7{,}200",
        "servingStreamRows": "7{,}175",
        "servingHeldOutRows": "25",
        "servingHeldOutShare": "0\\%",
        "servingReplicates": "3",
        "servingReplicatePhrase": "3 streams",
        "servingClassOrderPhrase": (
            "the classes in ascending order in the first and in seeded random orders in the others"
        ),
        "servingTrainedWeight": weight,
        "servingSeeds": "4",
    }
    want |= PER_CELL | RANGES
    # 4 is the smallest of 16, 4 and 128
    want["servingAbstractSentence"] = _abstract("4", "Bonferroni-adjusted over the 3 training batch sizes")
    assert serving_report.macros(_summary(), settings, FAMILIES["bonferroni"]) == want


def test_macros_of_one_cell_with_settings_that_need_more_digits():
    summary = {"64": _summary()["4"]}
    settings = dict(
        batch_size=12345,
        passes=1,
        batches=1,
        served=12345,
        test_rows=12999,
        stream_rows=12350,
        held_out_rows=649,
        held_out=0.05,
        replicates=1,
        momentum=0.125,
        confidence=0.95,
    )
    m = serving_report.macros(summary, settings, FAMILIES["bonferroni"])
    settings_macros = {
        "servingBatchSize": "12{,}345",
        "servingPasses": "1",
        "servingPassPhrase": "one pass",
        "servingBatches": "1",
        "servingRows": "12{,}345",
        "servingMomentum": "0.125",
        "servingConfidence": "95\\%",
        "servingCells": "1",
        "servingTestRows": "12{,}999",
        "servingStreamRows": "12{,}350",
        "servingHeldOutRows": "649",
        "servingHeldOutShare": "5\\%",
        "servingReplicates": "1",
        "servingReplicatePhrase": "one stream",
        "servingClassOrderPhrase": "the classes in ascending order",
        "servingTrainedWeight": "0.88",  # 0.875 ** 1
        "servingSeeds": "5",
    }
    cell = {k.replace("BFour", "BSixFour"): v for k, v in PER_CELL.items() if k.endswith("BFour")}
    ranges = {
        "servingRandomServedMin": "85.1\\%",
        "servingRandomServedMax": "85.1\\%",
        "servingRandomChangeMin": "$+1.2$",
        "servingRandomChangeMax": "$+1.2$",
        "servingRandomShiftMin": "0.12",
        "servingRandomShiftMax": "0.12",
        "servingSortedServedMin": "21.4\\%",
        "servingSortedServedMax": "21.4\\%",
        "servingSortedChangeMin": "$-7.0$",
        "servingSortedChangeMax": "$-7.0$",
        "servingSortedShiftMin": "0.46",
        "servingSortedShiftMax": "0.46",
        # one batch size: each range is its one value, never "0.46 to 0.46"
        "servingRandomServedRange": "85.1\\%",
        "servingRandomChangeRange": "$+1.2$",
        "servingRandomShiftRange": "0.12",
        "servingSortedServedRange": "21.4\\%",
        "servingSortedChangeRange": "$-7.0$",
        "servingSortedShiftRange": "0.46",
        "servingSortedMinusRandomServedRange": "$-63.7$",
        "servingSortedMinusRandomServedMin": "$-63.7$",
        "servingSortedMinusRandomServedMax": "$-63.7$",
        "servingRandomChangeSdStreamsMax": "0.2",
        "servingRandomChangeSdNetworksMax": "0.1",
        "servingSortedChangeSdStreamsMax": "1.4",
        "servingSortedChangeSdNetworksMax": "0.7",
        "servingSortedMinusRandomServedLossCells": "1",
        "servingRandomLossCells": "0",
        "servingRandomGainCells": "1",
        "servingSortedLossCells": "1",
        "servingSortedGainCells": "0",
        "servingSortedMinusRandomZeroSentence": "the adjusted intervals lie wholly below zero at every batch size",
        "servingRandomChangeZeroSentence": "the adjusted intervals lie wholly above zero at every batch size",
        "servingSortedChangeZeroSentence": "the adjusted intervals lie wholly below zero at every batch size",
    }
    assert m == settings_macros | cell | ranges | {
        "servingAbstractSentence": _abstract(
            "64", "Bonferroni-adjusted over its 1 training batch size, so at the unadjusted level"
        )
    }


def test_points_percent_and_intervals_by_hand():
    assert serving_report.points(0.0123) == "$+1.2$"
    assert serving_report.points(-0.00049) == "$-0.05$"  # nonzero: the decimals its sign needs
    assert serving_report.points(0.0) == "$0.0$"
    assert serving_report.points(-0.4567) == "$-45.7$"
    assert serving_report.percent(0.8512) == "85.1\\%"
    assert serving_report.percent(1.0) == "100.0\\%"
    assert serving_report.percent(0.99996) == "99.996\\%" and serving_report.percent(0.00004) == "0.004\\%"
    assert serving_report.interval_points({"ci": [-0.0912, 0.0251], "mean": 0.5}) == "[$-9.1$, $+2.5$]"


ROWS = [
    ["4", "94.4\\%", "$+1.2$ [$+0.7$, $+1.8$]", "$-7.0$ [$-9.1$, $-5.0$]", "85.1\\%", "21.4\\%"],
    ["16", "95.0\\%", "$-0.04$ [$-0.3$, $+0.2$]", "$-1.3$ [$-2.7$, $0.0$]", "88.8\\%", "58.6\\%"],
    ["128", "96.1\\%", "$+0.5$ [$0.0$, $+0.9$]", "$+1.8$ [$+1.0$, $+2.5$]", "91.2\\%", "89.1\\%"],
]


def test_table_rows_are_every_cell_in_numeric_batch_size_order():
    assert serving_report.table_rows(_summary()) == ROWS


def test_table_header():
    assert serving_report.HEADER == [
        "$b_{\\mathrm{train}}$",
        "before",
        "change, random",
        "change, sorted",
        "served, random",
        "served, sorted",
    ]


def test_write_table_writes_the_whole_tabular(tmp_path):
    path = tmp_path / "serving.tex"
    serving_report.write_table(path, _summary(), FAMILIES["bonferroni"]["serving_change"])
    lines = [
        "% serving: inference accuracy before/after (changes Bonferroni-adjusted over the 3 training batch sizes), "
        "served",
        "\\begin{tabular}{rrrrrr}",
        "\\toprule",
        "$b_{\\mathrm{train}}$ & before & change, random & change, sorted & served, random & served, sorted \\\\",
        "\\midrule",
        *(" & ".join(r) + " \\\\" for r in ROWS),
        "\\bottomrule",
        "\\end{tabular}",
    ]
    assert path.read_text(encoding="utf-8") == "\n".join(lines) + "\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["serving.tex"]


def test_macros_and_table_of_a_computed_summary():
    """The same path as the pipeline: summarise, then print; the numbers looked up by hand."""
    summary = serving.summarise(_networks(), 0.9, ADJUSTED)
    settings = dict(
        batch_size=8,
        passes=2,
        batches=12,
        served=96,
        test_rows=97,
        stream_rows=97,
        held_out_rows=40,
        held_out=0.4,
        replicates=1,
        momentum=0.1,
        confidence=0.9,
    )
    m = serving_report.macros(summary, settings, FAMILIES["bonferroni"])
    rows = [r for r in _networks() if r["train_batch_size"] == 8]
    served = {s: np.mean([r["stream_accuracy"] for r in rows if r["stream"] == s]) for s in serving.STREAMS}
    assert m["servingRandomServedBEight"] == f"{100 * served['random']:.1f}\\%"
    assert m["servingSortedServedBEight"] == f"{100 * served['sorted']:.1f}\\%"
    assert m["servingSortedMinusRandomServedBEight"] == f"${100 * (served['sorted'] - served['random']):+.1f}$"
    assert m["servingSeeds"] == "3" and m["servingCells"] == "2"
    table = serving_report.table_rows(summary)
    assert [r[0] for r in table] == ["8", "32"]
    assert table[0][4] == m["servingRandomServedBEight"] and table[0][5] == m["servingSortedServedBEight"]


# ---- the held-out rows and the class orders ---------------------------------------------------


def test_held_out_rows_are_a_seeded_floor_share_of_each_class_and_disjoint_from_the_streamed():
    served, held = serving.held_out_split(Y, 0.5, 7)
    assert served.dtype == held.dtype == np.int64
    assert sorted(served.tolist() + held.tolist()) == list(range(len(Y)))
    for c in np.unique(Y):
        rows = np.flatnonzero(Y == c)
        perm = np.random.Generator(np.random.PCG64(derive_seed(7, 17, 2, int(c)))).permutation(len(rows))
        want = sorted(rows[perm[: len(rows) // 2]].tolist())
        assert sorted(r for r in held.tolist() if Y[r] == c) == want
    assert serving.held_out_split(Y, 0.5, 8)[1].tolist() != held.tolist()


@pytest.mark.parametrize("share", [0.0, 1.0, 0.01])
def test_held_out_refuses_an_empty_side(share):
    with pytest.raises(ValueError, match="held"):
        serving.held_out_split(Y, share, 0)


def test_class_orders_are_ascending_first_then_seeded_permutations():
    assert serving.class_order(Y, 3, 0) == [0, 1, 2, 3, 4]
    orders = [serving.class_order(Y, 3, r) for r in range(1, 6)]
    for r, order in enumerate(orders, start=1):
        perm = np.random.Generator(np.random.PCG64(derive_seed(3, 17, 3, r))).permutation(5)
        assert order == perm.tolist()
    assert len({tuple(o) for o in orders}) > 1


def test_a_later_replicate_sorts_by_its_class_order_and_draws_its_own_permutation():
    y = list(Y)
    order = serving.stream_rows(Y, "sorted", 11, passes=1, replicate=2)
    perm = np.random.Generator(np.random.PCG64(derive_seed(11, 17, 1, 0, 2))).permutation(len(y)).tolist()
    want = [i for c in serving.class_order(Y, 11, 2) for i in perm if y[i] == c]
    assert order.tolist() == want
    random2 = serving.stream_rows(Y, "random", 11, passes=1, replicate=2)
    want2 = np.random.Generator(np.random.PCG64(derive_seed(11, 17, 0, 0, 2))).permutation(40)
    assert random2.tolist() == want2.tolist()


# ---- the random stream's control: training rows served (issue 29, item 11) -------------------


def test_training_rows_are_the_first_n_of_a_seeded_permutation_of_the_training_rows_per_pass():
    got = serving.training_rows(30, 7, 5, passes=2, replicate=3)
    want = []
    for p in range(2):  # the documented seeding: (seed, STREAM_SERVING = 17, TRAINING_ROWS_KEY = 4, pass, replicate)
        rng = np.random.Generator(np.random.PCG64(derive_seed(5, 17, 4, p, 3)))
        want += rng.permutation(30)[:7].tolist()
    assert got.dtype == np.int64 and got.tolist() == want
    assert len(set(got[:7].tolist())) == 7  # no training row twice within a pass
    # replicate 0 is keyed by its number too, and replicates draw apart
    first, second = serving.training_rows(30, 7, 5, replicate=0), serving.training_rows(30, 7, 5, replicate=1)
    assert first.tolist() != second.tolist()
    # a random stream's permutation of the same size is another draw (its own key)
    assert serving.training_rows(30, 30, 5).tolist() != serving.stream_rows(np.zeros(30), "random", 5).tolist()


@pytest.mark.parametrize("n", [0, 31])
def test_training_rows_refuse_more_rows_than_the_training_half_or_none(n):
    with pytest.raises(ValueError, match=rf"draws {n} of 30 training rows"):
        serving.training_rows(30, n, 0)


def _control_rows(control: bool):
    rows = []
    for r in range(3):
        for seed in (0, 1, 2, 3):
            streams = (("random", 0.8), ("sorted", 0.3)) + ((("training_rows", 0.7),) if control else ())
            for stream, base in streams:
                rows.append(
                    dict(
                        train_batch_size=4,
                        stream=stream,
                        replicate=r,
                        seed=seed,
                        stream_accuracy=base + 0.01 * seed + 0.02 * r,
                        inference_before=0.9 + 0.001 * seed,
                        inference_after=0.88 + 0.011 * base * r + 0.002 * seed * r + 0.003 * (seed % 2) * base,
                        mean_shift=0.1 * (r + 1) + 0.01 * seed,
                        var_change=0.2 + 0.01 * seed * r,
                    )
                )
    return rows


def test_summary_of_the_control_is_a_streams_entry_and_the_random_stream_minus_it():
    rows = _control_rows(True)
    summary = serving.summarise(rows[::-1], 0.9, ADJUSTED)
    pick = lambda s, key: np.array(  # noqa: E731
        [[next(x[key] for x in rows if x["stream"] == s and x["seed"] == i and x["replicate"] == r) for r in range(3)]
         for i in range(4)]
    )  # fmt: skip
    cell = summary["4"]
    for m in serving.MEASURES:
        _assert_same(cell["training_rows"][m], serving.crossed_interval(pick("training_rows", m), 0.9))
    change = pick("training_rows", "inference_after") - pick("training_rows", "inference_before")
    _assert_same(cell["training_rows"]["inference_change"], serving.crossed_interval(change, 0.9))
    # paired by network and replicate number: the random stream's accuracy after minus the control's
    diff = pick("random", "inference_after") - pick("training_rows", "inference_after")
    assert np.ptp(diff) > 0  # the pairs differ, so a mispairing would show
    _assert_same(cell["random_minus_training_rows"]["inference_after"], serving.crossed_interval(diff, 0.9))
    assert sorted(cell) == ["random", "random_minus_training_rows", "sorted", "sorted_minus_random", "training_rows"]
    # without the control the summary is as it was: no control entries, the other entries alike
    plain = serving.summarise(_control_rows(False), 0.9, ADJUSTED)
    assert sorted(plain["4"]) == ["random", "sorted", "sorted_minus_random"]
    _assert_same(plain["4"]["sorted_minus_random"], cell["sorted_minus_random"])


def _control_summary():
    """_summary() with the control at every size: at 4 the control's change and the difference both
    above zero, at 16 the difference below, at 128 containing zero."""
    summary = _summary()
    for b, (change, lo, hi), (diff, dlo, dhi) in (
        ("4", (0.0081, 0.0012, 0.0150), (0.0043, 0.0004, 0.0082)),
        ("16", (0.0050, -0.0010, 0.0110), (-0.0054, -0.0091, -0.0017)),
        ("128", (0.0046, 0.0011, 0.0081), (0.0, -0.0035, 0.0035)),
    ):
        summary[b]["training_rows"] = _stream(0.97, 0.95, 0.95 + change, change, lo, hi, 0.05, 0.1)
        summary[b]["random_minus_training_rows"] = {"inference_after": _entry(diff, dlo, dhi)}
    return summary


def test_control_macros_print_each_size_and_answer_at_the_smallest():
    m = serving_report.control_macros(_control_summary(), FAMILIES["bonferroni"])
    want = {
        "servingHasControl": "1",
        "servingTrainingRowsChangeBFour": "$+0.8$",
        "servingTrainingRowsChangeCiBFour": "[$+0.1$, $+1.5$]",
        "servingRandomMinusTrainingRowsBFour": "$+0.4$",
        "servingRandomMinusTrainingRowsCiBFour": "[$+0.04$, $+0.8$]",
        "servingTrainingRowsChangeBOneSix": "$+0.5$",
        "servingTrainingRowsChangeCiBOneSix": "[$-0.1$, $+1.1$]",
        "servingRandomMinusTrainingRowsBOneSix": "$-0.5$",
        "servingRandomMinusTrainingRowsCiBOneSix": "[$-0.9$, $-0.2$]",
        "servingTrainingRowsChangeBOneTwoEight": "$+0.5$",
        "servingTrainingRowsChangeCiBOneTwoEight": "[$+0.1$, $+0.8$]",
        "servingRandomMinusTrainingRowsBOneTwoEight": "$0.0$",
        "servingRandomMinusTrainingRowsCiBOneTwoEight": "[$-0.4$, $+0.4$]",
        # sizes in numeric order: 16 below zero, 4 above, 128 holding zero
        "servingControlZeroSentence": "the adjusted intervals of the random stream's change minus the control's lie "
        "wholly below zero at batch 16, wholly above zero at batch 4, and contain zero at the other batch size; "
        "it lies within $\\pm1.0$ points, the smallest effect declared to matter",  # 128: [-0.35, +0.35]
        # at 4 (the smallest): the random stream's change [+0.7, +1.8] is a gain; the control's and the
        # difference both lie above zero
        "servingControlSentence": "the held-out accuracy of networks trained in batches of 4 changes by $+1.2$ "
        "points [$+0.7$, $+1.8$] after a random stream of test rows and by $+0.8$ points [$+0.1$, $+1.5$] after a "
        "stream of as many training rows (both adjusted); that second interval lies wholly above zero; the difference, "
        "the part that needs the test rows, is $+0.4$ points [$+0.04$, $+0.8$] (adjusted), an interval that lies "
        "wholly above zero: "
        "training rows reproduce part of the gain and "
        "the test rows add to it, so it is the statistics re-estimated in served batches and adaptation to the test "
        "rows together",
    }
    assert m == want
    # the whole macro dict is the summary's macros and these, and no control leaves them out
    settings = dict(batch_size=16, passes=1, batches=7, served=112, test_rows=120, stream_rows=115,
                    held_out_rows=5, held_out=0.04, replicates=3, momentum=0.1, confidence=0.95)  # fmt: skip
    full = serving_report.macros(_control_summary(), settings, FAMILIES["bonferroni"])
    assert full == serving_report.macros(_summary(), settings, FAMILIES["bonferroni"]) | want
    assert serving_report.control_macros(_summary(), FAMILIES["bonferroni"]) == {}
