"""Study 1's summary by value: the estimators, companions.json, the macros and the tables on tiny probe counts.

The probe counts are a fixed table (drawn once from a seeded generator, then fixed); the
expected values are computed here from that table alone: shares by plain division, the
stratified percentile bootstrap by NumPy indexing and ``np.quantile``, intervals over
networks as Student-t intervals on the logit scale (``share_reference``, SciPy's logit and t
quantile), the crossed variance components by NumPy's row and column means, macro names
written out. Printed shares follow the endpoint rule, written out here: a share that is
neither 0 nor 1 never prints as 0 or 1 at the printed precision.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from bnstudy.base.runtime import STREAM_BOOTSTRAP, derive_seed
from bnstudy.studies.companions import estimates as companions_estimates
from bnstudy.studies.companions import macros as companions_macros
from bnstudy.studies.companions import science as companions
from bnstudy.studies.companions import summary as companions_summary
from bnstudy.studies.companions.published import ratio_words
from share_reference import crossed_reference as share_crossed_reference
from share_reference import logit_t_interval

K = 7  # probes per example (random and one-class designs)
N_TEST = 20  # test rows: the exact design pairs an example with the 19 others
EXAMPLES = {3: 0, 5: 1, 10: 0, 12: 1}  # example: label (two classes, two examples each)
SIZES = [2, 4]
ONE_CLASS_B = 4
RESAMPLES = 199
CONF = 0.95
SEED = 0
PARAMS = {
    "seed": SEED,
    "resamples": RESAMPLES,
    "confidence": CONF,
    "examples_per_class": 2,
    "batches_per_example": K,
    "one_class_batch_size": ONE_CLASS_B,
}
PUBLISHED = {
    "inference_accuracy": 0.99,
    "flip_rate": {2: 0.45, 4: 0.2, 16: 0.03},
    "train_mode_accuracy": {2: 0.54, 16: 0.958},
    "one_class_same_label_b16": 0.774,
    "ever_flipped": {2: 1.0, 16: 0.46},
}
DESIGN_PLANS = [("random", b, K) for b in SIZES] + [("exact", 2, N_TEST - 1)]
DESIGN_PLANS += [(d, ONE_CLASS_B, K) for d in ("own_class", "other_class", "any_class")]
# (network, normaliser, train_batch_size, seed)
NETWORKS = [("dependence", "batchnorm", 16, s) for s in (4, 1, 2)]  # the first is seed 1, the smallest
NETWORKS += [("dependence_keep", "batchnorm", 16, 1)]
NETWORKS += [("grid", n, tb, s) for n, tb in (("batchnorm", 2), ("batchnorm", 16), ("batchrenorm", 16)) for s in (0, 1)]
NETWORKS += [("grid", "none", 16, s) for s in (0, 1)]


def probe_table() -> pd.DataFrame:
    """Per (network, example, design, b): probes, flips and correct labels; controls never flip."""
    rng = np.random.default_rng(20261201)
    rows = []
    for network, norm, tb, seed in NETWORKS:
        for e, label in EXAMPLES.items():
            inference = label if rng.random() < 0.8 else 1 - label
            for design, b, batches in DESIGN_PLANS:
                flips = 0 if norm == "none" else int(rng.integers(0, batches + 1))
                # correct labels: the unflipped probes keep the inference label; some flips hit the truth
                hits = int(rng.integers(0, flips + 1))
                correct = (batches - flips if inference == label else 0) + (hits if inference != label else 0)
                rows.append(
                    {
                        "network": network,
                        "normaliser": norm,
                        "train_batch_size": tb,
                        "seed": seed,
                        "model": 0,
                        "example": e,
                        "label": label,
                        "inference_label": inference,
                        "design": design,
                        "batch_size": b,
                        "batches": batches,
                        "flips": flips,
                        "correct": correct,
                    }
                )
    return pd.DataFrame(rows).sample(frac=1.0, random_state=1).reset_index(drop=True)  # rows in no order


PROBES = probe_table()


def cell_rows(network, seed, design, b, norm="batchnorm", tb=16):
    g = PROBES[
        (PROBES.network == network)
        & (PROBES.seed == seed)
        & (PROBES.design == design)
        & (PROBES.batch_size == b)
        & (PROBES.normaliser == norm)
        & (PROBES.train_batch_size == tb)
    ]
    return g.sort_values("example")


def shares(g):
    return {
        "flip_rate": (g.flips / g.batches).to_numpy(),
        "train_mode_accuracy": (g.correct / g.batches).to_numpy(),
        "ever_flipped": (g.flips > 0).to_numpy(dtype=float),
    }


def bootstrap(values, labels, design, b):
    """The stratified percentile bootstrap, written out: per stratum in sorted order, that
    stratum's count of draws with replacement; 2.5% and 97.5% percentiles of the means."""
    code = ("random", "exact", "own_class", "other_class", "any_class").index(design)
    rng = np.random.default_rng(derive_seed(SEED, STREAM_BOOTSTRAP, code, b))
    blocks = []
    for s in sorted(set(labels.tolist())):
        rows = np.flatnonzero(labels == s)
        blocks.append(rows[rng.integers(0, len(rows), size=(RESAMPLES, len(rows)))])
    means = values[np.concatenate(blocks, axis=1)].mean(axis=1)
    return tuple(np.quantile(means, [(1 - CONF) / 2, 1 - (1 - CONF) / 2]))


