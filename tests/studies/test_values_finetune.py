"""The fine-tuning report by value (bnstudy.studies.finetune.summary, bnstudy.studies.finetune.science._layer_mean): the
whole summary against Student-t intervals computed here over seeds, the complete macro dict
and table rows of a hand-built summary against names and texts written out here, the table
file's text, and the per-model layer means of distance rows."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from bnstudy.studies.finetune import macros as finetune_macros
from bnstudy.studies.finetune import science as finetune
from bnstudy.studies.finetune import sentences as finetune_sentences
from bnstudy.studies.finetune import summary as finetune_summary
from bnstudy.studies.finetune import tables as finetune_tables
from declared_families import declared_as
from share_reference import log_t_interval, logit_t_interval

SEEDS = (0, 1, 2, 3)
BONFERRONI = declared_as("finetune_specific", "bonferroni")  # the batch-norm-specific parts' family, as declared
UNADJUSTED = declared_as("finetune_specific", "unadjusted")
CONFIDENCE = 0.9  # not the default 0.95 of seed_interval, so a dropped confidence shows
RATES = (1e-05, 0.001)  # keys "1e-05" and "0.001": their string order is not their numeric order
STREAM_LIST = ("shuffle", "class_sorted")
MODE_LIST = ("live", "frozen")
MEASURES = (
    "inference_after",
    "train_mode_after",
    "recomputed_after",
    "mean_to_exact",
    "var_to_exact",
    "mean_to_start",
    "var_to_start",
)
START_MEASURES = ("inference_before", "train_mode_before", "start_mean_to_exact", "start_var_to_exact")


# ---- the summary over seeds -------------------------------------------------------------


def _interval(values, confidence, bound=1.0):
    """Mean, sd (ddof 1) and the Student-t interval of paired differences, written out here,
    clipped to [-bound, bound] (a difference of two shares: 1; of two changes of a share: 2)."""
    n = len(values)
    mean = math.fsum(values) / n
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = sps.t.ppf(1 - (1 - confidence) / 2, n - 1) * sd / math.sqrt(n)
    return {"mean": mean, "sd": sd, "ci": [max(mean - half, -bound), min(mean + half, bound)], "seeds": n}


def _level(values, confidence, key):
    """A level over seeds: an accuracy's interval on the logit scale, a distance's on the log scale."""
    share = "to_exact" not in key and "to_start" not in key
    mean, sd, lo, hi = (logit_t_interval if share else log_t_interval)(values, confidence)
    return {"mean": mean, "sd": sd, "ci": [lo, hi], "seeds": len(values)}


def _networks():
    """Per rate, stream, mode and seed one row; every value distinct, the rows in no particular order."""
    rng = np.random.default_rng(11)
    start = {
        seed: {
            "inference_before": 0.9 + 0.01 * seed + 0.001 * seed**2,
            "train_mode_before": 0.6 - 0.02 * seed + 0.003 * seed**2,
            "start_mean_to_exact": 0.05 + 0.004 * seed**2,
            "start_var_to_exact": 0.2 - 0.01 * seed + 0.002 * seed**3,
        }
        for seed in SEEDS
    }
    rows = []
    for lr in RATES:
        for stream in STREAM_LIST:
            for mode in MODE_LIST:
                for seed in SEEDS:
                    rows.append(
                        {"seed": seed, "lr": lr, "stream": stream, "mode": mode, "steps": 7}
                        | start[seed]
                        | {k: float(rng.uniform(0.05, 0.95)) for k in MEASURES}
                    )
    order = np.random.default_rng(12).permutation(len(rows))
    return [rows[i] for i in order]


def _expected_summary(networks, confidence):
    def pick(lr, stream, mode):
        g = [r for r in networks if r["lr"] == lr and r["stream"] == stream and r["mode"] == mode]
        return sorted(g, key=lambda r: r["seed"])

    def diff(a, b):
        return _interval([x - y for x, y in zip(a, b)], confidence)

    first = {}
    for r in sorted(networks, key=lambda r: r["seed"]):
        first.setdefault(r["seed"], r)
    out = {"start": {k: _level([first[s][k] for s in SEEDS], confidence, k) for k in START_MEASURES}, "by_rate": {}}
    for lr, key in zip(RATES, ("1e-05", "0.001")):
        cell = {}
        for stream in STREAM_LIST:
            entry = {}
            for mode in MODE_LIST:
                g = pick(lr, stream, mode)
                col = {k: [r[k] for r in g] for k in MEASURES + START_MEASURES}
                e = {k: _level(col[k], confidence, k) for k in MEASURES}
                e["inference_change"] = diff(col["inference_after"], col["inference_before"])
                e["train_mode_change"] = diff(col["train_mode_after"], col["train_mode_before"])
                e["recomputed_gain"] = diff(col["recomputed_after"], col["inference_after"])
                e["recomputed_change"] = diff(col["recomputed_after"], col["inference_before"])
                entry[mode] = e
            live, frozen = pick(lr, stream, "live"), pick(lr, stream, "frozen")
            entry["frozen_minus_live"] = {
                "inference_after": diff([r["inference_after"] for r in frozen], [r["inference_after"] for r in live]),
                "train_mode_after": diff(
                    [r["train_mode_after"] for r in frozen], [r["train_mode_after"] for r in live]
                ),
            }
            cell[stream] = entry
        cell["class_sorted_minus_shuffle"] = {
            mode: diff(
                [r["inference_after"] for r in pick(lr, "class_sorted", mode)],
                [r["inference_after"] for r in pick(lr, "shuffle", mode)],
            )
            for mode in MODE_LIST
        }
        out["by_rate"][key] = cell
    return out


def _flat(obj, prefix=()):
    """A nested dict of lists and numbers as ``{path: value}``."""
    if isinstance(obj, dict):
        return {p: v for k, sub in obj.items() for p, v in _flat(sub, prefix + (k,)).items()}
    if isinstance(obj, list):
        return {p: v for i, sub in enumerate(obj) for p, v in _flat(sub, prefix + (i,)).items()}
    return {prefix: obj}


def test_summarise_gives_every_level_and_paired_difference_as_student_t_over_seeds():
    networks = _networks()
    got = _flat(finetune_summary.summarise(networks, CONFIDENCE))
    want = _flat(_expected_summary(networks, CONFIDENCE))
    assert sorted(got, key=str) == sorted(want, key=str)  # the same keys, "sd", "seeds", "train_mode_change" included
    for path, value in want.items():
        if path[-1] == "seeds":
            assert got[path] == value == len(SEEDS) and isinstance(got[path], int), path
        else:
            assert got[path] == pytest.approx(value, rel=1e-12, abs=1e-14), path
    # the inputs are not degenerate: some differences' intervals lie wholly below or above zero, others contain it
    ends = [(want[p[:-1] + (0,)], want[p[:-1] + (1,)]) for p in want if p[-1] == 1 and p[-2] == "ci"]
    assert {"below" if hi < 0 else "above" if lo > 0 else "zero" for lo, hi in ends} == {"below", "above", "zero"}


def test_summarise_keys_the_rates_by_their_shortest_float_text_in_increasing_order():
    summary = finetune_summary.summarise(_networks(), CONFIDENCE)
    assert list(summary["by_rate"]) == ["1e-05", "0.001"]
    assert list(summary["start"]) == list(START_MEASURES)
    assert list(summary["by_rate"]["0.001"]) == ["shuffle", "class_sorted", "class_sorted_minus_shuffle"]
    assert [finetune_summary.rate_key(v) for v in (1e-05, 0.0003, "0.001", 0.1)] == ["1e-05", "0.0003", "0.001", "0.1"]


def _without(networks, **where):
    return [r for r in networks if not all(r[k] == v for k, v in where.items())]


def test_summarise_refuses_sides_that_hold_different_seeds():
    """A seed missing on each side of a paired difference would pair two different networks."""
    networks = _without(_without(_networks(), lr=0.001, stream="shuffle", mode="live", seed=1), lr=0.001,
                        stream="shuffle", mode="frozen", seed=2)  # fmt: skip
    with pytest.raises(ValueError, match=r"^lr 0\.001, shuffle: frozen - live: the two sides hold different "
                       r"seeds: \[0, 1, 3\] and \[0, 2, 3\]$"):  # fmt: skip
        finetune_summary.summarise(networks, CONFIDENCE)
    networks = _without(_without(_networks(), lr=1e-05, stream="shuffle", mode="frozen", seed=0), lr=1e-05,
                        stream="class_sorted", mode="frozen", seed=3)  # fmt: skip
    networks = _without(_without(networks, lr=1e-05, stream="shuffle", mode="live", seed=0), lr=1e-05,
                        stream="class_sorted", mode="live", seed=3)  # fmt: skip
    with pytest.raises(ValueError, match=r"^lr 1e-05, live: one-class - random: the two sides hold different "
                       r"seeds: \[0, 1, 2\] and \[1, 2, 3\]$"):  # fmt: skip
        finetune_summary.summarise(networks, CONFIDENCE)


def test_summarise_refuses_a_seed_twice_in_one_cell():
    networks = _networks()
    twice = next(r for r in networks if r["lr"] == 0.001 and r["stream"] == "class_sorted" and r["mode"] == "frozen")
    with pytest.raises(ValueError, match=r"^lr 0\.001, class_sorted, frozen: a seed appears more than once: "):
        finetune_summary.summarise(networks + [dict(twice)], CONFIDENCE)


def test_summarise_refuses_a_seed_whose_rows_start_from_different_levels():
    networks = _networks()
    moved = next(r for r in networks if r["seed"] == 2 and r["lr"] == 1e-05 and r["mode"] == "frozen")
    for key in START_MEASURES:
        changed = [dict(r) for r in networks]
        next(r for r in changed if r == moved)[key] += 1e-9
        with pytest.raises(ValueError, match="^seed 2: the start levels differ between its rows$"):
            finetune_summary.summarise(changed, CONFIDENCE)


def test_seed_rows_sorts_by_seed_and_paired_rows_pairs_by_seed():
    rows = [{"seed": s, "a": a} for s, a in ((3, 0.5), (10, 0.25), (2, 0.75))]
    assert [r["seed"] for r in finetune_summary.seed_rows(rows, "x")] == [2, 3, 10]  # by number, not text
    other = [{"seed": s, "a": a} for s, a in ((10, 0.5), (2, 0.5), (3, 0.125))]
    got = finetune_summary.paired_rows(rows, other, "a", 0.8, "x")
    want = _interval([0.75 - 0.5, 0.5 - 0.125, 0.25 - 0.5], 0.8)
    assert got["seeds"] == 3 and [got["mean"], got["sd"], *got["ci"]] == pytest.approx(
        [want["mean"], want["sd"], *want["ci"]], rel=1e-12
    )
    twice = [*other, {"seed": 2, "a": 0.0}]
    for a, b in ((twice, rows), (rows, twice)):  # either side's duplicate is named with ``what``
        with pytest.raises(ValueError, match=r"^cell x: a seed appears more than once: \[2, 2, 3, 10\]$"):
            finetune_summary.paired_rows(a, b, "a", 0.8, "cell x")


def test_level_and_paired_return_mean_sd_interval_and_seed_count():
    values = [0.81, 0.77, 0.9, 0.62, 0.7]
    other = [0.8, 0.71, 0.93, 0.6, 0.61]
    got = finetune_summary.level(values, 0.8)
    want = _level(values, 0.8, "inference_after")
    assert list(got) == ["mean", "sd", "ci", "seeds"] and got["seeds"] == 5
    assert [got["mean"], got["sd"], *got["ci"]] == pytest.approx([want["mean"], want["sd"], *want["ci"]], rel=1e-13)
    got = finetune_summary.paired(values, other, 0.8)
    want = _interval([a - b for a, b in zip(values, other)], 0.8)
    assert list(got) == ["mean", "sd", "ci", "seeds"] and got["seeds"] == 5
    assert [got["mean"], got["sd"], *got["ci"]] == pytest.approx([want["mean"], want["sd"], *want["ci"]], rel=1e-12)
    assert got["ci"][0] < 0 < got["ci"][1] and want["mean"] > 0
    # a distance's interval on the log scale: both ends positive
    distances = [0.02, 0.5, 0.01, 0.3]
    got = finetune_summary.level(distances, 0.95, share=False)
    want = _level(distances, 0.95, "mean_to_exact")
    assert [got["mean"], *got["ci"]] == pytest.approx([want["mean"], *want["ci"]], rel=1e-12)
    assert 0 < got["ci"][0] <= got["mean"] <= got["ci"][1]
    assert _interval(distances, 0.95)["ci"][0] < 0
    # paired differences stay within their range: [-1, 1] for two shares, [-2, 2] for two changes
    wide = finetune_summary.paired([0.95, 0.1], [0.05, 0.9], 0.95)
    assert wide["ci"] == [-1.0, 1.0] and wide["mean"] == pytest.approx(0.05, abs=1e-15)
    changes = finetune_summary.paired([0.9, -0.8], [-0.9, 0.8], 0.95, bound=2.0)
    assert changes["ci"] == [-2.0, 2.0] and changes["mean"] == pytest.approx(0.1, abs=1e-15)  # (1.8 - 1.6) / 2


# ---- macros and table of a hand-built summary -----------------------------------------------

# rate key -> its number in increasing order and its power-of-ten text, written out
RATE_TEXT = {
    "0.001": ("Three", "$1 \\times 10^{-3}$"),
    "1e-05": ("One", "$1 \\times 10^{-5}$"),
    "0.0003": ("Two", "$3 \\times 10^{-4}$"),
}
STREAM_NAME = {"shuffle": "Shuffle", "class_sorted": "ClassSorted"}
MODE_NAME = {"live": "Live", "frozen": "Frozen"}
SETTINGS = dict(source_batch_size=1234, batch_size=3, steps=7, every=2, train_rows=5678, momentum=0.05, confidence=0.9)


def _hand_summary():
    """A summary whose every number differs: levels ``0.0123 k``, differences cycling through an
    interval below zero, one above and one containing zero; one difference rounds to ``-0.0``."""
    counter = itertools.count(1)

    def level():
        k = next(counter)
        return {"mean": 0.0123 * k, "sd": 0.001 * k, "ci": [0.0123 * k - 0.004, 0.0123 * k + 0.005], "seeds": 4}

    def diff():
        k = next(counter)
        shape = k % 3
        if shape == 0:  # wholly below zero
            mean = -0.0071 * k
            return {"mean": mean, "sd": 0.002 * k, "ci": [mean - 0.0029 * k, -0.0011 * k], "seeds": 4}
        if shape == 1:  # wholly above zero
            mean = 0.0071 * k
            return {"mean": mean, "sd": 0.002 * k, "ci": [0.0013 * k, mean + 0.0031 * k], "seeds": 4}
        return {"mean": -0.0071 * k, "sd": 0.002 * k, "ci": [-0.0017 * k, 0.0019 * k], "seeds": 4}

    start = {k: level() for k in START_MEASURES}
    for i, k in enumerate(START_MEASURES):
        start[k]["seeds"] = 4 + i  # only inference_before's count is the seed count
    by_rate = {}
    for rate in ("0.001", "1e-05", "0.0003"):  # neither in string nor in numeric order
        cell = {}
        for s in STREAM_LIST:
            entry = {}
            for m in MODE_LIST:
                e = {k: level() for k in MEASURES}
                e |= {
                    k: diff() for k in ("inference_change", "train_mode_change", "recomputed_gain", "recomputed_change")
                }
                entry[m] = e
            entry["frozen_minus_live"] = {"inference_after": diff(), "train_mode_after": diff()}
            cell[s] = entry
        cell["class_sorted_minus_shuffle"] = {m: diff() for m in MODE_LIST}
        by_rate[rate] = cell
    # a change that rounds to zero from below, with an interval end that does too
    by_rate["1e-05"]["shuffle"]["live"]["inference_change"] = {
        "mean": -0.0004,
        "sd": 0.01,
        "ci": [-0.02, 0.00004],
        "seeds": 4,
    }
    return {"start": start, "by_rate": by_rate}


def _pct(v, d=1):  # never 0.0% or 100.0% for an accuracy that is neither
    x = 100 * v
    while float(f"{x:.{d}f}") in (0.0, 100.0) and x not in (0.0, 100.0):
        d += 1
    return f"{x:.{d}f}\\%"


def _pts(v, d=1):  # signed points; exact zero unsigned; a nonzero value with the decimals its sign needs
    x = 100 * v
    if x == 0:
        return "$0.0$"
    while float(f"{x:.{d}f}") == 0:
        d += 1
    return f"${x:+.{d}f}$"


def _ci(e):
    return f"[{_pts(e['ci'][0])}, {_pts(e['ci'][1])}]"


def _verdict(e):
    lo, hi = e["ci"]
    return "lies wholly below zero" if hi < 0 else "lies wholly above zero" if lo > 0 else "contains zero"


def _expected_macros(summary):
    m = {
        "finetuneSourceBatchSize": "1{,}234",
        "finetuneBatchSize": "3",
        "finetuneSteps": "7",
        "finetuneEvery": "2",
        "finetuneRows": "21",
        "finetuneTrainRows": "5{,}678",
        "finetuneMomentum": "0.05",
        "finetuneConfidence": "90\\%",
        "finetuneRateCount": "3",
        "finetuneSeeds": "4",
        "finetuneTrainedWeight": "$7 \\times 10^{-1}$",  # 0.95 ** 7 = 0.698
        "finetuneRates": "$1 \\times 10^{-5}$, $3 \\times 10^{-4}$ and $1 \\times 10^{-3}$",
    }
    start = summary["start"]
    m["finetuneStartInference"] = _pct(start["inference_before"]["mean"])
    m["finetuneStartTrainMode"] = _pct(start["train_mode_before"]["mean"])
    m["finetuneStartMeanToExact"] = f"{start['start_mean_to_exact']['mean']:.2f}"
    m["finetuneStartVarToExact"] = f"{start['start_var_to_exact']['mean']:.2f}"
    for rate, (number, text) in RATE_TEXT.items():
        cell = summary["by_rate"][rate]
        r = f"finetuneRate{number}"
        m[r] = text
        for s, sname in STREAM_NAME.items():
            for mode, mname in MODE_NAME.items():
                e = cell[s][mode]
                p = f"{r}{sname}{mname}"
                m[f"{p}After"] = _pct(e["inference_after"]["mean"])
                m[f"{p}Change"] = _pts(e["inference_change"]["mean"])
                m[f"{p}ChangeCi"] = _ci(e["inference_change"])
                m[f"{p}ChangeVerdict"] = _verdict(e["inference_change"])
                m[f"{p}TrainMode"] = _pct(e["train_mode_after"]["mean"])
                m[f"{p}Recomputed"] = _pct(e["recomputed_after"]["mean"])
                m[f"{p}RecomputedGain"] = _pts(e["recomputed_gain"]["mean"])
                m[f"{p}RecomputedGainCi"] = _ci(e["recomputed_gain"])
                m[f"{p}RecomputedGainVerdict"] = _verdict(e["recomputed_gain"])
                m[f"{p}MeanToExact"] = f"{e['mean_to_exact']['mean']:.2f}"
                m[f"{p}VarToExact"] = f"{e['var_to_exact']['mean']:.2f}"
                m[f"{p}MeanToStart"] = f"{e['mean_to_start']['mean']:.2f}"
                m[f"{p}VarToStart"] = f"{e['var_to_start']['mean']:.2f}"
            # the sentence's variants are rendered in test_sentences.py; here: fed this rate's and stream's
            # entries and the starting accuracy
            m[f"{r}{sname}RecomputeSentence"] = finetune_sentences.recompute_sentence(
                cell[s], _pct(summary["start"]["inference_before"]["mean"])
            )
            d = cell[s]["frozen_minus_live"]["inference_after"]
            m[f"{r}{sname}FrozenMinusLive"] = _pts(d["mean"])
            m[f"{r}{sname}FrozenMinusLiveCi"] = _ci(d)
            m[f"{r}{sname}FrozenMinusLiveVerdict"] = _verdict(d)
        for mode, mname in MODE_NAME.items():
            d = cell["class_sorted_minus_shuffle"][mode]
            m[f"{r}{mname}SortedMinusShuffle"] = _pts(d["mean"])
            m[f"{r}{mname}SortedMinusShuffleCi"] = _ci(d)
            m[f"{r}{mname}SortedMinusShuffleVerdict"] = _verdict(d)
        # the generated claims' variants are written out in test_sentences.py; here: which entries feed them
        m[f"{r}RemedySentence"] = finetune_sentences.remedy_sentence(cell)
        # a pair of verdicts, each said once: random batches first, one-class second
        m[f"{r}LiveChangeVerdicts"] = _two_verdicts(
            cell["shuffle"]["live"]["inference_change"], cell["class_sorted"]["live"]["inference_change"]
        )
        m[f"{r}FrozenMinusLiveVerdicts"] = _two_verdicts(
            cell["shuffle"]["frozen_minus_live"]["inference_after"],
            cell["class_sorted"]["frozen_minus_live"]["inference_after"],
        )
    ordered = sorted(summary["by_rate"], key=float)
    m["finetuneSortedCostSentence"] = finetune_sentences.skew_cost_sentence(
        [RATE_TEXT[rate][1] for rate in ordered],
        [summary["by_rate"][rate]["class_sorted_minus_shuffle"]["live"] for rate in ordered],
    )
    m["finetuneRateOneRecoverySentence"] = finetune_sentences.recovery_sentence(
        summary["by_rate"]["1e-05"]["shuffle"]["live"]
    )
    return m


def test_macros_are_the_complete_dict_of_names_and_texts():
    summary = _hand_summary()
    got = finetune_macros.macros(summary, SETTINGS)
    want = _expected_macros(summary)
    assert len(want) == 16 + 3 * (1 + 4 * 13 + 2 * 4 + 2 * 3 + 1 + 2) + 2  # per rate: ..., its two pairs of verdicts
    assert set(got) == set(want)
    assert got == want


def test_hand_summary_reaches_every_verdict_and_the_zero_point_text():
    want = _expected_macros(_hand_summary())
    assert want["finetuneRateOneShuffleLiveChange"] == "$-0.04$"  # -0.0004: the sign shown
    assert want["finetuneRateOneShuffleLiveChangeCi"] == "[$-2.0$, $+0.004$]"  # 0.00004: above zero, printed so
    verdicts = {v for k, v in want.items() if k.endswith("Verdict")}
    assert verdicts == {"lies wholly below zero", "lies wholly above zero", "contains zero"}
    texts = [v for k, v in want.items() if k.startswith("finetuneRate") and not k.endswith("Verdict")]
    assert len(set(texts)) > 0.9 * len(texts)  # the numbers differ, so a swapped field shows


def test_macros_print_the_settings_of_another_study():
    """Other settings, one rate: the settings' macros follow them."""
    summary = _hand_summary()
    summary["by_rate"] = {"0.0003": summary["by_rate"]["0.0003"]}
    settings = dict(source_batch_size=64, batch_size=5, steps=40, every=10, train_rows=898, momentum=0.2,
                    confidence=0.99)  # fmt: skip
    got = finetune_macros.macros(summary, settings)
    per_rate = ("finetuneRate", "finetuneSortedCost")  # the rates' own macros, and the sentence over them
    assert {k: got[k] for k in _expected_macros(_hand_summary()) if not k.startswith(per_rate)} | {
        "finetuneRateCount": got["finetuneRateCount"],
        "finetuneRates": got["finetuneRates"],
        "finetuneRateOne": got["finetuneRateOne"],
    } == {
        "finetuneSourceBatchSize": "64",
        "finetuneBatchSize": "5",
        "finetuneSteps": "40",
        "finetuneEvery": "10",
        "finetuneRows": "200",
        "finetuneTrainRows": "898",
        "finetuneMomentum": "0.2",
        "finetuneConfidence": "99\\%",
        "finetuneRateCount": "1",
        "finetuneSeeds": "4",
        "finetuneTrainedWeight": "$1 \\times 10^{-4}$",  # 0.8 ** 40 = 1.33e-4
        "finetuneRates": "$3 \\times 10^{-4}$",
        "finetuneRateOne": "$3 \\times 10^{-4}$",
        "finetuneStartInference": _pct(summary["start"]["inference_before"]["mean"]),
        "finetuneStartTrainMode": _pct(summary["start"]["train_mode_before"]["mean"]),
        "finetuneStartMeanToExact": f"{summary['start']['start_mean_to_exact']['mean']:.2f}",
        "finetuneStartVarToExact": f"{summary['start']['start_var_to_exact']['mean']:.2f}",
    }
    assert not any(k.startswith(("finetuneRateTwo", "finetuneRateThree")) for k in got)


