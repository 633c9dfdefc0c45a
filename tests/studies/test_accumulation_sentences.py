"""Every variant of the accumulation study's sentences that read its declared families, rendered and
checked: the abstract's sentence (each comparison's interval below, above or across zero, wholly
within the headline family's smallest effect or not, or with none declared; the family Bonferroni-
adjusted or not), the headline verdicts of the section, the Protocol's sentence on the two families
(each in either adjustment, with and without a smallest effect), and the section's static text and
the table's caption with the family macros in place. Each is held to the grammar-level invariants of
tests/studies/test_sentences.py, alone and in its place in the paper."""

from __future__ import annotations

import itertools
import re

import pandas as pd
import pytest

import accumulation_families as af
from bnstudy.evaluation.families import declared
from bnstudy.paper import families as paper_families
from bnstudy.studies.accumulation import family as accumulation_family
from bnstudy.studies.accumulation import sentences as accumulation_sentences
from test_sentences import SECTIONS, abstract_windows, in_place, problems, render

MARGIN = 0.01
# (side of zero, wholly within +-MARGIN) -> (mean, low, high) and the printed difference
INTERVALS = {
    ("below", False): (-0.02, -0.03, -0.01, "$-2.00$ points $[-3.00, -1.00]$"),
    ("below", True): (-0.005, -0.008, -0.002, "$-0.50$ points $[-0.80, -0.20]$"),
    ("above", False): (0.02, 0.01, 0.03, "$+2.00$ points $[+1.00, +3.00]$"),
    ("above", True): (0.005, 0.002, 0.008, "$+0.50$ points $[+0.20, +0.80]$"),
    ("zero", False): (0.0006, -0.0206, 0.0218, "$+0.06$ points $[-2.06, +2.18]$"),
    ("zero", True): (0.0006, -0.004, 0.005, "$+0.06$ points $[-0.40, +0.50]$"),
}
OTHERS = {"large": "the true batch of 8", "small": "the grid's networks at batch 2"}


def pairs(large: tuple, small: tuple) -> pd.DataFrame:
    """Paired rows at micro-batch 2 in inference mode with the INTERVALS of ``large`` and ``small``, and at
    micro-batch 4 and in the recomputed mode rows wholly above zero that the sentence must not read."""
    rows = []
    for m in (2, 4):
        for name, state in (("accumulate_vs_large", large), ("accumulate_vs_small", small)):
            for mode in ("inference", "recomputed"):
                gain, lo, hi, _ = INTERVALS[state if (m, mode) == (2, "inference") else ("above", False)]
                rows.append({"micro_batch": m, "comparison": name, "mode": mode, "gain": gain, "ci_low": lo,
                             "ci_high": hi})  # fmt: skip
    return pd.DataFrame(rows).set_index(["micro_batch", "comparison", "mode"])


def headline(adjustment: str, smallest_effect: float | None = MARGIN):
    return declared(af.section(adjustment, smallest_effect=smallest_effect), "accumulation")


NAMED = {"bonferroni": "Bonferroni-adjusted over the 8 comparisons", "unadjusted": "unadjusted (exploratory)"}
STATES = list(INTERVALS)


def head(adjustment: str) -> str:
    return (
        f"In inference mode, paired by seed and {NAMED[adjustment]}, batch normalisation trained in micro-batches "
        "of 2 rows accumulated to steps of 8 "
    )


@pytest.mark.parametrize("adjustment", list(NAMED))
@pytest.mark.parametrize("large, small", list(itertools.product(STATES, repeat=2)))
def test_abstract_sentence_every_verdict_against_zero_and_the_smallest_effect(large, small, adjustment):
    """Each comparison's verdict follows its interval: "falls behind" only wholly below zero, "is ahead
    of" only wholly above, "is equivalent to" only across zero and wholly within the smallest effect,
    else "cannot be told apart" and not shown equivalent; an interval clear of zero but within the
    smallest effect says so; the family named in its words; in place in the abstract."""
    text = accumulation_sentences.abstract_sentence(pairs(large, small), 2, 8, headline(adjustment), 8)
    assert text.startswith(head(adjustment)), text
    said = text[len(head(adjustment)) :]
    for which, state in (("large", large), ("small", small)):
        other, printed = OTHERS[which], INTERVALS[state][3]
        assert printed in said  # each interval once, the one at micro-batch 2 in inference mode
        verb = {
            ("below", False): f"falls behind {other}",
            ("below", True): f"falls behind {other}",
            ("above", False): f"is ahead of {other}",
            ("above", True): f"is ahead of {other}",
            ("zero", True): f"is equivalent to {other}",
            ("zero", False): f"cannot be told apart from {other}",
        }[state]
        shared = large == small and which == "small"  # said once: "... and the grid's ..." / "or from the grid's"
        assert (verb in said) or shared, (verb, said)
    # the rows at micro-batch 4 and in the recomputed mode (wholly above zero) are not read
    assert said.count("$+2.00$ points $[+1.00, +3.00]$") == [large, small].count(("above", False)), said
    states = {large, small}
    assert ("declared to matter" in said) == any(inside or side == "zero" for side, inside in states), said
    assert ("nor shown equivalent" in said) == (("zero", False) in states), said
    assert bool(re.search(r"wholly within (the \$\\pm1\.0\$ points declared to matter|that margin)", said)) == any(
        inside and side != "zero" for side, inside in states
    ), said
    assert said.count("declared to matter") <= 1, said  # the margin named once, the second clause refers back
    assert ("Bonferroni" in text) == (adjustment == "bonferroni")
    assert not problems(text), text
    for window in abstract_windows("accumAbstractSentence", text):
        assert not problems(window), window