def expected_cell(network, seed, design, b, norm="batchnorm", tb=16):
    g = cell_rows(network, seed, design, b, norm, tb)
    labels = g.label.to_numpy()
    out = {
        "examples": len(g),
        "batches_per_example": int(g.batches.iloc[0]),
        "inference_accuracy": float(np.mean(g.inference_label.to_numpy() == labels)),
    }
    for name, v in shares(g).items():
        out[name] = v.sum() / len(v)
        out[f"{name}_ci_low"], out[f"{name}_ci_high"] = bootstrap(v, labels, design, b)
    return out


# Function scope on purpose: mutmut runs, for a mutant, only the tests during which the mutated
# function ran; a module-scoped result would be computed during the first test alone.
@pytest.fixture
def result():
    return companions_summary.summarise_all(PROBES, PUBLISHED, PARAMS)


# ---- the per-network estimators ------------------------------------------------------------


def test_the_table_reaches_every_branch():
    batch = PROBES[PROBES.normaliser != "none"]
    assert (batch.flips == 0).any() and (batch.flips > 0).any()
    assert (PROBES.inference_label != PROBES.label).any()
    assert len(PROBES) == len(NETWORKS) * len(EXAMPLES) * len(DESIGN_PLANS)


def test_summarise_gives_every_share_and_its_stratified_bootstrap_interval(result):
    table = result["summary_table"]
    assert len(table) == len(NETWORKS) * len(DESIGN_PLANS)
    for r in table.to_dict("records"):
        want = expected_cell(
            r["network"], r["seed"], r["design"], r["batch_size"], r["normaliser"], r["train_batch_size"]
        )
        for k, v in want.items():
            assert r[k] == pytest.approx(v, abs=1e-12), (k, r)
    keys = ["network", "normaliser", "train_batch_size", "seed", "design", "batch_size"]
    assert list(table.columns[: len(keys)]) == keys
    assert table[keys].apply(tuple, axis=1).tolist() == sorted(table[keys].apply(tuple, axis=1).tolist())


def test_summarise_by_hand_on_two_examples():
    """Two examples of two classes, 4 probes each: flips 1 and 0, correct 3 and 4.
    Each stratum holds one example, so every resample is the data: the interval is the point."""
    rows = pd.DataFrame(
        [
            {"network": "n", "normaliser": "batchnorm", "train_batch_size": 8, "seed": 0, "example": e}
            | {"label": lab, "inference_label": inf, "design": "random", "batch_size": 2}
            | {"batches": 4, "flips": f, "correct": c}
            for e, lab, inf, f, c in ((7, 1, 1, 1, 3), (2, 0, 1, 0, 0))
        ]
    )
    (r,) = companions.summarise(rows, 50, 0.9, 0)
    assert r["flip_rate"] == 0.125 and r["train_mode_accuracy"] == 0.375 and r["ever_flipped"] == 0.5
    assert r["inference_accuracy"] == 0.5 and r["examples"] == 2 and r["batches_per_example"] == 4
    for name in ("flip_rate", "train_mode_accuracy", "ever_flipped"):
        assert r[f"{name}_ci_low"] == pytest.approx(r[name], abs=1e-15)
        assert r[f"{name}_ci_high"] == pytest.approx(r[name], abs=1e-15)
    # without strata the resamples would vary: the same rows in one class give an interval
    (wide,) = companions.summarise(rows.assign(label=0), 50, 0.9, 0)
    assert wide["flip_rate_ci_low"] < 0.125 < wide["flip_rate_ci_high"]