def _expected_rows(summary):
    rows = []
    for rate in ("1e-05", "0.0003", "0.001"):
        for s, words in (("shuffle", "random"), ("class_sorted", "one-class")):
            e = summary["by_rate"][rate][s]
            live, frozen = e["live"]["inference_change"], e["frozen"]["inference_change"]
            d = e["frozen_minus_live"]["inference_after"]
            rows.append(
                [
                    RATE_TEXT[rate][1],
                    words,
                    f"{_pts(live['mean'])} {_ci(live)}",
                    f"{_pts(frozen['mean'])} {_ci(frozen)}",
                    f"{_pts(d['mean'])} {_ci(d)}",
                    _pct(e["live"]["recomputed_after"]["mean"]),
                ]
            )
    return rows


def test_table_rows_are_one_per_rate_and_stream_in_increasing_rate_order():
    summary = _hand_summary()
    got = finetune_tables.table_rows(summary)
    assert got == _expected_rows(summary)
    assert got[0][2] == "$-0.04$ [$-2.0$, $+0.004$]"


def test_write_table_writes_the_booktabs_tabular_of_the_rows(tmp_path):
    summary = _hand_summary()
    path = tmp_path / "finetune.tex"
    finetune_tables.write_table(path, summary)
    body = "".join(" & ".join(r) + " \\\\\n" for r in _expected_rows(summary))
    want = (
        "% fine-tuning: inference accuracy change\n"
        "\\begin{tabular}{llrrrr}\n"
        "\\toprule\n"
        "rate & batches & change, live & change, frozen & frozen $-$ live & live, recomputed \\\\\n"
        "\\midrule\n" + body + "\\bottomrule\n"
        "\\end{tabular}\n"
    )
    assert path.read_text(encoding="utf-8") == want
    assert body.count("\n") == 6


