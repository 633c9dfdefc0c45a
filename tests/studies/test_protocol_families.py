"""Study 1 under both protocols takes its families of comparisons from the declaration
(bnstudy.studies.companions.protocol_families): kept minus dropped in the flip rate and in the
training-mode accuracy over the probe sizes, and the published flip rates against each protocol's
interval over networks and examples. Each interval at its family's level, each changed sentence in
every variant under both adjustments, alone and in its place in the section, and the summary's
record read by the families check."""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from bnstudy.base import catalogue
from bnstudy.evaluation.families import ADJUSTMENTS
from bnstudy.paper import families as paper_families
from bnstudy.studies.companions import protocol_families as pf
from bnstudy.studies.companions import protocols as pr
from declared_families import declared_as
from share_reference import crossed_reference
from test_protocols import FLIPS, PUBLISHED, _probes
from test_sentences import in_place, problems, render

ROOT = Path(__file__).resolve().parents[2]
SECTION = (ROOT / "paper" / "sections" / "protocols.tex").read_text()
NAMES = (pf.KEEP, pf.KEEP_ACCURACY, pf.PUBLISHED)


def families(keep: str, accuracy: str, published: str | None) -> dict:
    out = {pf.KEEP: declared_as(pf.KEEP, keep), pf.KEEP_ACCURACY: declared_as(pf.KEEP_ACCURACY, accuracy)}
    if published is not None:
        out[pf.PUBLISHED] = declared_as(pf.PUBLISHED, published)
    return out


def test_the_catalogue_forms_the_published_family_only_on_the_published_task():
    (study,) = [s for s in catalogue.STUDIES if s.name == "companions"]
    assert study.formed_families({"data": {"name": "digits"}}) == (pf.KEEP, pf.KEEP_ACCURACY, pf.PUBLISHED)
    assert study.formed_families({"data": {"name": "fashion_mnist"}}) == (pf.KEEP, pf.KEEP_ACCURACY)


@pytest.mark.parametrize("sizes", [1, 4])
@pytest.mark.parametrize("keep, accuracy", list(itertools.product(ADJUSTMENTS, repeat=2)))
def test_the_keep_sentence_in_every_declaration(keep, accuracy, sizes):
    flip, acc = declared_as(pf.KEEP, keep), declared_as(pf.KEEP_ACCURACY, accuracy)
    text = pf.keep_sentence(flip, acc, sizes, "95\\%")
    assert text.startswith("The intervals of kept minus dropped") and not text.endswith(".")
    for window in in_place("protocols.tex", "protKeepSentence", text):
        assert not problems(window), window
    assert not problems(f"{text}."), text
    assert ("95\\%" in text) == (sizes > 1 or "unadjusted" in (keep, accuracy)), text  # a family of one: no level
    # each family's adjustment named in its words; "hold together" only where Bonferroni joins several
    for family in (flip, acc):
        assert family.phrase(sizes) in text
    together = sizes > 1 and "bonferroni" in (keep, accuracy)
    assert ("hold together" in text) == together, text
    assert ("on its own" in text) == ("unadjusted" in (keep, accuracy)), text
    # the two declared alike: their words said once
    assert (text.count(flip.phrase(sizes)) == 1) == (keep == accuracy or flip.phrase(sizes) != acc.phrase(sizes))


@pytest.mark.parametrize("members", [0, 1, 4])
@pytest.mark.parametrize("adjustment", ADJUSTMENTS)
def test_the_published_clause_in_every_declaration(adjustment, members):
    family = declared_as(pf.PUBLISHED, adjustment)
    text = pf.published_clause(family, members, "95\\%")
    (window,) = in_place("protocols.tex", "protPublishedClause", text)
    assert not problems(window), window
    assert text.startswith("and ") and not text.endswith(".")
    if members == 0:
        assert "adjusted" not in text
        return
    assert family.phrase(members) in text
    assert ("hold together at 95\\%" in text and "do not" not in text) == (adjustment == "bonferroni" and members > 1)
    assert ("do not hold together" in text) == (adjustment == "unadjusted")


