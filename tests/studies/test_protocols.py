"""Study 1 under both protocols (bnstudy.studies.companions.protocols): per-network estimates from probe counts,
intervals over networks and over networks and examples, kept minus dropped by seed, where each published
rate lies against the crossed interval, when one network drives a mean (bnstudy.studies.companions.driven),
and every variant of the generated sentences, against values written out here."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from bnstudy.studies.companions import driven
from bnstudy.studies.companions import protocols as pr
from declared_families import declared_as
from share_reference import crossed_reference

PUBLISHED = {"flip_rate": {2: 0.453, 64: 0.006}, "train_mode_accuracy": {2: 0.540, 64: 0.984}}
# the study's families as the test config declares them
DECLARED = {"protocol_keep": "bonferroni", "protocol_keep_accuracy": "unadjusted", "protocol_published": "unadjusted"}
FAMILIES = {name: declared_as(name, adjustment) for name, adjustment in DECLARED.items()}


def _probes(flips: dict, batches: int = 10) -> pd.DataFrame:
    """``flips[(network, seed, b)] = [flips per example]``; correct = batches - flips; a one-class
    row and an unused network that must be left out."""
    rows = []
    for (network, seed, b), per_example in flips.items():
        for example, f in enumerate(per_example):
            rows.append(
                {
                    "network": network,
                    "seed": seed,
                    "design": "random",
                    "batch_size": b,
                    "example": 10 - example,  # given in descending order
                    "batches": batches,
                    "flips": f,
                    "correct": batches - f,
                }
            )
    rows.append(dict(rows[0], design="own_class", flips=10))
    rows.append(dict(rows[0], network="grid", flips=10))
    return pd.DataFrame(rows)


def _t(values, confidence=0.95):
    """Mean and the t interval over networks on the logit scale (delta method), written out."""
    v = np.asarray(values, float)
    m = v.mean()
    half = sps.t.ppf(0.5 + confidence / 2, len(v) - 1) * np.std(v, ddof=1) / math.sqrt(len(v)) / (m * (1 - m))
    centre = math.log(m / (1 - m))
    return m, 1 / (1 + math.exp(-(centre - half))), 1 / (1 + math.exp(-(centre + half)))


# three seeds per protocol, two examples, ten batches each: flip rates per network written out
FLIPS = {
    ("dependence", 0, 2): [4, 5],  # 0.45
    ("dependence", 1, 2): [5, 4],  # 0.45
    ("dependence", 2, 2): [4, 6],  # 0.50
    ("dependence_keep", 0, 2): [6, 6],  # 0.60
    ("dependence_keep", 1, 2): [6, 7],  # 0.65
    ("dependence_keep", 2, 2): [5, 7],  # 0.60
    ("dependence", 0, 64): [0, 1],  # 0.05
    ("dependence", 1, 64): [1, 0],  # 0.05
    ("dependence", 2, 64): [0, 0],  # 0.00
    ("dependence_keep", 0, 64): [0, 0],
    ("dependence_keep", 1, 64): [1, 1],  # 0.10
    ("dependence_keep", 2, 64): [0, 0],
}


@pytest.fixture
def out():
    return pr.report(_probes(FLIPS), PUBLISHED, 0.95, FAMILIES)


def test_per_network_rates_are_means_over_examples(out):
    n = out["networks"]
    assert list(n.columns) == ["protocol", "seed", "batch_size", "examples", "flip_rate", "train_mode_accuracy"]
    assert n["protocol"].tolist()[:3] == ["dropped"] * 3 and n["protocol"].tolist()[-1] == "kept"
    kept2 = n[(n.protocol == "kept") & (n.batch_size == 2)].set_index("seed")
    assert kept2.flip_rate.tolist() == pytest.approx([0.60, 0.65, 0.60])
    assert kept2.train_mode_accuracy.tolist() == pytest.approx([0.40, 0.35, 0.40])
    assert set(n.examples) == {2}  # the one-class row and the grid network are left out


def _crossed(network, b):
    """The networks x examples table of flip rates written out from FLIPS (examples ascending: the
    probes list them descending) and its crossed interval by the reference."""
    seeds = sorted(s for (n, s, size) in FLIPS if n == network and size == b)
    table = [[f / 10 for f in reversed(FLIPS[(network, s, b)])] for s in seeds]
    return crossed_reference(table, 0.95)


def test_intervals_over_networks_bounded_and_published_against_the_crossed_interval(out):
    o = out["over_networks"].set_index(["protocol", "measure", "batch_size"])
    mean, lo, hi = _t([0.45, 0.45, 0.50])
    r = o.loc[("dropped", "flip_rate", 2)]
    assert (r["mean"], r.ci_low, r.ci_high) == pytest.approx((mean, lo, hi))
    assert r.published == 0.453 and r.ratio == pytest.approx(mean / 0.453)
    # the published rate is judged against the interval over networks and examples
    c = _crossed("dependence", 2)
    assert (r.crossed_low, r.crossed_high) == pytest.approx(c["ci"])
    assert r.place == "inside" and bool(r.inside) and not r.driven
    r = o.loc[("kept", "flip_rate", 2)]
    assert r.ci_low > 0.453  # outside the interval over networks alone ...
    assert (r.crossed_low, r.crossed_high) == pytest.approx(_crossed("dependence_keep", 2)["ci"])
    assert r.crossed_low < 0.453 and r.place == "inside"  # ... inside the one over networks and examples
    r = o.loc[("dropped", "flip_rate", 64)]
    # a plain t interval would reach below zero here; on the logit scale it stays inside (0, 1)
    values = [0.05, 0.05, 0.0]  # the three networks' rates at b = 64 (FLIPS)
    mean, lo, hi = _t(values)
    assert 0 < r.ci_low < r["mean"] < r.ci_high < 1
    assert (r["mean"], r.ci_low, r.ci_high) == pytest.approx((mean, lo, hi))
    assert mean - sps.t.ppf(0.975, 2) * np.std(values, ddof=1) / math.sqrt(3) < 0  # where a plain t interval goes
    assert o.loc[("kept", "flip_rate", 64), "networks"] == 3
    # kept at b = 64: 0.0, 0.1, 0.0; the one network's 0.1 exceeds the others' sum, 0
    assert bool(o.loc[("kept", "flip_rate", 64), "driven"])


def test_a_published_rate_far_off_lies_above_or_below_the_crossed_interval():
    published = {"flip_rate": {2: 0.999, 64: 0.0001}, "train_mode_accuracy": {}}
    o = pr.report(_probes(FLIPS), published, 0.95, FAMILIES)["over_networks"]
    o = o.set_index(["protocol", "measure", "batch_size"])
    for p in ("dropped", "kept"):
        assert o.loc[(p, "flip_rate", 2), "place"] == "above"
        assert o.loc[(p, "flip_rate", 64), "place"] == "below"
        assert not o.loc[(p, "flip_rate", 64), "inside"]
        assert o.loc[(p, "train_mode_accuracy", 2), "place"] == ""  # no published value


def test_kept_minus_dropped_paired_by_seed(out):
    p = out["paired"].set_index(["measure", "batch_size"]).loc[("flip_rate", 2)]
    d = [0.15, 0.20, 0.10]
    mean, sd = np.mean(d), np.std(d, ddof=1)
    # the flip rate's family, Bonferroni over the 2 probe sizes: each interval at 97.5%
    half = sps.t.ppf(1 - 0.05 / 2 / 2, 2) * sd / math.sqrt(3)
    assert (p.seeds, p.gain, p.ci_low, p.ci_high) == pytest.approx((3, mean, mean - half, mean + half))
    assert p.confidence == pytest.approx(0.975, abs=1e-15)
    # the training-mode accuracy's family, unadjusted: 95%
    a = out["paired"].set_index(["measure", "batch_size"]).loc[("train_mode_accuracy", 2)]
    half = sps.t.ppf(0.975, 2) * sd / math.sqrt(3)  # the accuracy's differences are the flip rate's, negated
    assert (a.gain, a.ci_low, a.ci_high, a.confidence) == pytest.approx((-mean, -mean - half, -mean + half, 0.95))
    # the macros: the adjusted interval reaches below zero, the unadjusted one of the same differences not
    # (the flip rate's family declares a smallest effect of a point: an interval that contains zero is read
    # against it too)
    reach = "contains zero and reaches beyond $\\pm1.0$ points, the smallest effect declared to matter"
    for adjustment, quantile, verdict in (("bonferroni", 1 - 0.05 / 4, reach),
                                          ("unadjusted", 0.975, "lies wholly above zero")):  # fmt: skip
        families = FAMILIES | {"protocol_keep": declared_as("protocol_keep", adjustment)}
        m = pr.report(_probes(FLIPS), PUBLISHED, 0.95, families)["macros"]
        half = sps.t.ppf(quantile, 2) * sd / math.sqrt(3)
        assert m["protKeptMinusDroppedFlipRateMin"] == "+15.0"
        assert m["protKeptMinusDroppedFlipRateMinVerdict"] == verdict
        assert m["protKeptMinusDroppedFlipRateMinCi"] == f"[{100 * (mean - half):+.1f}, {100 * (mean + half):+.1f}]"


def _interval_text(c):
    lo, hi = c["ci"]
    return f"[{pct(lo)}, {pct(hi)}]"


def pct(v):
    """A share in percent at one decimal, the endpoint rule written out for the values used here
    (a share above 0 below 0.05 points gets a second decimal)."""
    return f"{100 * v:.2f}\\%" if 0 < 100 * v < 0.05 else f"{100 * v:.1f}\\%"


def test_macros_say_which_protocol_reproduces(out):
    m = out["macros"]
    assert m["protNetworksDropped"] == m["protNetworksKept"] == m["protPairs"] == "3"
    assert m["protSizeMin"] == "2" and m["protSizeMax"] == "64" and m["protSizeCount"] == "2"
    assert m["protDroppedFlipRateMin"] == m["protDroppedFlipRateBTwo"] == "46.7\\%"
    assert m["protKeptFlipRateMax"] == m["protKeptFlipRateBSixFour"] == "3.3\\%"
    assert m["protPublishedFlipRateMin"] == "45.3\\%"
    crossed = {(p, b): _crossed(p, b) for p in ("dependence", "dependence_keep") for b in (2, 64)}
    assert m["protDroppedFlipRateMinCrossedCi"] == _interval_text(crossed[("dependence", 2)])
    assert m["protKeptFlipRateMaxCrossedCi"] == _interval_text(crossed[("dependence_keep", 64)])
    assert m["protReproducesDropped"] == (
        "with the leftover rows dropped, the published flip rate lies inside our unadjusted interval over networks and "
        f"examples at $b = 2$ ({_interval_text(crossed[('dependence', 2)])}) and $b = 64$ "
        f"({_interval_text(crossed[('dependence', 64)])})"
    )
    assert m["protReproducesKept"] == (
        "with the leftover rows kept, the published flip rate lies inside our unadjusted interval over networks and "
        f"examples at $b = 2$ ({_interval_text(crossed[('dependence_keep', 2)])}) and $b = 64$ "
        f"({_interval_text(crossed[('dependence_keep', 64)])})"
    )
    assert m["protVerdict"] == (
        "By our unadjusted intervals, both protocols are consistent with the published flip rates at every probe size."
    )
    # kept at b = 64: seeds 0, 1, 2 at 0.0, 0.1, 0.0 (one network drives the mean 1/30; median 0)
    driven_words = (
        " (one network drives this mean, its value exceeding the sum of the other two: per network "
        "0.0\\%, 10.0\\% and 0.0\\% for seeds 0, 1 and 2; median 0.0\\%)"
    )
    assert m["protKeptFlipRateMaxDriven"] == m["protKeptFlipRateBSixFourDriven"] == driven_words
    assert m["protDroppedFlipRateMaxDriven"] == m["protKeptFlipRateMinDriven"] == ""
    assert m["protMaxComparison"] == (
        "At $b = 64$, against the published 0.6\\%, our mean flip rate with the rows dropped is 5.6 times "
        f"theirs; with them kept 5.6 times theirs{driven_words}, the median zero."
    )
    note = " $^\\dagger$\\,Marked means: the flip rate with the rows kept at $b = 64$"
    assert m["protDrivenNote"] == f"{note}{driven_words}."
    assert not any(k.endswith("Ratio") for k in m)  # the mean's multiple is said in words, with the median
    summary = out["summary"]
    assert summary["reproduces_flip_rate"] == {
        "dropped": {"inside": [2, 64], "outside": []},
        "kept": {"inside": [2, 64], "outside": []},
    }
    kept2 = summary["over_networks"]["kept"]["flip_rate"]["2"]
    assert kept2["published_inside"] is True and kept2["published_place"] == "inside"
    assert kept2["crossed_ci"] == pytest.approx(list(crossed[("dependence_keep", 2)]["ci"]))
    assert summary["over_networks"]["kept"]["flip_rate"]["64"]["driven_by_one_network"] is True


def test_latex_table_rows(out):
    header, rows, align, _ = out["latex_table"]
    assert len(rows) == 4 and all(len(r) == len(header) == len(align) for r in rows)
    assert rows[0][:2] == ["flip rate", "$b=2$"] and rows[0][4] == "45.3\\%"
    assert rows[0][3].startswith("61.7\\% [")
    assert rows[1][3].startswith("3.3\\%$^\\dagger$ [")  # kept at b = 64: one network drives the mean
    assert "dagger" not in rows[1][2] and "dagger" not in rows[0][3]
    assert rows[2][0] == "train-mode acc." and rows[2][4] == "54.0\\%"


def test_a_protocol_without_probes_is_named():
    only = {k: v for k, v in FLIPS.items() if k[0] == "dependence"}
    with pytest.raises(ValueError, match=r"^no probes of the kept protocol$"):
        pr.report(_probes(only), PUBLISHED, 0.95, FAMILIES)


PLACES = (
    {2: "inside", 4: "inside"},
    {2: "below", 4: "below"},
    {2: "above"},
    {2: "inside", 4: "below"},
    {2: "above", 4: "inside"},
    {2: "below", 4: "above", 16: "inside"},
    {2: "inside", 4: "above", 16: "below", 64: "inside"},
)


@pytest.mark.parametrize("tag", ["adjusted", "unadjusted"])
@pytest.mark.parametrize("protocol", ["dropped", "kept"])
@pytest.mark.parametrize("places", PLACES)
def test_every_reproduction_sentence_reads(protocol, places, tag):
    intervals = {b: f"[{b}.0\\%, {b}.5\\%]" for b in places}
    text = pr.reproduction(protocol, places, intervals, tag)
    _reads(text)
    assert text.startswith(f"with the leftover rows {protocol}, the published flip rate lies ")
    assert text.count(f"our {tag} interval over networks and examples") == 1 and text.count("adjusted") == 1
    for b, place in places.items():
        assert f"$b = {b}$ ([{b}.0\\%, {b}.5\\%])" in text
    groups = [p for p in pr.PLACE_ORDER if p in places.values()]
    # the groups in order inside, below, above; the first names the interval, the rest say "it"
    positions = [text.index(f" {p} ") for p in groups]
    assert positions == sorted(positions)
    for p in groups[1:]:
        assert f" {p} it at " in text
    # each size sits in its own place's group
    for b, place in places.items():
        before = text[: text.index(f"$b = {b}$")]
        assert max(groups, key=lambda g: before.rfind(f" {g} ")) == place


def test_a_reproduction_without_any_interval_says_so():
    text = pr.reproduction("kept", {}, {}, "adjusted")
    _reads(text)
    assert text == "with the leftover rows kept, no published flip rate has an interval to be set against"


SIZES = ([], [2], [4], [2, 4])


@pytest.mark.parametrize("dropped_in", SIZES)
@pytest.mark.parametrize("kept_in", SIZES)
@pytest.mark.parametrize("judged", [("dropped", "kept"), ("dropped",), ("kept",), ()])
@pytest.mark.parametrize("tag", ["adjusted", "unadjusted"])
def test_every_verdict_sentence_reads(dropped_in, kept_in, judged, tag):
    sizes = [2, 4]
    inside = {"dropped": dropped_in, "kept": kept_in}
    outside = {p: [b for b in sizes if b not in v] for p, v in inside.items()}
    for p in ("dropped", "kept"):  # a protocol not judged has no published rate set against it
        if p not in judged:
            inside[p], outside[p] = [], []
    text = pr.verdict_sentence(inside, outside, tag)
    _reads(text)
    assert text[0].isupper() and text.endswith(".") and ":" not in text
    whole = [p for p in judged if not outside[p]]
    if not judged:  # no verdict, no interval to name
        assert text.startswith("No published flip rate") and "adjusted" not in text
        return
    head = f"By our {tag} intervals, "  # the verdict named by its family's tag, once
    assert text.startswith(head) and text.count("adjusted") == 1
    text = text[len(head) :]
    if len(judged) == 1:
        verb = "is" if whole else "is not"
        assert text.startswith(f"the protocol with the leftover rows {judged[0]} {verb} consistent")
    else:
        assert text.startswith(
            {0: "neither protocol", 1: f"the protocol with the leftover rows {whole[0] if whole else ''}", 2: "both"}[
                len(whole)
            ]
        )


@pytest.mark.parametrize("dropped", [[0.01, 0.012, 0.011], [0.01, 0.3, 0.02], [0.0, 0.0, 0.0]])
@pytest.mark.parametrize("kept", [[0.02, 0.03, 0.025], [0.01, 0.031, 0.338], [0.0, 0.1, 0.0]])
@pytest.mark.parametrize("theirs", [0.006, 0.0, None])
def test_every_max_comparison_reads(dropped, kept, theirs):
    seeds = [0, 1, 2]
    means = {"dropped": float(np.mean(dropped)), "kept": float(np.mean(kept))}
    text = pr.max_comparison(64, theirs, means, {"dropped": (dropped, seeds), "kept": (kept, seeds)})
    if theirs is None:
        assert text == ""
        return
    _reads(text)
    assert text.startswith(f"At $b = 64$, against the published {pct(theirs)}") and text.endswith(".")
    if theirs == 0:
        assert "times" not in text and "no multiple" in text
        return
    for p, values in (("dropped", dropped), ("kept", kept)):
        clause = driven.driven_clause(values, seeds, pr._pct)
        assert (clause != "") == driven.drives(values)
        if clause:
            assert clause in text and text.count("the median") >= 1
    assert "0.0 times" not in text  # a zero rate says zero
    assert text.count("the median") == sum(driven.drives(v) for v in (dropped, kept))


def _reads(text: str) -> None:
    """Grammar-level invariants: no word doubled, no empty list, no stray spaces or punctuation."""
    words = re.findall(r"[A-Za-z$=0-9]+", text)
    # digits alone may repeat (3.3\\% is the tokens 3 and 3)
    assert all(a.lower() != b.lower() or a.isdigit() for a, b in zip(words, words[1:])), text
    assert "  " not in text and " ," not in text and " ;" not in text and " ." not in text, text
    assert "at  " not in text and "at and" not in text and "at ." not in text, text