def test_dependence_json_holds_every_value_of_the_first_network(result):
    out = result["summary"]
    for b in SIZES:
        want = expected_cell("dependence", 1, "random", b)
        got = out[str(b)]
        assert set(got) == {"flip_rate", "flip_ci", "train_mode_accuracy", "ever_flipped"}
        assert got["flip_rate"] == pytest.approx(want["flip_rate"], abs=1e-12)
        assert got["flip_ci"] == pytest.approx([want["flip_rate_ci_low"], want["flip_rate_ci_high"]], abs=1e-12)
        assert got["train_mode_accuracy"] == pytest.approx(want["train_mode_accuracy"], abs=1e-12)
        assert got["ever_flipped"] == pytest.approx(want["ever_flipped"], abs=1e-12)
    assert out["exact_flip_rate_b2"] == pytest.approx(
        expected_cell("dependence", 1, "exact", 2)["flip_rate"], abs=1e-12
    )
    assert out["inference_accuracy"] == pytest.approx(expected_cell("dependence", 1, "random", 2)["inference_accuracy"])
    for key, design in (
        ("one_class_same_flip", "own_class"),
        ("one_class_other_flip", "other_class"),
        ("one_class_any_flip", "any_class"),
    ):
        assert out[key] == pytest.approx(expected_cell("dependence", 1, design, ONE_CLASS_B)["flip_rate"], abs=1e-12)
    assert len(out) == len(SIZES) + 5 + 1  # sizes, exact, inference, three one-class rates, networks


def test_dependence_json_without_exact_or_any_class_designs():
    summary = pd.DataFrame(
        [
            {"design": "random", "batch_size": 4, "flip_rate": 0.25, "flip_rate_ci_low": 0.1}
            | {"flip_rate_ci_high": 0.4, "train_mode_accuracy": 0.7, "ever_flipped": 0.5, "inference_accuracy": 0.9},
            {"design": "own_class", "batch_size": 16, "flip_rate": 0.6, "inference_accuracy": 0.9},
            {"design": "other_class", "batch_size": 16, "flip_rate": 0.1, "inference_accuracy": 0.9},
        ]
    )
    out = companions.dependence_json(summary)
    assert out == {
        "4": {"flip_rate": 0.25, "flip_ci": [0.1, 0.4], "train_mode_accuracy": 0.7, "ever_flipped": 0.5},
        "exact_flip_rate_b2": None,
        "inference_accuracy": 0.9,
        "one_class_same_flip": 0.6,
        "one_class_other_flip": 0.1,
    }


def test_networks_are_logit_t_intervals_over_the_dependence_networks_within_shares(result):
    nets = result["summary"]["networks"]
    assert len(nets) == len(DESIGN_PLANS) * 3
    beyond = 0
    for design, b, _ in DESIGN_PLANS:
        per_network = [expected_cell("dependence", s, design, b) for s in (1, 2, 4)]
        for measure in companions_estimates.MEASURES:
            v = np.array([c[measure] for c in per_network])
            got = nets[f"{design}_b{b}_{measure}"]
            mean, _, lo, hi = logit_t_interval(v, CONF)
            if v.std() > 0:  # where the raw-scale t interval would leave [0, 1]
                raw = sps.t.interval(CONF, 2, loc=v.mean(), scale=sps.sem(v))
                beyond += raw[0] < 0 or raw[1] > 1
            assert got["networks"] == 3
            assert got["mean"] == pytest.approx(mean, abs=1e-12)
            assert got["ci"] == pytest.approx([lo, hi], abs=1e-12)
            assert 0 <= got["ci"][0] <= got["mean"] <= got["ci"][1] <= 1
    assert beyond  # cells where a raw t interval leaves the bounds are exercised


def test_grid_table_is_over_the_grids_seeds(result):
    grid = result["grid_table"]
    cells = {(n, tb) for _, n, tb, _ in NETWORKS[4:]}
    assert len(grid) == len(cells) * len(DESIGN_PLANS) * 3
    for r in grid.itertuples(index=False):
        v = np.array(
            [
                expected_cell("grid", s, r.design, r.batch_size, r.normaliser, r.train_batch_size)[r.measure]
                for s in (0, 1)
            ]
        )
        assert r.seeds == 2 and r.mean == pytest.approx(v.mean(), abs=1e-12)
        assert r.sd == pytest.approx(v.std(ddof=1), abs=1e-12)
        _, _, lo, hi = logit_t_interval(v, CONF)
        assert (r.ci_low, r.ci_high) == pytest.approx((lo, hi), abs=1e-12)


# ---- macros --------------------------------------------------------------------------------


def share_text(v, digits, scale):
    """A share times ``scale`` with ``digits`` decimals; where a share that is neither 0 nor 1
    would print as 0 or as ``scale``, as many more decimals as tell it apart."""
    x = scale * v
    d = digits
    while float(f"{x:.{d}f}") in (0.0, float(scale)) and x not in (0.0, float(scale)):
        d += 1
    return f"{x:.{d}f}"


def pct(v):
    return share_text(v, 1, 100) + "\\%"


def f3(v):
    return share_text(v, 3, 1)