WRITTEN_OUT = {  # (large, small) -> the sentence after its head, Bonferroni-adjusted
    (("below", False), ("zero", False)): "falls behind the true batch of 8 by $-2.00$ points $[-3.00, -1.00]$ and "
    "cannot be told apart from the grid's networks at batch 2 ($+0.06$ points $[-2.06, +2.18]$), nor shown "
    "equivalent to them within the $\\pm1.0$ points declared to matter",
    (("zero", False), ("zero", False)): "cannot be told apart from the true batch of 8 ($+0.06$ points $[-2.06, "
    "+2.18]$) or from the grid's networks at batch 2 ($+0.06$ points $[-2.06, +2.18]$), nor shown equivalent to "
    "either within the $\\pm1.0$ points declared to matter",
    (("zero", True), ("zero", True)): "is equivalent to the true batch of 8 ($+0.06$ points $[-0.40, +0.50]$) and "
    "to the grid's networks at batch 2 ($+0.06$ points $[-0.40, +0.50]$) within the $\\pm1.0$ points declared to "
    "matter",
    (("zero", True), ("below", False)): "is equivalent to the true batch of 8 within the $\\pm1.0$ points declared "
    "to matter ($+0.06$ points $[-0.40, +0.50]$), and falls behind the grid's networks at batch 2 by $-2.00$ points "
    "$[-3.00, -1.00]$",
    (("below", True), ("below", True)): "falls behind the true batch of 8 by $-0.50$ points $[-0.80, -0.20]$ and "
    "the grid's networks at batch 2 by $-0.50$ points $[-0.80, -0.20]$, both wholly within the $\\pm1.0$ points "
    "declared to matter",
    (("above", True), ("zero", False)): "is ahead of the true batch of 8 by $+0.50$ points $[+0.20, +0.80]$, wholly "
    "within the $\\pm1.0$ points declared to matter, and cannot be told apart from the grid's networks at batch 2 "
    "($+0.06$ points $[-2.06, +2.18]$), nor shown equivalent to them within that margin",
    (("below", False), ("above", False)): "falls behind the true batch of 8 by $-2.00$ points $[-3.00, -1.00]$ and "
    "is ahead of the grid's networks at batch 2 by $+2.00$ points $[+1.00, +3.00]$",
}


@pytest.mark.parametrize("case", list(WRITTEN_OUT))
def test_abstract_sentence_written_out(case):
    text = accumulation_sentences.abstract_sentence(pairs(*case), 2, 8, headline("bonferroni"), 8)
    assert text == head("bonferroni") + WRITTEN_OUT[case]


