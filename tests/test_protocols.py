"""Study 1 under both protocols (bnstudy.studies.companions.protocols): per-network estimates from probe counts,
intervals over networks, kept minus dropped by seed, whether each protocol reproduces the published
rates, and every variant of the generated sentences, against values written out here."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from bnstudy.studies.companions import protocols as pr

PUBLISHED = {"flip_rate": {2: 0.453, 64: 0.006}, "train_mode_accuracy": {2: 0.540, 64: 0.984}}


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
    return pr.report(_probes(FLIPS), PUBLISHED, 0.95)


def test_per_network_rates_are_means_over_examples(out):
    n = out["networks"]
    assert list(n.columns) == ["protocol", "seed", "batch_size", "examples", "flip_rate", "train_mode_accuracy"]
    assert n["protocol"].tolist()[:3] == ["dropped"] * 3 and n["protocol"].tolist()[-1] == "kept"
    kept2 = n[(n.protocol == "kept") & (n.batch_size == 2)].set_index("seed")
    assert kept2.flip_rate.tolist() == pytest.approx([0.60, 0.65, 0.60])
    assert kept2.train_mode_accuracy.tolist() == pytest.approx([0.40, 0.35, 0.40])
    assert set(n.examples) == {2}  # the one-class row and the grid network are left out


def test_intervals_over_networks_bounded_and_published_inside_or_not(out):
    o = out["over_networks"].set_index(["protocol", "measure", "batch_size"])
    mean, lo, hi = _t([0.45, 0.45, 0.50])
    r = o.loc[("dropped", "flip_rate", 2)]
    assert (r["mean"], r.ci_low, r.ci_high) == pytest.approx((mean, lo, hi))
    assert r.published == 0.453 and bool(r.inside) and r.ratio == pytest.approx(mean / 0.453)
    r = o.loc[("kept", "flip_rate", 2)]
    assert not r.inside and r.ci_low > 0.453
    r = o.loc[("dropped", "flip_rate", 64)]
    # a plain t interval would reach below zero here; on the logit scale it stays inside (0, 1)
    values = [0.05, 0.05, 0.0]  # the three networks' rates at b = 64 (FLIPS)
    mean, lo, hi = _t(values)
    assert 0 < r.ci_low < r["mean"] < r.ci_high < 1
    assert (r["mean"], r.ci_low, r.ci_high) == pytest.approx((mean, lo, hi))
    assert mean - sps.t.ppf(0.975, 2) * np.std(values, ddof=1) / math.sqrt(3) < 0  # where a plain t interval goes
    assert o.loc[("kept", "flip_rate", 64), "networks"] == 3


def test_kept_minus_dropped_paired_by_seed(out):
    p = out["paired"].set_index(["measure", "batch_size"]).loc[("flip_rate", 2)]
    d = [0.15, 0.20, 0.10]
    mean, sd = np.mean(d), np.std(d, ddof=1)
    half = sps.t.ppf(0.975, 2) * sd / math.sqrt(3)
    assert (p.seeds, p.gain, p.ci_low, p.ci_high) == pytest.approx((3, mean, mean - half, mean + half))
    m = out["macros"]
    assert m["protKeptMinusDroppedFlipRateMin"] == "+15.0"
    assert m["protKeptMinusDroppedFlipRateMinVerdict"] == "lies wholly above zero"
    assert m["protKeptMinusDroppedFlipRateMinCi"] == f"[{100 * (mean - half):+.1f}, {100 * (mean + half):+.1f}]"


def test_macros_say_which_protocol_reproduces(out):
    m = out["macros"]
    assert m["protNetworksDropped"] == m["protNetworksKept"] == m["protPairs"] == "3"
    assert m["protSizeMin"] == "2" and m["protSizeMax"] == "64" and m["protSizeCount"] == "2"
    assert m["protDroppedFlipRateMin"] == m["protDroppedFlipRateBTwo"] == "46.7\\%"
    assert m["protKeptFlipRateMax"] == m["protKeptFlipRateBSixFour"] == "3.3\\%"
    assert m["protPublishedFlipRateMin"] == "45.3\\%"
    assert m["protReproducesDropped"] == (
        "with the leftover rows dropped, the published flip rate lies inside the interval over networks "
        "at every probe size"
    )
    assert m["protReproducesKept"] == (
        "with the leftover rows kept, the published flip rate lies inside the interval over networks at "
        "$b = 64$ and outside it at $b = 2$"
    )
    assert m["protVerdict"] == (
        "The protocol with the leftover rows dropped is consistent with the published flip rates at every probe "
        "size; the one with them kept is not: at $b = 2$ only the protocol with the leftover rows dropped "
        "is consistent with the published rate; the one with them kept is not."
    )
    summary = out["summary"]
    assert summary["reproduces_flip_rate"] == {
        "dropped": {"inside": [2, 64], "outside": []},
        "kept": {"inside": [64], "outside": [2]},
    }
    assert summary["over_networks"]["kept"]["flip_rate"]["2"]["published_inside"] is False


def test_latex_table_rows(out):
    header, rows, align, _ = out["latex_table"]
    assert len(rows) == 4 and all(len(r) == len(header) == len(align) for r in rows)
    assert rows[0][:2] == ["flip rate", "$b=2$"] and rows[0][4] == "45.3\\%"
    assert rows[0][3].startswith("61.7\\% [")
    assert rows[2][0] == "train-mode acc." and rows[2][4] == "54.0\\%"


def test_a_protocol_without_probes_is_named():
    only = {k: v for k, v in FLIPS.items() if k[0] == "dependence"}
    with pytest.raises(ValueError, match=r"^no probes of the kept protocol$"):
        pr.report(_probes(only), PUBLISHED, 0.95)


@pytest.mark.parametrize("protocol", ["dropped", "kept"])
@pytest.mark.parametrize(
    "inside,outside",
    [([], [2, 4]), ([2], [4]), ([2, 4], []), ([2, 4], [16, 64]), ([4], [2, 16, 64])],
)
def test_every_reproduction_sentence_reads(protocol, inside, outside):
    text = pr.reproduction(protocol, inside, outside)
    _reads(text)
    assert text.startswith(f"with the leftover rows {protocol}, the published flip rate lies ")
    assert ("every probe size" in text) == (not inside or not outside)
    for b in inside + outside:
        assert f"$b = {b}$" in text or not (inside and outside)


SIZES = ([], [2], [4], [2, 4])


@pytest.mark.parametrize("dropped_in", SIZES)
@pytest.mark.parametrize("kept_in", SIZES)
def test_every_verdict_sentence_reads(dropped_in, kept_in):
    sizes = [2, 4]
    inside = {"dropped": dropped_in, "kept": kept_in}
    outside = {p: [b for b in sizes if b not in v] for p, v in inside.items()}
    text = pr.verdict_sentence(inside, outside, 2)
    _reads(text)
    assert text[0].isupper() and text.endswith(".") and text.count(":") == 1
    whole = [p for p in inside if not outside[p]]
    assert text.startswith(
        {0: "Neither protocol", 1: f"The protocol with the leftover rows {whole[0] if whole else ''}", 2: "Both"}[
            len(whole)
        ]
    )
    head = [p for p in inside if 2 in inside[p]]
    if len(head) == 1:
        assert f"only the protocol with the leftover rows {head[0]} is consistent with" in text
    elif not head:
        assert "neither is consistent with the published rate at $b = 2$" in text


def _reads(text: str) -> None:
    """Grammar-level invariants: no word doubled, no empty list, no stray spaces or punctuation."""
    words = re.findall(r"[A-Za-z$=0-9]+", text)
    assert all(a.lower() != b.lower() for a, b in zip(words, words[1:])), text
    assert "  " not in text and " ," not in text and " ;" not in text and " ." not in text, text
    assert "at  " not in text and "at and" not in text and "at ." not in text, text