@pytest.mark.parametrize("adjustment", ADJUSTMENTS)
def test_in_full_points_to_the_companions_section_under_every_declaration(adjustment):
    """The companions section states the dropped protocol's comparison with the same interval at the
    family's level (test_companions_published_family), so the protocols section never spells it out a
    second time: one verdict per comparison, adjusted or not."""
    family = declared_as(pf.PUBLISHED, adjustment)
    kept = pr.reproduction("kept", {2: "inside", 4: "below"}, {2: "[1\\%, 2\\%]", 4: "[3\\%, 4\\%]"}, family.tag)
    dropped = pr.reproduction("dropped", {2: "above"}, {2: "[5\\%, 6\\%]"}, family.tag)
    text = pf.in_full(kept)
    (window,) = in_place("protocols.tex", "protInFull", text)
    assert not problems(window), window
    assert kept in text and text.endswith(".")
    assert dropped not in text and "[5\\%, 6\\%]" not in text
    assert text.endswith("(with them dropped: the results above).")
    assert text.count(f"our {family.tag} interval") == 1


def _report(keep, accuracy, published):
    fams = families(keep, accuracy, published)
    out = pr.report(_probes(FLIPS), PUBLISHED, 0.95, fams)
    return fams, out


def _crossed(network, b, level):
    seeds = sorted(s for (n, s, size) in FLIPS if n == network and size == b)
    table = [[f / 10 for f in reversed(FLIPS[(network, s, b)])] for s in seeds]
    return crossed_reference(table, level)["ci"]


DECLARATIONS = [(a, a, a) for a in ADJUSTMENTS] + [("bonferroni", "unadjusted", "unadjusted")]  # the last: as declared


@pytest.mark.parametrize("keep, accuracy, published", DECLARATIONS)
def test_levels_records_and_the_section_in_the_familys_words(keep, accuracy, published):
    """Each family's intervals at its level (kept minus dropped: 2 probe sizes; published: 2 protocols at 2
    sizes), the summary's records read by the families check, and the section's paragraph and caption
    with the study's and the families' macros in place."""
    fams, out = _report(keep, accuracy, published)
    level = {"bonferroni": {2: 1 - 0.05 / 2, 4: 1 - 0.05 / 4}, "unadjusted": {2: 0.95, 4: 0.95}}
    paired = out["paired"].set_index(["measure", "batch_size"])
    for measure, adjustment in (("flip_rate", keep), ("train_mode_accuracy", accuracy)):
        d = np.asarray([0.15, 0.20, 0.10]) * (1 if measure == "flip_rate" else -1)
        half = sps.t.ppf(0.5 + level[adjustment][2] / 2, 2) * d.std(ddof=1) / math.sqrt(3)
        r = paired.loc[(measure, 2)]
        assert (r.ci_low, r.ci_high) == pytest.approx((d.mean() - half, d.mean() + half))
        assert r.confidence == pytest.approx(level[adjustment][2], abs=1e-15)
    o = out["over_networks"].set_index(["protocol", "measure", "batch_size"])
    for protocol, network in (("dropped", "dependence"), ("kept", "dependence_keep")):
        for b in (2, 64):
            r = o.loc[(protocol, "flip_rate", b)]
            assert (r.crossed_low, r.crossed_high) == pytest.approx(_crossed(network, b, level[published][4]))
    records = out["summary"]["families"]
    assert list(records) == list(NAMES)
    assert [records[n]["members"] for n in NAMES] == [2, 2, 4]
    declarations = {n: {"compares": f.compares, "over": f.over, "adjustment": f.adjustment,
                        "smallest_effect": f.smallest_effect} for n, f in fams.items()}  # fmt: skip
    checked = paper_families.check(declarations, dict.fromkeys(NAMES, "protocols"), {"protocols": out["summary"]})
    m = out["macros"] | paper_families.macros(checked)
    assert m["protPublishedConfidence"] == {"bonferroni": "98.75\\%", "unadjusted": "95\\%"}[published]
    text = render(SECTION, m)
    assert not re.search(r"\\(prot|familyProtocol)[A-Za-z]*", text), text
    paragraph, caption = text[: text.index("\\begin{table}")], text[text.index("\\caption{") :]
    for sentence in re.split(r"(?<=[.])\s", paragraph) + [caption]:  # the section's sentences, each alone
        assert not problems(sentence), sentence
    assert "95\\% intervals over networks and\nexamples" in paragraph or published == "bonferroni"
    tag = {"bonferroni": "adjusted", "unadjusted": "unadjusted"}
    assert f"(the {tag[keep]} interval " in paragraph and f"By our {tag[published]} intervals, " in paragraph
    assert f"with the {tag[keep]} interval\nfor the flip rate and the {tag[accuracy]} one" in caption
    assert ("unadjusted" in paragraph) == ("unadjusted" in (keep, accuracy, published))
    comment = out["latex_table"][3]
    assert comment.endswith(f"its flip rate {fams[pf.KEEP].phrase(2)}, its training-mode accuracy "
                            f"{fams[pf.KEEP_ACCURACY].phrase(2)}")  # fmt: skip