def with_ci(v, lo, hi, f=pct):
    """``v [lo, hi]``, or the words for a share whose interval is all 1 or all 0."""
    if v == lo == hi == 1:
        return "every one"
    if v == lo == hi == 0:
        return "none"
    return f"{f(v)} {ci_text(lo, hi, f)}"


def ci_text(lo, hi, f=pct):
    """``[lo, hi]``, or ``(no spread)`` where both ends are one point."""
    return "(no spread)" if lo == hi else f"[{f(lo)}, {f(hi)}]"


def value_and_ci(v, lo, hi, f=pct):
    """The value and the interval as two macros; the words and no interval when degenerate."""
    words = with_ci(v, lo, hi, f)
    return (words, "") if words in ("every one", "none") else (f(v), ci_text(lo, hi, f))


def crossed_reference(table):
    """:func:`share_reference.crossed_reference` at this module's confidence."""
    return share_crossed_reference(table, CONF)


def flip_table(b):
    """The dependence networks' per-example flip rates with random companions of ``b``: seeds x examples."""
    return np.array([(cell_rows("dependence", s, "random", b).pipe(lambda g: g.flips / g.batches)) for s in (1, 2, 4)])


SIZE_NAME = {2: "BTwo", 4: "BFour"}
MEASURE_NAME = {"flip_rate": "FlipRate", "train_mode_accuracy": "TrainModeAccuracy", "ever_flipped": "EverFlipped"}


