"""The companions section's published comparisons in the family of published comparisons
(``protocol_published``): the dropped protocol's interval over networks and examples at each probe
size, formed at the family's level and named by its tag, is the one the protocols section prints;
unadjusted or not formed (another task), the section reads as before."""

from __future__ import annotations

import re

import pytest

from bnstudy.evaluation.families import ADJUSTMENTS
from bnstudy.studies.companions import protocol_families as pf
from bnstudy.studies.companions import protocols as pr
from bnstudy.studies.companions import summary as companions_summary
from bnstudy.studies.companions.published import published_comparison, published_ratio_macros
from declared_families import declared_as
from test_protocol_families import _crossed, families
from test_protocols import FLIPS, PUBLISHED, _probes
from test_sentences import in_place, problems

SIZES = [2, 64]
LEVEL = {"bonferroni": 1 - 0.05 / 4, "unadjusted": 0.95}  # 2 protocols at 2 sizes: 4 members


def _both(published: str | None):
    """The protocols' report and the companions' published comparisons on the same probes, the
    published family declared ``published`` (``None``: not formed)."""
    fams = families("bonferroni", "unadjusted", published)
    probes = _probes(FLIPS)
    against = companions_summary.published_against(fams, probes, PUBLISHED)
    ours = published_ratio_macros(probes, PUBLISHED, SIZES, 0.95, against)
    return pr.report(probes, PUBLISHED, 0.95, fams), against, ours


@pytest.mark.parametrize("adjustment", ADJUSTMENTS)
def test_the_dropped_interval_is_the_one_the_protocols_section_prints(adjustment):
    """Each size's clause carries the dropped protocol's crossed interval at the family's level (by the
    reference), the same text as the protocols' sentence on the dropped protocol, and the same place."""
    out, against, m = _both(adjustment)
    assert against[1] == out["summary"]["families"][pf.PUBLISHED]["members"] == 4
    assert against[0].level(0.95, against[1]) == pytest.approx(LEVEL[adjustment], abs=1e-15)
    over = out["over_networks"].set_index(["protocol", "measure", "batch_size"])
    clauses = m["compPublishedComparison"].split("; ")
    assert len(clauses) == len(SIZES)
    for b, clause in zip(SIZES, clauses):
        r = over.loc[("dropped", "flip_rate", b)]
        assert (r.crossed_low, r.crossed_high) == pytest.approx(_crossed("dependence", b, LEVEL[adjustment]))
        printed = f"[{pr._pct(r.crossed_low)}, {pr._pct(r.crossed_high)}]"
        assert f"$b = {b}$ ({printed})" in out["macros"]["protReproducesDropped"]
        tag = declared_as(pf.PUBLISHED, adjustment).tag
        assert f"$b={b}$ the published " in clause and f"lies {r.place} our " in clause
        assert f" {printed} (ours " in clause
        assert (f"our {tag} interval" in clause) == (adjustment == "bonferroni")
    levels = {a: _both(a)[2]["compPublishedComparison"] for a in ADJUSTMENTS}
    assert levels["bonferroni"] != levels["unadjusted"]  # the level reaches the interval


def test_unadjusted_or_not_formed_reads_as_before():
    """Declared unadjusted, or not formed (another task: no family, no members), the macros are the
    ones formed at the confidence with no family at all, word for word."""
    _, _, unadjusted = _both("unadjusted")
    _, against, not_formed = _both(None)
    assert against is None
    plain = published_ratio_macros(_probes(FLIPS), PUBLISHED, SIZES, 0.95)
    assert unadjusted == not_formed == plain
    assert "adjusted" not in plain["compPublishedComparison"]
    assert plain["compPublishedComparison"].startswith("at $b=2$ the published 45.3\\% lies ")


CELLS = [
    {2: (0.453, 0.45, 0.40, 0.50), 16: (0.032, 0.05, 0.04, 0.06)},  # inside, below
    {2: (0.453, 0.30, 0.25, 0.35), 16: (0.032, 0.032, 0.02, 0.04)},  # above, inside
    {2: (0.453, 0.45, 0.44, 0.46)},  # one size only
    {2: (0.453, 0.60, 0.55, 0.65), 16: (0.032, 0.05, 0.04, 0.06)},  # below, below
    {},  # no size: n/a
]


@pytest.mark.parametrize("cells", CELLS)
@pytest.mark.parametrize("adjustment", [*ADJUSTMENTS, None])
@pytest.mark.parametrize("members", ["one per size", 4])
def test_every_comparison_sentence_reads_in_the_section(cells, adjustment, members):
    """The section's sentences on the published rates with both macros in place, every place, one
    size or none, a family of one or four, adjusted, unadjusted or not formed (a family of one has one
    comparison: the companions section's sizes are among its members)."""
    members = max(1, len(cells)) if members == "one per size" else members
    family = None if adjustment is None else declared_as(pf.PUBLISHED, adjustment)
    m = published_comparison(cells, family, members, "95\\%")
    adjusted = adjustment == "bonferroni" and bool(cells)
    assert ("adjusted" in m["compPublishedComparison"]) == adjusted
    if adjusted and members == 4:
        assert m["compPublishedComparison"].startswith(
            "with each of our intervals Bonferroni-adjusted over the 4 comparisons, so that all of them hold "
            "together at 95\\%, at $b=2$ the published 45.3\\% lies "
        )
    if adjusted and members == 1:
        assert m["compPublishedComparison"].startswith(
            "with our one interval Bonferroni-adjusted over its 1 comparison, so at the unadjusted level, at $b=2$"
        )
    if not adjusted:
        assert m == published_comparison(cells)
    ratios = len(re.findall(r"times theirs|the same as theirs|of theirs", m["compPublishedComparison"]))
    assert ratios == len(cells)
    (around,) = in_place("companions.tex", "compPublishedComparison", m["compPublishedComparison"], 400)
    text = around.replace("\\compPublishedOutside", m["compPublishedOutside"])
    sentences = re.findall(r"(?<=\\else )The published flip\s+rates.*?that interval\s+at [^.]*\.", text, re.S)
    assert len(sentences) == 1, text
    assert not problems(sentences[0]), sentences[0]