def test_without_the_published_family_the_crossed_intervals_stay_at_the_confidence():
    """Another task (no published family formed): the crossed intervals at 95%, no record of the family,
    and the words say the intervals are unadjusted."""
    _, out = _report("bonferroni", "unadjusted", None)
    assert list(out["summary"]["families"]) == [pf.KEEP, pf.KEEP_ACCURACY]
    r = out["over_networks"].set_index(["protocol", "measure", "batch_size"]).loc[("kept", "flip_rate", 2)]
    assert (r.crossed_low, r.crossed_high) == pytest.approx(_crossed("dependence_keep", 2, 0.95))
    assert out["macros"]["protPublishedConfidence"] == "95\\%"
    assert "unadjusted" in out["macros"]["protVerdict"]


def test_the_published_members_count_only_rates_set_against_a_crossed_interval():
    """Published flip rates at b = 2 only: 2 members (one per protocol); with one network per protocol
    (no crossed design) none, and no level recorded."""
    fams = families("bonferroni", "unadjusted", "bonferroni")
    published = {"flip_rate": {2: 0.45}, "train_mode_accuracy": {}}
    out = pr.report(_probes(FLIPS), published, 0.95, fams)
    assert out["summary"]["families"][pf.PUBLISHED]["members"] == 2
    assert out["summary"]["families"][pf.PUBLISHED]["level"] == pytest.approx(1 - 0.05 / 2, abs=1e-15)
    one = {k: v for k, v in FLIPS.items() if k[1] == 0}
    lone = pr.report(_probes(one), published, 0.95, fams)["summary"]["families"]
    assert lone[pf.PUBLISHED]["members"] == 0 and lone[pf.PUBLISHED]["level"] is None


@pytest.mark.parametrize("adjustment", ADJUSTMENTS)
@pytest.mark.parametrize(
    "lo, hi, said, printed",
    [
        (0.040, 0.306, "lies wholly above zero", "[+4.0, +30.6]"),
        (-0.305, -0.002, "lies wholly below zero", "[-30.5, -0.2]"),
        (-0.042, 0.036, "contains zero and reaches beyond", "[-4.2, +3.6]"),
        (-0.004, 0.006, "contains zero and lies within", "[-0.4, +0.6]"),
        (-0.01001, 0.007, "contains zero and reaches beyond", "[-1.001, +0.7]"),  # an end that rounds to the margin
        (-0.0099, 0.0003, "contains zero and lies within", "[-0.99, +0.03]"),
    ],
)
def test_kept_minus_dropped_is_read_against_the_smallest_effect(adjustment, lo, hi, said, printed):
    """The flip rate's family declares a smallest effect: an interval that contains zero says whether it lies
    within it (never left to read as no effect), its ends printed so that the reading can be checked; the
    accuracy's family declares none and reads as before. In its place in the section."""
    flip = declared_as(pf.KEEP, adjustment)
    text = pf.keep_verdict(lo, hi, flip)
    assert text.startswith(said), text
    assert ("smallest effect declared to matter" in text) == (lo <= 0 <= hi)
    assert pf.keep_interval(lo, hi, flip) == printed
    accuracy = declared_as(pf.KEEP_ACCURACY, adjustment)
    assert accuracy.smallest_effect is None
    assert pf.keep_verdict(lo, hi, accuracy) in ("lies wholly above zero", "lies wholly below zero", "contains zero")
    (window,) = in_place("protocols.tex", "protKeptMinusDroppedFlipRateMinVerdict", text)
    assert not problems(window), window