def expected_macros(published=PUBLISHED):
    first = {(d, b): expected_cell("dependence", 1, d, b) for d, b, _ in DESIGN_PLANS}
    own, other, any_ = (first[(d, ONE_CLASS_B)]["flip_rate"] for d in ("own_class", "other_class", "any_class"))
    exact = first[("exact", 2)]["flip_rate"]
    net_acc = logit_t_interval(
        np.array([expected_cell("dependence", s, *min(DESIGN_PLANS)[:2])["inference_accuracy"] for s in (1, 2, 4)]),
        CONF,
    )
    m = {
        "compExamples": "4",
        "compPerClass": "2",
        "compBatches": "7",
        "compExactBatches": "19",
        "compOneClassSize": "4",
        "compOneClassCompanions": "3",
        "compResamples": "199",
        "compConfidence": "95\\%",
        "compSizeList": "2, 4",
        "compInferenceAcc": f"{first[('random', 2)]['inference_accuracy']:.3f}",
        # every dependence network's accuracy over the probed examples: mean and logit-scale t interval
        "compNetInferenceAcc": f3(net_acc[0]),
        # every network alike here: "(no spread)", not "[0.750, 0.750]"
        "compNetInferenceAccCi": ci_text(net_acc[2], net_acc[3], f3),
        "compPublishedInferenceAcc": "0.990",
        "compOwnFlip": pct(own),
        "compOtherFlip": pct(other),
        "compAnyFlip": pct(any_),
        "compMixtureFlip": pct(own / 2 + other / 2),
        "compOwnShare": "0.5",
        "compOtherShare": "0.5",
        "compPublishedOneClassFlip": "22.6\\%",
        "compExactFlip": pct(exact),
        "compClasses": "2",
        "compOtherClasses": "1",
        "compDepSeed": "1",
        "compDepNetworks": "3",
    }
    for b in SIZES:
        c = first[("random", b)]
        n = SIZE_NAME[b]
        m[f"compFlip{n}"] = pct(c["flip_rate"])
        m[f"compFlipLow{n}"] = pct(c["flip_rate_ci_low"])
        m[f"compFlipHigh{n}"] = pct(c["flip_rate_ci_high"])
        m[f"compAcc{n}"], m[f"compAccCi{n}"] = value_and_ci(
            c["train_mode_accuracy"], c["train_mode_accuracy_ci_low"], c["train_mode_accuracy_ci_high"], f3
        )
        m[f"compEver{n}"], m[f"compEverCi{n}"] = value_and_ci(
            c["ever_flipped"], c["ever_flipped_ci_low"], c["ever_flipped_ci_high"]
        )
        for measure, word in MEASURE_NAME.items():
            v = np.array([expected_cell("dependence", s, "random", b)[measure] for s in (1, 2, 4)])
            mean, _, lo, hi = logit_t_interval(v, CONF)
            f = f3 if measure == "train_mode_accuracy" else pct
            m[f"compNet{word}{n}"], m[f"compNet{word}Ci{n}"] = value_and_ci(mean, lo, hi, f)
    lo, hi = first[("random", 2)]["flip_rate_ci_low"], first[("random", 2)]["flip_rate_ci_high"]
    m["compExactInInterval"] = "inside" if lo <= exact <= hi else "outside"
    clauses, outside = [], []
    for b in SIZES:  # the published rates against the interval over the dependence networks and the examples
        c = crossed_reference(flip_table(b))
        mean, (lo, hi) = c["mean"], c["ci"]
        theirs = published["flip_rate"][b]
        where = "below" if theirs < lo else "above" if theirs > hi else "inside"
        outside += [f"$b={b}$"] if where != "inside" else []
        clauses.append(
            f"at $b={b}$ the published {pct(theirs)} lies {where} our interval [{pct(lo)}, {pct(hi)}]"
            f" (ours {pct(mean)}, {ratio_words(mean, theirs)})"
        )
    m["compPublishedComparison"] = "; ".join(clauses)
    m["compPublishedOutside"] = f"at {' and '.join(outside)}" if outside else "at no size"
    floored = {}
    for end, b in (("Min", 2), ("Max", 4)):
        c = crossed_reference(flip_table(b))
        m[f"compNetFlipRateCombinedCi{end}"] = f"[{pct(c['ci'][0])}, {pct(c['ci'][1])}]"
        for name, sd in (("Networks", c["sd_networks"]), ("Examples", c["sd_examples"])):
            m[f"compSd{name}{end}"] = share_text(sd, 1, 100)
            m[f"compSd{name}Said{end}"] = "zero" if sd == 0 else f"{share_text(sd, 1, 100)} points"
            if sd == 0:
                floored.setdefault(name.lower(), []).append(f"$b={b}$")
        for name, share in zip(("Networks", "Examples", "Residual"), c["shares"]):
            zero = name != "Residual" and c[f"sd_{name.lower()}"] == 0
            m[f"compShare{name}{end}"] = "none" if zero else f"{100 * share:.0f}\\%"
        m[f"compComponentsDf{end}"] = f"{c['df']:.0f}"
    m["compComponentsFloored"] = floored_reference(floored)
    for b in SIZES:  # every network's rate and the median where one network's exceeds the others' sum
        rates = [expected_cell("dependence", s, "random", b)["flip_rate"] for s in (1, 2, 4)]
        top = max(rates)
        words = ""
        if top > sum(rates) - top:
            listed = f"{pct(rates[0])}, {pct(rates[1])} and {pct(rates[2])}"
            words = (
                " (one network drives this mean, its value exceeding the sum of the other two: per network "
                f"{listed} for seeds 1, 2 and 4; median {pct(sorted(rates)[1])})"
            )
        m[f"compNetFlipRateDriven{SIZE_NAME[b]}"] = words
    controls = PROBES[PROBES.normaliser == "none"]
    m["compControlNetworks"] = "2"
    m["compControlProbes"] = f"{int(controls.batches.sum()):,}".replace(",", "{,}")
    m["compControlFlips"] = "none"
    m["compGridNetworks"] = "8"
    for norm, tbs in (("batchnorm", (2, 16)), ("batchrenorm", (16,))):
        for b in SIZES:
            means = [
                np.mean([expected_cell("grid", s, "random", b, norm, tb)["flip_rate"] for s in (0, 1)]) for tb in tbs
            ]
            m[f"compGrid{norm.capitalize()}Min{SIZE_NAME[b]}"] = pct(min(means))
            m[f"compGrid{norm.capitalize()}Max{SIZE_NAME[b]}"] = pct(max(means))
    keep = {(d, b): expected_cell("dependence_keep", 1, d, b) for d, b, _ in DESIGN_PLANS}
    for b in SIZES:
        c = keep[("random", b)]
        m[f"compKeepFlip{SIZE_NAME[b]}"] = pct(c["flip_rate"])
        m[f"compKeepFlipCi{SIZE_NAME[b]}"] = f"[{pct(c['flip_rate_ci_low'])}, {pct(c['flip_rate_ci_high'])}]"
    m["compKeepExactFlip"] = pct(keep[("exact", 2)]["flip_rate"])
    m["compKeepInferenceAcc"] = f"{keep[('random', 2)]['inference_accuracy']:.3f}"
    # the same numbers named by the end of the size range, not by the size
    m["compSizeMin"], m["compSizeMax"], m["compSizeWords"], m["compExactSize"] = "2", "4", "2 and 4", "2"
    m["compFlipList"] = f"{m['compFlipBTwo']} and {m['compFlipBFour']}"
    for b in SIZES:
        m[f"compFlipCi{SIZE_NAME[b]}"] = f"[{m[f'compFlipLow{SIZE_NAME[b]}']}, {m[f'compFlipHigh{SIZE_NAME[b]}']}]"
    m["compRandomFlipOneClass"] = m["compFlipBFour"]  # random companions at the one-class size, 4
    for end, b in (("Min", 2), ("Max", 4)):
        for stem in ("compFlip", "compAcc", "compEver", "compKeepFlip") + tuple(
            f"compNet{w}" for w in MEASURE_NAME.values()
        ):
            if stem == "compNetFlipRate":
                m[f"compNetFlipRateDriven{end}"] = m[f"compNetFlipRateDriven{SIZE_NAME[b]}"]
            for ci in ("", "Ci"):
                m[f"{stem}{ci}{end}"] = m[f"{stem}{ci}{SIZE_NAME[b]}"]
        for norm in ("Batchnorm", "Batchrenorm"):
            m[f"compGrid{norm}Lowest{end}"] = m[f"compGrid{norm}Min{SIZE_NAME[b]}"]
            m[f"compGrid{norm}Highest{end}"] = m[f"compGrid{norm}Max{SIZE_NAME[b]}"]
            low, high = m[f"compGrid{norm}Lowest{end}"], m[f"compGrid{norm}Highest{end}"]
            # as the text quotes them: one value where the ends print alike, "none" where both are 0
            m[f"compGrid{norm}Range{end}"] = (
                "none" if low == high == "0.0\\%" else low if low == high else f"{low}--{high}"
            )
    return m