NO_MARGIN = {  # (large, small) sides -> the sentence after its head, no smallest effect declared
    ("zero", "zero"): "cannot be told apart from the true batch of 8 ($+0.06$ points $[-2.06, +2.18]$) or from the "
    "grid's networks at batch 2 ($+0.06$ points $[-2.06, +2.18]$) and, with no smallest difference declared to "
    "matter, is shown equivalent to neither",
    ("below", "zero"): "falls behind the true batch of 8 by $-2.00$ points $[-3.00, -1.00]$ and cannot be told apart "
    "from the grid's networks at batch 2 ($+0.06$ points $[-2.06, +2.18]$) and, with no smallest difference "
    "declared to matter, is not shown equivalent to them",
    ("zero", "above"): "cannot be told apart from the true batch of 8 ($+0.06$ points $[-2.06, +2.18]$) and, with no "
    "smallest difference declared to matter, is not shown equivalent to it, and is ahead of the grid's networks at "
    "batch 2 by $+2.00$ points $[+1.00, +3.00]$",
    ("below", "below"): "falls behind the true batch of 8 by $-2.00$ points $[-3.00, -1.00]$ and the grid's networks "
    "at batch 2 by $-2.00$ points $[-3.00, -1.00]$",
    ("above", "above"): "is ahead of the true batch of 8 by $+2.00$ points $[+1.00, +3.00]$ and of the grid's "
    "networks at batch 2 by $+2.00$ points $[+1.00, +3.00]$",
    ("below", "above"): "falls behind the true batch of 8 by $-2.00$ points $[-3.00, -1.00]$ and is ahead of the "
    "grid's networks at batch 2 by $+2.00$ points $[+1.00, +3.00]$",
    ("above", "below"): "is ahead of the true batch of 8 by $+2.00$ points $[+1.00, +3.00]$ and falls behind the "
    "grid's networks at batch 2 by $-2.00$ points $[-3.00, -1.00]$",
    ("zero", "below"): "cannot be told apart from the true batch of 8 ($+0.06$ points $[-2.06, +2.18]$) and, with no "
    "smallest difference declared to matter, is not shown equivalent to it, and falls behind the grid's networks "
    "at batch 2 by $-2.00$ points $[-3.00, -1.00]$",
    ("above", "zero"): "is ahead of the true batch of 8 by $+2.00$ points $[+1.00, +3.00]$ and cannot be told apart "
    "from the grid's networks at batch 2 ($+0.06$ points $[-2.06, +2.18]$) and, with no smallest difference "
    "declared to matter, is not shown equivalent to them",
}


@pytest.mark.parametrize("adjustment", list(NAMED))
@pytest.mark.parametrize("case", list(NO_MARGIN))
def test_abstract_sentence_without_a_smallest_effect_never_says_equivalent(case, adjustment):
    """No smallest effect declared: an interval across zero is never read as the two scoring alike."""
    large, small = ((side, False) for side in case)
    text = accumulation_sentences.abstract_sentence(pairs(large, small), 2, 8, headline(adjustment, None), 8)
    assert text == head(adjustment) + NO_MARGIN[case]
    assert "is equivalent" not in text and "within" not in text
    assert not problems(text), text
    for window in abstract_windows("accumAbstractSentence", text):
        assert not problems(window), window


VERDICTS = {  # (state, margin) -> the headline verdict, written out
    (("below", False), MARGIN): "lies wholly below zero",
    (("below", True), MARGIN): "lies wholly below zero, yet wholly within $\\pm1.0$ points, the smallest difference "
    "declared to matter",
    (("above", False), MARGIN): "lies wholly above zero",
    (("above", True), MARGIN): "lies wholly above zero, yet wholly within $\\pm1.0$ points, the smallest difference "
    "declared to matter",
    (("zero", True), MARGIN): "contains zero and lies wholly within $\\pm1.0$ points, the smallest difference declared "
    "to matter: the two are equivalent by two one-sided tests",
    (("zero", False), MARGIN): "contains zero but reaches beyond $\\pm1.0$ points, the smallest difference declared to "
    "matter: the two are neither told apart nor shown equivalent",
    (("below", True), None): "lies wholly below zero",
    (("above", True), None): "lies wholly above zero",
    (("zero", True), None): "contains zero, and with no smallest difference declared to matter it shows no equivalence",
}
HEADLINE_VERDICTS = [
    f"accum{which}{mode}{end}Verdict"
    for which in ("AccumulateMinusLarge", "AccumulateMinusSmall")
    for mode in ("Inference", "Recomputed")
    for end in ("Min", "Max")
]


@pytest.mark.parametrize("case", list(VERDICTS))
def test_headline_verdict_every_variant_in_place(case):
    """The section's verdict of a headline interval, against zero and the smallest effect, in each place
    the section puts one (after "the interval" or "the adjusted interval")."""
    (state, margin), expected = case, VERDICTS[case]
    _, lo, hi, _ = INTERVALS[state]
    text = accumulation_family.verdict(lo, hi, margin)
    assert text == expected
    assert not problems(text), text
    placed = [w for name in HEADLINE_VERDICTS for w in in_place("accumulation.tex", name, text)]
    assert len(placed) == 6  # inference at both ends for both, recomputed minus the true batch at both
    for window in placed:
        assert not problems(window), window
        assert re.search(r"interval\s+" + re.escape(text), window), window  # "the ... interval lies ..."