def test_rates_are_ordered_by_value_not_by_text():
    summary = _hand_summary()
    assert finetune_summary.rate_keys(summary) == ["1e-05", "0.0003", "0.001"]


def test_points_percent_and_distance_texts():
    assert [finetune_sentences.points(v) for v in (0.0123, -0.0456, -0.0004, 0.0004, 0.0)] == [
        "$+1.2$",
        "$-4.6$",
        "$-0.04$",  # nonzero: the decimals its sign needs
        "$+0.04$",
        "$0.0$",  # exact zero, unsigned
    ]
    assert finetune_sentences.percent(0.99996) == "99.996\\%" and finetune_sentences.percent(1.0) == "100.0\\%"
    assert finetune_sentences.interval_points({"ci": [-0.0871, 0.0312]}) == "[$-8.7$, $+3.1$]"
    assert finetune_sentences.percent(0.8437) == "84.4\\%" and finetune_sentences.distance(0.127) == "0.13"


# ---- per-model layer means ---------------------------------------------------------------------


def test_layer_mean_averages_each_models_layers_per_distance():
    rows = [
        {"model": 1, "layer": 1, "mean_distance": 0.5, "var_distance": 4.0},
        {"model": 0, "layer": 1, "mean_distance": 0.25, "var_distance": 1.0},
        {"model": 2, "layer": 1, "mean_distance": 1e16, "var_distance": 9.0},
        {"model": 0, "layer": 2, "mean_distance": 0.75, "var_distance": 2.5},
        {"model": 1, "layer": 2, "mean_distance": 1.5, "var_distance": 8.0},
        {"model": 2, "layer": 2, "mean_distance": 3.0, "var_distance": 6.0},
        {"model": 2, "layer": 3, "mean_distance": -1e16, "var_distance": 0.0},
    ]
    got = finetune._layer_mean(rows, 3)
    assert list(got) == ["mean_distance", "var_distance"]
    # model 0: (0.25 + 0.75) / 2, model 1: (0.5 + 1.5) / 2, model 2: (1e16 + 3 - 1e16) / 3 summed exactly
    assert isinstance(got["mean_distance"], np.ndarray) and got["mean_distance"].dtype == np.float64
    assert got["mean_distance"].tolist() == [0.5, 1.0, 1.0]
    assert got["var_distance"].tolist() == [1.75, 6.0, 5.0]