def test_every_macro_by_value(result):
    got, want = result["macros"], expected_macros()
    assert sorted(set(got) - set(want)) == [] and sorted(set(want) - set(got)) == []
    for name in sorted(want):
        assert got[name] == want[name], name


def test_published_rates_are_placed_against_our_interval_with_the_ratio():
    """A published rate moved below, into and above the interval over the dependence networks and the examples:
    the clause says where it lies and the ratio of ours to it; the sizes outside are listed."""
    nets = {}
    for b in SIZES:
        c = crossed_reference(flip_table(b))
        nets[b] = (c["mean"], None, *c["ci"])
    m2, _, lo2, hi2 = nets[2]
    m4, _, lo4, hi4 = nets[4]
    assert 0 < lo2 < hi2 < 1 and lo4 > 0.02  # room below and above both intervals
    for theirs4, where4, theirs2, outside in (
        (lo4 / 2, "below", (lo2 + hi2) / 2, "at $b=4$"),
        ((lo4 + hi4) / 2, "inside", (lo2 + hi2) / 2, "at no size"),
        ((hi4 + 1) / 2, "above", lo2 / 2, "at $b=2$ and $b=4$"),
    ):
        published = PUBLISHED | {"flip_rate": {2: theirs2, 4: theirs4, 16: 0.03}}
        m = companions_summary.summarise_all(PROBES, published, PARAMS)["macros"]
        clause4 = m["compPublishedComparison"].split("; ")[1]
        assert clause4 == (
            f"at $b=4$ the published {pct(theirs4)} lies {where4} our interval [{pct(lo4)}, {pct(hi4)}]"
            f" (ours {pct(m4)}, {ratio_words(m4, theirs4)})"
        )
        assert m["compPublishedOutside"] == outside
    # a published rate of zero: no ratio
    published = PUBLISHED | {"flip_rate": {2: 0.0, 4: (lo4 + hi4) / 2}}
    m = companions_summary.summarise_all(PROBES, published, PARAMS)["macros"]
    assert m["compPublishedComparison"].split("; ")[0].endswith(f"(ours {pct(m2)}, theirs zero)")


def test_exact_rate_inside_and_outside_the_sampled_interval():
    lo, hi = (expected_cell("dependence", 1, "random", 2)[k] for k in ("flip_rate_ci_low", "flip_rate_ci_high"))
    assert hi - lo > 1 / 19 and (lo > 0 or hi < 1)
    first_exact = (PROBES.network == "dependence") & (PROBES.seed == 1) & (PROBES.design == "exact")
    for flips, where in ((round((lo + hi) / 2 * 19), "inside"), (0 if lo > 0 else 19, "outside")):
        probes = PROBES.copy()
        probes.loc[first_exact, "flips"] = flips
        assert (lo <= flips / 19 <= hi) == (where == "inside")
        m = companions_summary.summarise_all(probes, PUBLISHED, PARAMS)["macros"]
        assert m["compExactInInterval"] == where
        assert m["compExactFlip"] == pct(flips / 19)


def test_mixture_flip_rate_by_hand_for_ten_classes():
    assert companions.mixture_flip_rate(0.5, 0.1, 10) == pytest.approx(0.05 + 0.09, abs=1e-15)
    assert companions.mixture_flip_rate(0.8, 0.2, 4) == pytest.approx(0.2 + 0.15, abs=1e-15)


# ---- tables --------------------------------------------------------------------------------