@pytest.mark.parametrize("margin", [MARGIN, None])
@pytest.mark.parametrize("head_adjustment, other_adjustment", list(itertools.product(NAMED, repeat=2)))
def test_family_sentence_and_the_section_in_every_declaration(head_adjustment, other_adjustment, margin):
    """The Protocol's sentence on the two families, the section's static text naming them (tags and
    phrases from bnstudy.paper.families.macros) and the table's caption: the headline intervals hold
    together only under Bonferroni; an interval across zero shows equivalence only within the declared
    smallest effect, and never without one; every other interval is named by the other family."""
    section = af.section(head_adjustment, other_adjustment, margin)
    families = accumulation_family.declare(section)
    counts = accumulation_family.members(2, 5, 3, 5)
    assert counts == {"accumulation": 8, "accumulation_other": 32}
    text = accumulation_family.family_sentence(families, counts, "95\\%")
    assert ("so that all of them hold together at 95\\%" in text) == (head_adjustment == "bonferroni"), text
    assert ("not all 8 together" in text) == (head_adjustment == "unadjusted"), text
    assert ("(two one-sided tests)" in text) == (margin is not None), text
    assert ("never that they score alike" in text) == (margin is None), text
    assert text.endswith(
        "adjusted by Bonferroni over its own 32 comparisons, so that those 32 hold together too"
        if other_adjustment == "bonferroni"
        else "unadjusted (exploratory), a 95\\% interval on its own"
    ), text
    assert not problems(text), text
    windows = in_place("accumulation.tex", "accumFamilySentence", text)
    assert len(windows) == 1 and not problems(windows[0]), windows
    records = accumulation_family.records(families, 0.95, counts)
    checked = paper_families.check(section, {name: "accumulation" for name in section}, {"accumulation": {
        "families": records}})  # fmt: skip
    fm = paper_families.macros(checked)
    tex = (SECTIONS / "accumulation.tex").read_text()
    body = tex[tex.index("\\paragraph{Protocol.}") : tex.index("\\begin{figure}")]
    caption = tex[tex.index("\\caption{Test accuracy (mean") : tex.index("\\label{tab:accumulation}")]
    for part in (body, caption):
        rendered = render(part, fm | {"accumFamilySentence": text})
        assert not re.search(r"\\family[A-Za-z]*", rendered), rendered
        assert ("Bonferroni" in rendered) == ("bonferroni" in (head_adjustment, other_adjustment)), rendered
    used = sorted(set(re.findall(r"\\(family[A-Za-z]+)", tex)))
    assert used == [
        "familyAccumulationOtherPhrase",
        "familyAccumulationOtherTag",
        "familyAccumulationPhrase",
        "familyAccumulationTag",
    ]
    for name in used:  # each family's words in each of their places
        for window in in_place("accumulation.tex", name, fm[name], width=120):
            assert not problems(window), window
    rendered = render(body, fm)
    assert f"the {families['accumulation'].tag} interval" in rendered
    assert f"the {families['accumulation_other'].tag} interval" in rendered


def test_equivalence_reads_the_interval_at_the_family_level_against_the_margin():
    """Two one-sided tests: within only where both ends lie strictly inside the margin."""
    assert accumulation_family.within(-0.0099, 0.0099, 0.01) is True
    assert accumulation_family.within(-0.01, 0.005, 0.01) is False  # an end on the margin is not inside
    assert accumulation_family.within(-0.005, 0.0101, 0.01) is False
    assert accumulation_family.within(-0.005, 0.005, None) is None


@pytest.mark.parametrize(
    "ci, says",
    [
        ((-0.152, -0.115), "does not stand in for a batch-normalisation layer that normalises over one: accumulated"),
        ((-0.182, 0.101), "our seeds cannot tell: accumulated micro-batches are not told apart from the true batch"),
        ((0.004, 0.03), "more than stands in for normalising over one here"),
    ],
)
def test_the_discussions_sentence_on_which_batch_size_counts_follows_the_headline_verdict(ci, says):
    """The Discussion says which batch size counts only as the headline interval (accumulation minus
    the true batch, inference mode, the smallest micro-batch) allows: an interval holding zero no
    longer reads 'not the one an optimiser step averages over'; each variant in place in the section."""
    text = accumulation_family.discussion_sentence(*ci)
    assert says in text
    if ci[0] < 0 < ci[1]:
        assert "does not stand in" not in text
    tex = (SECTIONS / "discussion.tex").read_text()
    assert "\\accumDiscussionSentence{} (section~\\ref{sec:accumulation})." in tex
    assert problems(text) == []