def test_layer_mean_of_one_model_uses_only_its_rows():
    rows = [
        {"model": 0, "layer": 1, "mean_distance": 0.2, "var_distance": 0.6},
        {"model": 1, "layer": 1, "mean_distance": 7.0, "var_distance": 9.0},
        {"model": 0, "layer": 2, "mean_distance": 0.4, "var_distance": 0.9},
    ]
    got = finetune._layer_mean(rows, 1)
    assert got["mean_distance"].tolist() == [(0.2 + 0.4) / 2]
    assert got["var_distance"].tolist() == [(0.6 + 0.9) / 2]
    assert got["mean_distance"].shape == got["var_distance"].shape == (1,)


# ---- arms, conditions and controls (issue 29, item 10) ---------------------------------------


def _arm_rows():
    rows = []
    for lr in (1e-3, 1e-4):
        for c, shift in (("same", 0.0), ("shifted", -0.2)):
            for s, sorted_ in (("shuffle", 0.0), ("class_sorted", -0.05)):
                for k, arm in enumerate(finetune_summary.ARMS):
                    for seed in (2, 0, 1):
                        before = 0.9 + shift * (arm in ("live", "frozen", "momentum0")) + 0.003 * seed
                        rows.append(
                            dict(
                                seed=seed,
                                lr=lr,
                                condition=c,
                                stream=s,
                                arm=arm,
                                inference_before=before,
                                inference_after=before + sorted_ - 0.01 * k + 0.002 * seed**2 + 100 * lr * seed,
                                recomputed_after=before + 0.05 if arm in ("live", "frozen", "momentum0") else np.nan,
                            )
                        )
    return rows