def test_dependence_table_by_value(result):
    header, rows, align, comment = result["tables"]["table"]
    assert header == [
        "companions",
        "flip rate [CI]",
        "publ.",
        "train-mode acc. [CI]",
        "publ.",
        "ever flipped [CI]",
        "publ.",
    ]
    assert align == "lllllll" and comment.startswith("Study 1")

    def ours(c):
        return [
            with_ci(c["flip_rate"], c["flip_rate_ci_low"], c["flip_rate_ci_high"]),
            with_ci(c["train_mode_accuracy"], c["train_mode_accuracy_ci_low"], c["train_mode_accuracy_ci_high"], f3),
            with_ci(c["ever_flipped"], c["ever_flipped_ci_low"], c["ever_flipped_ci_high"]),
        ]

    want = []
    for b in SIZES:
        f, a, e = ours(expected_cell("dependence", 1, "random", b))
        pub_f = pct(PUBLISHED["flip_rate"][b])
        pub_a = f3(PUBLISHED["train_mode_accuracy"][b]) if b in PUBLISHED["train_mode_accuracy"] else "--"
        pub_e = pct(PUBLISHED["ever_flipped"][b]) if b in PUBLISHED["ever_flipped"] else "--"
        want.append([f"random, $b={b}$", f, pub_f, a, pub_a, e, pub_e])
    c = expected_cell("dependence", 1, "exact", 2)
    want.append(
        [
            "every companion, $b=2$",
            pct(c["flip_rate"]),
            "--",
            f3(c["train_mode_accuracy"]),
            "--",
            pct(c["ever_flipped"]),
            "--",
        ]
    )
    for design, label in (("own_class", "own class"), ("other_class", "another class"), ("any_class", "any class")):
        f, a, e = ours(expected_cell("dependence", 1, design, ONE_CLASS_B))
        want.append([f"{label}, $b={ONE_CLASS_B}$", f, "--", a, "--", e, "--"])
    assert rows == want


def test_dependence_table_quotes_the_published_one_class_rate_at_b16_only():
    probes = PROBES.copy()
    one_class = probes.design.isin(["own_class", "other_class", "any_class"])
    probes.loc[one_class, "batch_size"] = 16
    params = PARAMS | {"one_class_batch_size": 16}
    rows = companions_summary.summarise_all(probes, PUBLISHED, params)["tables"]["table"][1]
    pub = {r[0]: r[2] for r in rows}
    assert pub["any class, $b=16$"] == "22.6\\%" and pub["own class, $b=16$"] == "--"
    assert pub["another class, $b=16$"] == "--"


def test_networks_table_by_value(result):
    header, rows, align, comment = result["tables"]["networks_latex"]
    assert header == ["companions", "flip rate [CI]", "train-mode acc. [CI]", "ever flipped [CI]"]
    assert align == "llll" and "t interval" in comment
    labels = {
        "random": "random",
        "exact": "every companion",
        "own_class": "own class",
        "other_class": "another class",
        "any_class": "any class",
    }
    want = []
    for design, b, _ in DESIGN_PLANS:
        cells = []
        for measure in companions_estimates.MEASURES:
            v = np.array([expected_cell("dependence", s, design, b)[measure] for s in (1, 2, 4)])
            mean, _, lo, hi = logit_t_interval(v, CONF)
            cells.append(with_ci(mean, lo, hi, f3 if measure == "train_mode_accuracy" else pct))
        want.append([f"{labels[design]}, $b={b}$", *cells])
    assert rows == want


def test_keep_macros_by_hand():
    keep = pd.DataFrame(
        [
            {"design": "random", "batch_size": 16, "flip_rate": 0.125, "flip_rate_ci_low": 0.05}
            | {"flip_rate_ci_high": 0.25, "inference_accuracy": 0.875},
            {"design": "exact", "batch_size": 2, "flip_rate": 0.5, "inference_accuracy": 0.875},
            {"design": "own_class", "batch_size": 16, "flip_rate": 0.9, "inference_accuracy": 0.875},
        ]
    )
    assert companions_macros.keep_macros(keep) == {
        "compKeepFlipBOneSix": "12.5\\%",
        "compKeepFlipCiBOneSix": "[5.0\\%, 25.0\\%]",
        "compKeepExactFlip": "50.0\\%",
        "compKeepInferenceAcc": "0.875",
    }
    assert companions_macros.keep_macros(keep.iloc[:0]) == {}