def test_arms_summary_pairs_by_seed_and_contrasts_are_the_documented_differences():
    rows = _arm_rows()
    got = finetune_summary.summarise_arms(rows, 0.95, BONFERRONI)
    assert sorted(got, key=float) == ["0.0001", "0.001"]
    pick = lambda lr, c, s, a, k: [  # noqa: E731
        r[k] for r in sorted(rows, key=lambda r: r["seed"])
        if r["lr"] == lr and r["condition"] == c and r["stream"] == s and r["arm"] == a
    ]  # fmt: skip
    e = got["0.001"]["shifted"]["class_sorted"]
    after = pick(1e-3, "shifted", "class_sorted", "live", "inference_after")
    before = pick(1e-3, "shifted", "class_sorted", "live", "inference_before")
    d = [a - b for a, b in zip(after, before)]
    mean = math.fsum(d) / 3
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in d) / 2)
    half = sps.t.ppf(0.975, 2) * sd / math.sqrt(3)
    assert e["arms"]["live"]["change"]["mean"] == pytest.approx(mean, abs=1e-15)
    assert e["arms"]["live"]["change"]["ci"] == pytest.approx([mean - half, mean + half], abs=1e-12)
    assert "recomputed" in e["arms"]["momentum0"] and "recomputed" not in e["arms"]["none"]
    # live minus momentum 0: the arms' accuracies after, 0.01 apart by construction (k = 0 and 2)
    assert e["contrasts"]["statistics_update"]["mean"] == pytest.approx(0.02, abs=1e-12)
    assert e["contrasts"]["gradient_path"]["mean"] == pytest.approx(-0.01, abs=1e-12)
    # live minus a control compares changes: live (k = 0) against none (k = 3)
    assert e["contrasts"]["live_minus_none"]["mean"] == pytest.approx(0.03, abs=1e-12)
    # the batch-norm-specific parts: adjusted over the 8 rate, condition and stream cells of their control
    # (Bonferroni: each at 1 - 0.05 / 8), the other contrasts exploratory
    for lr, c, s in itertools.product((1e-3, 1e-4), ("same", "shifted"), ("shuffle", "class_sorted")):
        key = "0.001" if lr == 1e-3 else "0.0001"
        for control in ("none", "layernorm"):
            d = [
                (a - b) - (x - y)
                for a, b, x, y in zip(
                    pick(lr, c, s, "live", "inference_after"),
                    pick(lr, c, s, "live", "inference_before"),
                    pick(lr, c, s, control, "inference_after"),
                    pick(lr, c, s, control, "inference_before"),
                )
            ]
            mean = math.fsum(d) / 3
            sd = math.sqrt(math.fsum((v - mean) ** 2 for v in d) / 2)
            half = sps.t.ppf(1 - 0.05 / 8 / 2, 2) * sd / math.sqrt(3)
            part = got[key][c][s]["contrasts"][f"live_minus_{control}"]
            assert part["family"] == 8
            assert part["ci_adjusted"] == pytest.approx([max(mean - half, -2), min(mean + half, 2)], abs=1e-12)
            assert part["ci_adjusted"][0] <= part["ci"][0] and part["ci_adjusted"][1] >= part["ci"][1]
        assert "ci_adjusted" not in got[key][c][s]["contrasts"]["statistics_update"]
    # live minus none is 0.03 in every seed by construction, up to the rounding of the shares: no
    # spread, so both intervals are the point (bnstudy.evaluation.paired.ROUNDING)
    same = got["0.001"]["same"]["shuffle"]["contrasts"]["live_minus_none"]
    assert same["ci"] == same["ci_adjusted"] == pytest.approx([0.03, 0.03], abs=1e-12)
    assert same["ci"][0] == same["ci"][1]
    m = finetune_macros.arms_macros(got, {"shift": {"scale": 1.5, "offset": 0.5}, "confidence": 0.95}, BONFERRONI)
    assert m["finetuneShiftScale"] == "1.5" and m["finetuneShiftOffset"] == "0.5"
    assert m["finetuneContrastRateTwoShiftedClassSortedStatisticsUpdate"] == "$+2.0$"
    assert m["finetuneContrastCellsPerCondition"] == "4"
    # the contrasts are constant over seeds: zero spread, so their intervals are the point
    assert m["finetuneContrastShiftedStatisticsUpdateAboveCells"] == "4"
    assert m["finetuneContrastShiftedGradientPathBelowCells"] == "4"
    rows_t = finetune_tables.arms_table_rows(got)
    # three keys, five arms and the two batch-norm-specific parts with their adjusted intervals
    assert len(rows_t) == 8 and all(len(r) == 10 for r in rows_t)
    # live (k = 0) minus layer norm (k = 4), the same for every seed: an interval of no width, said so
    part = got["0.0001"]["same"]["shuffle"]["contrasts"]["live_minus_layernorm"]
    assert part["ci_adjusted"] == pytest.approx([0.04, 0.04], abs=1e-12)
    assert rows_t[0][-1] == "$+4.0$ $\\text{(every seed alike)}$"
    # a grid without layer norm: its arm and contrast are left out, not invented
    no_ln = finetune_summary.summarise_arms([r for r in rows if r["arm"] != "layernorm"], 0.95, BONFERRONI)
    assert "layernorm" not in no_ln["0.001"]["same"]["shuffle"]["arms"]
    assert "live_minus_layernorm" not in no_ln["0.001"]["same"]["shuffle"]["contrasts"]
    assert finetune_tables.arms_header(no_ln, BONFERRONI)[-2:] == ["no normaliser", "live $-$ no normaliser, adj."]
    with pytest.raises(ValueError, match="no rows of arm momentum0"):
        finetune_summary.summarise_arms([r for r in rows if r["arm"] != "momentum0"], 0.95, BONFERRONI)
    # what the summary records of the family: as declared, its members the 8 cells, each interval's level
    assert finetune_summary.families(got, 0.95, BONFERRONI) == {
        "finetune_specific": {"adjustment": "bonferroni", "members": 8, "confidence": 0.95,
                              "level": pytest.approx(1 - 0.05 / 8, abs=1e-15), "smallest_effect": 0.01}
    }  # fmt: skip
    no_controls = finetune_summary.summarise_arms([r for r in rows if r["arm"] not in ("none", "layernorm")], 0.95,
                                                  BONFERRONI)  # fmt: skip
    assert finetune_summary.families(no_controls, 0.95, BONFERRONI) == {}  # no control: no such family formed


def test_a_family_declared_without_adjustment_gives_the_unadjusted_intervals_and_says_so():
    """The same arms with the family declared with no adjustment: each part's interval is the one at the
    study's confidence (its ``ci``), recorded as applied, and the table marks the column unadjusted."""
    rows = _arm_rows()
    for r in rows:  # the controls' changes spread over seeds, so that the parts' intervals have a width
        r["inference_after"] += {"none": 0.004, "layernorm": -0.003}.get(r["arm"], 0.0) * r["seed"] ** 2
    adjusted = finetune_summary.summarise_arms(rows, 0.95, BONFERRONI)
    got = finetune_summary.summarise_arms(rows, 0.95, UNADJUSTED)
    parts = 0
    for lr, c, s in itertools.product(("0.001", "0.0001"), ("same", "shifted"), ("shuffle", "class_sorted")):
        for control in ("none", "layernorm"):
            part = got[lr][c][s]["contrasts"][f"live_minus_{control}"]
            assert part["family"] == 8 and part["ci_adjusted"] == part["ci"]
            assert part["ci"] == adjusted[lr][c][s]["contrasts"][f"live_minus_{control}"]["ci"]
            wider = adjusted[lr][c][s]["contrasts"][f"live_minus_{control}"]["ci_adjusted"]
            parts += wider[0] < part["ci"][0]
        assert got[lr][c][s]["arms"] == adjusted[lr][c][s]["arms"]  # nothing else depends on the family
    assert parts == 16  # the Bonferroni intervals are the wider ones in every cell
    assert finetune_summary.families(got, 0.95, UNADJUSTED) == {
        "finetune_specific": {"adjustment": "unadjusted", "members": 8, "confidence": 0.95, "level": 0.95,
                              "smallest_effect": 0.01}
    }  # fmt: skip
    assert finetune_tables.arms_header(got, UNADJUSTED)[-2:] == ["live $-$ no normaliser, unadj.",
                                                                 "live $-$ layer norm, unadj."]  # fmt: skip


# ---- the arms' macros, header and table rows, by value -------------------------------------


def _hand_arms():
    """Two rates whose text order ("0.001" < "1e-05") is not their numeric order, both conditions and
    streams, three arms (batch norm live with its recomputed accuracy, frozen, none), two contrasts;
    every number distinct: levels 0.5 + k/1000, changes and contrasts cycling below / above / around 0."""
    counter = itertools.count(1)
    # apart from the counter, so that the other numbers stay as they were
    adjusted = itertools.cycle(((-0.061, -0.0005), (0.0005, 0.071), (-0.052, 0.063)))

    def level():
        k = next(counter)
        return {"mean": 0.5 + k / 1000, "sd": 0.01, "ci": [0.4, 0.6], "seeds": 3}

    def diff():
        k = next(counter)
        lo, hi = [(-0.03 - k / 1000, -0.01), (0.01, 0.03 + k / 1000), (-0.02, 0.02 + k / 1000)][k % 3]
        return {"mean": (lo + hi) / 2, "sd": 0.01, "ci": [lo, hi], "seeds": 3}

    arms = {}
    for rate in ("0.001", "1e-05"):
        arms[rate] = {}
        for c in ("same", "shifted"):
            arms[rate][c] = {}
            for s in ("shuffle", "class_sorted"):
                e = {a: {"before": level(), "after": level(), "change": diff()} for a in ("live", "frozen", "none")}
                e["live"]["recomputed"] = level()
                part = diff()
                # its adjusted interval cycling below / above / around zero, apart from the unadjusted one,
                # so that a macro printing the wrong interval shows
                part |= {"family": 8, "ci_adjusted": list(next(adjusted))}
                arms[rate][c][s] = {"arms": e, "contrasts": {"live_minus_frozen": diff(), "live_minus_none": part}}
    return arms