def test_exact_rate_on_the_ends_of_a_zero_width_interval_is_inside():
    """Every example of the first network flips in half its random b = 2 probes (interval [0.5, 0.5])
    and in half its exact pairs: the exact rate equals both ends, and is inside."""
    probes = PROBES.copy()
    first = (probes.network == "dependence") & (probes.seed == 1)
    random2 = first & (probes.design == "random") & (probes.batch_size == 2)
    exact = first & (probes.design == "exact")
    probes.loc[random2, ["batches", "flips"]] = [8, 4]
    probes.loc[exact, ["batches", "flips"]] = [2, 1]
    r = companions_summary.summarise_all(probes, PUBLISHED, PARAMS)
    assert r["summary"]["2"]["flip_ci"] == [0.5, 0.5] and r["summary"]["exact_flip_rate_b2"] == 0.5
    assert r["macros"]["compExactInInterval"] == "inside"


def test_table_comments():
    r = companions_summary.summarise_all(PROBES, PUBLISHED, PARAMS)["tables"]
    assert r["table"][3] == "Study 1: first dependence network, ours beside the published values"
    assert r["networks_latex"][3] == "Study 1: mean over the dependence networks, t interval over networks"


def test_summarise_a_cell_of_one_example():
    """A cell with a single example (one probed row) is summarised from that row alone."""
    rows = pd.DataFrame(
        [
            {"network": "n", "normaliser": "batchnorm", "train_batch_size": 8, "seed": 0, "example": 3}
            | {"label": 2, "inference_label": 2, "design": "random", "batch_size": 2}
            | {"batches": 5, "flips": 2, "correct": 4}
        ]
    )
    (r,) = companions.summarise(rows, 20, 0.9, 0)
    assert r["examples"] == 1 and r["batches_per_example"] == 5
    assert (r["flip_rate"], r["train_mode_accuracy"], r["ever_flipped"], r["inference_accuracy"]) == (
        0.4,
        0.8,
        1.0,
        1.0,
    )


def test_networks_table_holds_each_measures_t_interval_over_the_dependence_networks(result):
    """The ``networks_table`` frame the rule writes: one row per design, b and measure."""
    table = result["networks_table"]
    assert len(table) == len(DESIGN_PLANS) * len(companions_estimates.MEASURES)
    for design, b, _ in DESIGN_PLANS:
        for measure in companions_estimates.MEASURES:
            row = table[(table.design == design) & (table.batch_size == b) & (table.measure == measure)]
            v = np.array([expected_cell("dependence", s, design, b)[measure] for s in (1, 2, 4)])
            mean, _, lo, hi = logit_t_interval(v, CONF)
            assert len(row) == 1 and int(row.seeds.iloc[0]) == 3
            got = [float(row[c].iloc[0]) for c in ("mean", "ci_low", "ci_high")]
            assert got == pytest.approx([mean, lo, hi], abs=1e-12)


def test_macros_without_the_exact_design_say_n_a():
    m = companions_summary.summarise_all(PROBES[PROBES.design != "exact"], PUBLISHED, PARAMS)["macros"]
    assert m["compExactBatches"] == "n/a" and m["compExactFlip"] == "n/a"
    m = companions_summary.summarise_all(PROBES, PUBLISHED, PARAMS)["macros"]
    assert m["compExactBatches"] == str(N_TEST - 1) and m["compExactFlip"] != "n/a"


def test_dependence_table_without_a_published_measure_shows_dashes(result):
    """A measure missing from the published values altogether: its column is all dashes."""
    dep = result["summary_table"]
    dep0 = dep[(dep.network == "dependence") & (dep.seed == 1)]
    header, rows = companions_summary.dependence_table(dep0, PUBLISHED)[:2]
    assert header[3:5] == ["train-mode acc. [CI]", "publ."]
    assert [r[4] for r in rows[:2]] == ["0.540", "--"]  # published at b = 2 only
    published = {k: v for k, v in PUBLISHED.items() if k != "train_mode_accuracy"}
    header, rows = companions_summary.dependence_table(dep0, published)[:2]
    assert [r[4] for r in rows] == ["--"] * len(rows)
    assert [r[2] for r in rows[:2]] == ["45.0\\%", "20.0\\%"]  # the other columns as before


def floored_reference(floored: dict) -> str:
    """The sentence on the variance components set to zero, as the section reads it."""
    named = [(who, " and ".join(at)) for who, at in sorted(floored.items(), key=lambda kv: kv[0] != "networks")]
    if not named:
        return ""
    if len(named) == 1:
        ((who, at),) = named
        return (
            f" The {who}' variance component is set to zero ({at}), where its method-of-moments estimate falls to or"
            f" below zero: there the {who}' mean flip rates differ no more than the rest of the variation alone"
            " would make them differ."
        )
    (a, at_a), (b, at_b) = named
    return (
        f" The {a}' variance component ({at_a}) and the {b}' ({at_b}) are set to zero, where their"
        " method-of-moments estimates fall to or below zero: there the means of that source differ no more than"
        " the rest of the variation alone would make them differ."
    )