def _arm_pct(v):
    return f"{100 * v:.1f}\\%"


def _arm_pts(v):
    return f"${100 * v:+.1f}$"


def _two_verdicts(first: dict, second: dict) -> str:
    a, b = _verdict(first), _verdict(second)
    if a == b:
        plural = {"contains zero": "contain zero", "lies wholly below zero": "lie wholly below zero",
                  "lies wholly above zero": "lie wholly above zero"}[a]  # fmt: skip
        return f"both intervals {plural}"
    return f"the first interval {a}, the second {b}"


def test_arms_macros_header_and_rows_by_value():
    arms = _hand_arms()
    m = finetune_macros.arms_macros(arms, {"shift": {"scale": 1.5, "offset": 0.25}, "confidence": 0.9}, BONFERRONI)
    want = {"finetuneShiftScale": "1.5", "finetuneShiftOffset": "0.25", "finetuneArmCells": "8"}
    below, above = {}, {}
    # RateOne is the smaller rate, 1e-05, although its key sorts after "0.001" as text
    for number, rate in (("One", "1e-05"), ("Two", "0.001")):
        for c, cw in (("same", "Same"), ("shifted", "Shifted")):
            for s, sw in (("shuffle", "Shuffle"), ("class_sorted", "ClassSorted")):
                e = arms[rate][c][s]
                for a, aw in (("live", "Live"), ("frozen", "Frozen"), ("none", "None")):
                    head = f"finetuneArmRate{number}{cw}{sw}{aw}"
                    x = e["arms"][a]
                    lo, hi = x["change"]["ci"]
                    want[head + "Before"] = _arm_pct(x["before"]["mean"])
                    want[head + "After"] = _arm_pct(x["after"]["mean"])
                    want[head + "Change"] = _arm_pts(x["change"]["mean"])
                    want[head + "ChangeCi"] = f"[{_arm_pts(lo)}, {_arm_pts(hi)}]"
                    want[head + "ChangeVerdict"] = (
                        "lies wholly below zero" if hi < 0 else "lies wholly above zero" if lo > 0 else "contains zero"
                    )
                    if a == "live":
                        want[head + "Recomputed"] = _arm_pct(x["recomputed"]["mean"])
                for k, kw in (("live_minus_frozen", "LiveMinusFrozen"), ("live_minus_none", "LiveMinusNone")):
                    d = e["contrasts"][k]
                    lo, hi = d["ci"]
                    head = f"finetuneContrastRate{number}{cw}{sw}{kw}"
                    want[head] = _arm_pts(d["mean"])
                    want[head + "Ci"] = f"[{_arm_pts(lo)}, {_arm_pts(hi)}]"
                    want[head + "Verdict"] = (
                        "lies wholly below zero" if hi < 0 else "lies wholly above zero" if lo > 0 else "contains zero"
                    )
                    below[(cw, kw)] = below.get((cw, kw), 0) + (hi < 0)
                    above[(cw, kw)] = above.get((cw, kw), 0) + (lo > 0)
                    if k == "live_minus_none":
                        lo, hi = d["ci_adjusted"]
                        want[head + "AdjCi"] = f"[{_arm_pts(lo)}, {_arm_pts(hi)}]"
                        want[head + "AdjVerdict"] = _verdict({"ci": d["ci_adjusted"]})
    for (cw, kw), n in below.items():
        want[f"finetuneContrast{cw}{kw}BelowCells"] = str(n)
        want[f"finetuneContrast{cw}{kw}AboveCells"] = str(above[(cw, kw)])
    want["finetuneContrastCellsPerCondition"] = "4"
    # the one counted contrast these arms have (no momentum-0 arm, no layer norm; live minus frozen is not
    # counted) is the batch-norm-specific part, counted at its family's level below: not a second time,
    # unadjusted, among the exploratory counts
    assert {k for _, k in below} == {"LiveMinusNone", "LiveMinusFrozen"}
    want["finetuneContrastCounts"] = ""
    want["finetuneControlsSentence"] = (
        "One control with no running statistics, the grid's networks without a normaliser,"
    )
    want["finetuneControlsCaption"] = "the networks without a normaliser"
    want["finetuneOneControl"] = "1"
    # the batch-norm-specific part: one control (no normaliser), its family the 8 cells
    want["finetuneSpecificFamily"] = "8"
    want["finetuneSpecificFamilySentence"] = (
        "Each of its intervals is Bonferroni-adjusted over the 8 fine-tuning settings, so that all of them hold "
        "together with probability at least 90\\%, whichever cell a claim picks"
    )
    want["finetuneSpecificMark"] = "adj."
    cis = [arms[r][c][s]["contrasts"]["live_minus_none"]["ci_adjusted"] for r in arms for c in arms[r]
           for s in arms[r][c]]  # fmt: skip
    n_below, n_above = sum(hi < 0 for _, hi in cis), sum(lo > 0 for lo, _ in cis)
    assert n_below and n_above and n_below + n_above < 8  # every clause of the count
    want["finetuneSpecificCounts"] = (
        f"against no normaliser lies below zero in {n_below} {'cell' if n_below == 1 else 'cells'}, above zero in "
        f"{n_above} and contains zero in "
        f"{8 - n_below - n_above}"
    )
    for number, rate in (("One", "1e-05"), ("Two", "0.001")):
        want[f"finetuneRate{number}SpecificSentence"] = _specific_by_hand(arms[rate]["same"])
    assert m == want
    assert {below[k] for k in below} != {0}  # the counts are not all zero: some intervals lie below zero

    assert finetune_tables.arms_header(arms, BONFERRONI) == ["rate", "inputs", "batches", "batch norm, live",
                                                 "batch norm, frozen", "no normaliser",
                                                 "live $-$ no normaliser, adj."]  # fmt: skip
    rows = finetune_tables.arms_table_rows(arms)
    assert [r[:3] for r in rows[:2]] == [["$1 \\times 10^{-5}$", "as trained", "random"],
                                         ["$1 \\times 10^{-5}$", "as trained", "one-class"]]  # fmt: skip
    assert [r[0] for r in rows] == ["$1 \\times 10^{-5}$"] * 4 + ["$1 \\times 10^{-3}$"] * 4
    first = arms["1e-05"]["same"]["shuffle"]["arms"]
    lo, hi = first["frozen"]["change"]["ci"]
    assert rows[0][4] == f"{_arm_pts(first['frozen']['change']['mean'])} [{_arm_pts(lo)}, {_arm_pts(hi)}]"
    # the last column: the batch-norm-specific part with its adjusted interval, not the unadjusted one
    for row, (rate, c, s) in zip(rows, [(r, c, s) for r in ("1e-05", "0.001") for c in ("same", "shifted")
                                        for s in ("shuffle", "class_sorted")]):  # fmt: skip
        d = arms[rate][c][s]["contrasts"]["live_minus_none"]
        lo, hi = d["ci_adjusted"]
        assert row[-1] == f"{_arm_pts(d['mean'])} [{_arm_pts(lo)}, {_arm_pts(hi)}]" and len(row) == 7


def test_the_arms_table_file_is_the_header_rows_alignment_and_caption(tmp_path):
    """write_arms_table: the three key columns left-aligned, one right-aligned column per arm, the
    header and rows of arms_header and arms_table_rows, and the caption comment, in a booktabs body."""
    arms = _hand_arms()
    path = tmp_path / "arms.tex"
    finetune_tables.write_arms_table(path, arms, BONFERRONI)
    header = finetune_tables.arms_header(arms, BONFERRONI)
    rows = finetune_tables.arms_table_rows(arms)
    assert len(header) == 7  # rate, inputs, batches, the three arms and the batch-norm-specific part
    lines = path.read_text().splitlines()
    assert lines[0] == "% fine-tuning arms: accuracy change"
    assert lines[1] == "\\begin{tabular}{lllrrrr}"
    assert lines[3] == " & ".join(header) + " \\\\"
    assert lines[5 : 5 + len(rows)] == [" & ".join(r) + " \\\\" for r in rows]
    assert lines[-2:] == ["\\bottomrule", "\\end{tabular}"] and len(lines) == 7 + len(rows)


def _specific_by_hand(cell):
    """One rate's sentence on the batch-norm-specific part with the inputs as trained (one control, no
    normaliser), written out: the control's changes' range, the parts with their adjusted intervals, and
    where those lie."""
    changes = [cell[s]["arms"]["none"]["change"]["mean"] for s in ("shuffle", "class_sorted")]
    lo, hi = _arm_pts(min(changes)), _arm_pts(max(changes))
    parts = [cell[s]["contrasts"]["live_minus_none"] for s in ("shuffle", "class_sorted")]
    printed = [f"{_arm_pts(d['mean'])} [{_arm_pts(d['ci_adjusted'][0])}, {_arm_pts(d['ci_adjusted'][1])}]"
               for d in parts]  # fmt: skip
    sides = [_verdict({"ci": d["ci_adjusted"]}) for d in parts]
    if sides[0] == sides[1]:
        plural = {"lies wholly below zero": "lie wholly below zero", "lies wholly above zero": "lie wholly above zero",
                  "contains zero": "contain zero"}[sides[0]]  # fmt: skip
        then = {
            "lies wholly below zero": ", so the loss beyond the control's can be put down to batch normalisation",
            "lies wholly above zero": ", so batch norm changes less for the worse than the control",
            "contains zero": ", so batch norm's change cannot be told apart from the control's, and no part of it "
            "can be put down to batch normalisation",
        }[sides[0]]
        verdict = f"both intervals {plural}{then}"
    else:
        order = ["lies wholly below zero", "lies wholly above zero", "contains zero"]
        first, second = sorted(sides, key=order.index)
        verdict = (
            f"of these intervals one {first} and one {second}, and only where an interval lies wholly below zero "
            "can a part of the loss be put down to batch normalisation"
        )
    return (
        f"the control changes by {lo} to {hi} points, and live batch norm's change minus the control's, the part "
        f"specific to batch normalisation, is {printed[0]} on random and {printed[1]} on one-class batches "
        f"against no normaliser: {verdict}"
    )


@pytest.mark.parametrize("adjustment", ["bonferroni", "none"])
def test_the_abstract_sentence_reads_every_rate_in_order_one_class_batches_as_trained(adjustment):
    """finetuneAbstractSentence (abstract_macros): RateOne (1e-05, not "0.001" that sorts first as text)
    then RateTwo, the inputs as trained, one-class batches; the live change and its one control's
    batch-norm-specific part (its interval at the family's level, named in its words) by value, under either
    declaration of the family."""
    arms = _hand_arms()
    cells = [(r, arms[key]["same"]["class_sorted"]) for r, key in
             (("$1 \\times 10^{-5}$", "1e-05"), ("$1 \\times 10^{-3}$", "0.001"))]  # fmt: skip
    lives = [e["arms"]["live"]["change"] for _, e in cells]
    parts = [e["contrasts"]["live_minus_none"] for _, e in cells]

    def printed(d, ci):
        return f"{_arm_pts(d['mean'])} points [{_arm_pts(ci[0])}, {_arm_pts(ci[1])}]"

    def phrase(live, part):
        lo, hi = part["ci_adjusted"]
        if live["ci"][1] < 0 and hi < 0:
            return "a loss beyond no normaliser's, which can be put down to batch normalisation"
        return "a change " + ("below" if hi < 0 else "above" if lo > 0 else "not told apart from") + " no normaliser's"

    (r1, _), (r2, _) = cells
    named = {"bonferroni": "Bonferroni-adjusted over the 8 fine-tuning settings", "none": "unadjusted (exploratory)"}[
        adjustment
    ]
    want = (
        "Fine-tuned live in one-class batches of 4 rows, batch normalisation's inference-mode accuracy changes by "
        f"{printed(lives[0], lives[0]['ci'])} at rate {r1} and {printed(lives[1], lives[1]['ci'])} at rate {r2} "
        f"(unadjusted: {_two_verdicts(lives[0], lives[1])}); its change minus no normaliser's, the part specific "
        f"to batch normalisation, paired by seed and {named}, is "
        f"{printed(parts[0], parts[0]['ci_adjusted'])} at {r1} and {printed(parts[1], parts[1]['ci_adjusted'])} "
        f"at {r2}: "
    )
    p1, p2 = phrase(lives[0], parts[0]), phrase(lives[1], parts[1])
    want += f"at both rates {p1}" if p1 == p2 else f"at {r1} {p1}; at {r2} {p2}"
    family = {"bonferroni": BONFERRONI, "none": UNADJUSTED}[adjustment]
    m = finetune_macros.abstract_macros(arms, {"batch_size": 4, "shift": {"scale": 1.5, "offset": 0.25}}, family)
    assert m == {"finetuneAbstractSentence": want}
