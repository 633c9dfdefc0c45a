"""The serving study's generated sentences in every variant, under both declarations of its families
(``serving_order``, ``serving_change``, ``serving_adaptation``: Bonferroni-adjusted or unadjusted), in
their places in the abstract and the section; the summary's record of the families against the
paper's check; and the section's words for the intervals taken from the families' macros."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pandas as pd
import pytest

from bnstudy.paper import families as paper_families
from bnstudy.paper import latex
from bnstudy.studies.serving import estimates
from bnstudy.studies.serving import report as serving_report
from serving_families import FAMILIES, SECTION, families
from test_sentences import BOTH, ONE_DECIMAL, SIDES, VERDICT, abstract_windows, in_place, interval, problems, render

ROOT = Path(__file__).resolve().parents[2]
ADJUSTMENTS = list(FAMILIES)
TAG = {"bonferroni": "adjusted", "unadjusted": "unadjusted"}
SMALLEST = "the smallest effect declared to matter"

# the sides of zero, and an interval that contains zero inside the declared smallest effect (1 point)
SIDES4 = [*SIDES, "within"]
PRINTED = ONE_DECIMAL | {"within": "$+0.1$ points [$-0.4$, $+0.6$]"}
VERDICT4 = VERDICT | {
    "zero": "contains zero and reaches beyond $\\pm1.0$ points",  # ROW's [-2.1, +2.2]
    "within": "contains zero and lies within $\\pm1.0$ points",
}


def interval4(side: str) -> dict:
    if side == "within":
        return {"mean": 0.001, "ci": [-0.004, 0.006], "sd": 0.01, "seeds": 3}
    return interval(side)


def holds_zero(side: str) -> bool:
    return side in ("zero", "within")


# ---- the abstract -------------------------------------------------------------------------------

LEVELS = {
    ("bonferroni", "bonferroni"): "intervals over networks and streams, each Bonferroni-adjusted over the 2 training "
    "batch sizes",
    ("unadjusted", "unadjusted"): "95\\% intervals over networks and streams, unadjusted and exploratory",
    ("bonferroni", "unadjusted"): "intervals over networks and streams, the first Bonferroni-adjusted over the 2 "
    "training batch sizes, the second at 95\\%, unadjusted and exploratory",
    ("unadjusted", "bonferroni"): "intervals over networks and streams, the first at 95\\%, unadjusted and "
    "exploratory, the second Bonferroni-adjusted over the 2 training batch sizes",
}


def abstract_verdicts(served: str, change: str) -> str:
    if not holds_zero(served) and not holds_zero(change):
        if served == change:
            return BOTH[served]
        return f"the first interval {VERDICT[served]}, the second {VERDICT[change]}"
    if served == change:
        verb = "lie within" if served == "within" else "reach beyond"
        return f"both intervals contain zero and {verb} $\\pm1.0$ points, {SMALLEST}"
    each = "in each case " if holds_zero(served) and holds_zero(change) else ""
    return f"the first interval {VERDICT4[served]}, the second {VERDICT4[change]}, {each}{SMALLEST}"


@pytest.mark.parametrize("adjustments", list(LEVELS), ids="-".join)
@pytest.mark.parametrize("served, change", list(itertools.product(SIDES4, repeat=2)))
def test_serving_abstract_sentence_every_verdict(served, change, adjustments):
    """At the smallest training batch size (2, not the first key): class-sorted minus random traffic in
    training mode (family serving_order), and the held-out accuracy's change after a class-sorted stream
    (serving_change), each interval's verdict said once; one that contains zero read against the
    smallest effect; the intervals named by their families' adjustments, never "95%" beside an adjusted
    one."""

    def cell(served_side: str, change_side: str) -> dict:
        return {
            "sorted_minus_random": {"stream_accuracy": interval4(served_side)},
            "sorted": {"inference_change": interval4(change_side)},
        }

    order, changes = (families(a)[name] for a, name in zip(adjustments, ("serving_order", "serving_change")))
    summary = {"16": cell("above", "above"), "2": cell(served, change)}
    text = serving_report.abstract_sentence(summary, "95\\%", order, changes)
    assert text == (
        "Served in training mode with live statistics, networks trained in batches of 2 score "
        f"{PRINTED[served]} on class-sorted test traffic against random traffic, and a class-sorted stream "
        f"changes the inference-mode accuracy of the model it leaves behind by {PRINTED[change]} on "
        f"held-out rows ({abstract_verdicts(served, change)}; {LEVELS[adjustments]})"
    )
    assert not problems(text), text
    assert ("95\\%" in text) == ("unadjusted" in adjustments), text  # the level only beside an unadjusted one
    assert "no effect" not in text and "alike" not in text
    for window in abstract_windows("servingAbstractSentence", text):
        assert not problems(window), window


# ---- the random stream's control ----------------------------------------------------------------

SERVING_ANSWERS = {
    "adaptation": "the gain needs the test rows, so it is adaptation to the test distribution",
    "both": "training rows reproduce part of the gain and the test rows add to it, so it is the statistics "
    "re-estimated in served batches and adaptation to the test rows together",
    "re-estimation": "training rows, which carry no information about the test distribution, reproduce the gain, "
    "so it is the running statistics re-estimated from the batch statistics of served rows; no part of it is shown "
    "to need the test rows",
    "neither": "neither interval lies wholly above zero, so the gain is put down to neither adaptation nor "
    "re-estimation",
    "no gain": "the random stream's change is not shown to be a gain, its interval not lying wholly above zero, so "
    "there is no gain to explain",
}


@pytest.mark.parametrize("adjustment", ADJUSTMENTS)
@pytest.mark.parametrize("test, train, diff", list(itertools.product(SIDES, SIDES4, SIDES4)))
def test_serving_control_sentence_every_verdict(test, train, diff, adjustment):
    """Every side of the random stream's change, the control's change and their difference (each that
    contains zero inside or beyond the smallest effect); the answer names adaptation only where the
    difference lies above zero, re-estimation only where the control's change does, and nothing where
    the random stream shows no gain; the intervals named by their families' tags, the smallest effect's
    meaning said once."""
    cell = {
        "random": {"inference_change": interval(test)},
        "training_rows": {"inference_change": interval4(train)},
        "random_minus_training_rows": {"inference_after": interval4(diff)},
    }
    fams = FAMILIES[adjustment]
    text = serving_report.control_sentence(cell, "2", fams["serving_change"], fams["serving_adaptation"])
    tag = TAG[adjustment]
    train_verdict = VERDICT4[train] + (f", {SMALLEST}" if holds_zero(train) else "")
    diff_verdict = VERDICT4[diff] + (f", {SMALLEST}" if holds_zero(diff) and not holds_zero(train) else "")
    want = (
        f"the held-out accuracy of networks trained in batches of 2 changes by {PRINTED[test]} after a random "
        f"stream of test rows and by {PRINTED[train]} after a stream of as many training rows (both {tag}); that "
        f"second interval {train_verdict}; the difference, the part that needs the test rows, is {PRINTED[diff]} "
        f"({tag}), an interval that {diff_verdict}: "
    )
    if test != "above":
        want += SERVING_ANSWERS["no gain"]
    elif diff == "above":
        want += SERVING_ANSWERS["both" if train == "above" else "adaptation"]
    else:
        want += SERVING_ANSWERS["re-estimation" if train == "above" else "neither"]
    assert text == want
    assert not problems(text), text
    assert text.count(SMALLEST) == int(holds_zero(train) or holds_zero(diff))
    windows = in_place("serving.tex", "servingControlSentence", text)
    assert len(windows) == 1
    for window in windows:
        assert not problems(window), window


def within_words(sides: dict) -> str:
    """What the zero sentence adds on the intervals that contain zero (``sides``: by batch size, in
    numeric order), written out case by case."""
    zero = [b for b, side in sides.items() if holds_zero(side)]
    within = [b for b in zero if sides[b] == "within"]
    bound = f"$\\pm1.0$ points, {SMALLEST}"
    if not zero:
        return ""
    if len(zero) == 1:
        return f"; it {'lies within' if within else 'reaches beyond'} {bound}"
    if not within or len(within) == len(zero):
        many = "both" if len(zero) == 2 else f"all {len(zero)}"
        return f"; {many} {'lie within' if within else 'reach beyond'} {bound}"
    head = f"the one at batch {within[0]} lies" if len(within) == 1 else f"those at batches {' and '.join(within)} lie"
    tail = "the other reaches beyond" if len(zero) - len(within) == 1 else "the others reach beyond"
    # every interval contains zero, as the zero sentence says: "of the 3 that contain zero" would say it twice
    lead = "" if len(zero) == len(sides) else f"of the {len(zero)} that contain zero, "
    return f"; {lead}{head} within {bound}, and {tail}"


@pytest.mark.parametrize("adjustment", ADJUSTMENTS)
@pytest.mark.parametrize("sides", list(itertools.product(SIDES4, repeat=3)))
def test_serving_control_zero_sentence_in_place(sides, adjustment):
    """Where the differences' intervals lie over the training batch sizes, named by the family's tag,
    and which of those that contain zero lie within the smallest effect; in its place."""

    def cell(side):
        return {
            "random": {"inference_change": interval("above")},
            "training_rows": {"inference_change": interval("above")},
            "random_minus_training_rows": {"inference_after": interval4(side)},
        }

    summary = {b: cell(side) for b, side in zip(("16", "2", "4"), sides)}
    m = serving_report.control_macros(summary, FAMILIES[adjustment])
    text = m["servingControlZeroSentence"]
    side = {b: dict(zip(("16", "2", "4"), sides))[b] for b in ("2", "4", "16")}  # numeric order
    head = latex.zero_sentence(
        f"the {TAG[adjustment]} intervals of the random stream's change minus the control's",
        [b for b in side if side[b] == "above"],
        [b for b in side if side[b] == "below"],
        3,
    )
    assert text == head + within_words(side)
    assert text.count(SMALLEST) == int(any(holds_zero(v) for v in sides))
    assert m["servingControlSentence"].startswith("the held-out accuracy of networks trained in batches of 2 ")
    assert f"(both {TAG[adjustment]})" in m["servingControlSentence"]
    windows = in_place("serving.tex", "servingControlZeroSentence", text)
    assert len(windows) == 1
    for window in windows:
        assert not problems(window), window


# ---- the summary's record, the section and the table in the families' words ----------------------


def _rows():
    """Networks of two training batch sizes, 3 seeds and 2 replicates, every stream and the control,
    every value distinct."""
    rows = []
    for b in (4, 16):
        for r in range(2):
            for seed in range(3):
                for k, (stream, base) in enumerate((("random", 0.8), ("sorted", 0.3), ("training_rows", 0.7))):
                    before = 0.9 + 0.001 * seed + 0.0001 * b
                    rows.append(dict(train_batch_size=b, stream=stream, replicate=r, seed=seed,
                                     stream_accuracy=base + 0.01 * seed + 0.02 * r + 0.001 * b,
                                     inference_before=before,
                                     inference_after=before - 0.01 * k + 0.003 * seed * (r + 1) + 0.002 * k * r,
                                     mean_shift=0.1 + 0.01 * seed, var_change=0.2 + 0.01 * r))  # fmt: skip
    return rows


SETTINGS = dict(batch_size=16, passes=1, batches=28, served=448, test_rows=899, stream_rows=453, held_out_rows=446,
                held_out=0.5, replicates=2, momentum=0.1, confidence=0.95)  # fmt: skip


@pytest.mark.parametrize("adjustment", ADJUSTMENTS)
def test_the_summary_records_each_family_and_its_intervals_are_at_its_level(adjustment):
    """Under each declaration: every member's interval (the served accuracy's sorted minus random, each
    stream's change, the random stream minus the control) at the family's level over the 2 training
    batch sizes, each non-member's at 95%; the record the paper's families check accepts, and refuses
    under the other declaration."""
    rows = _rows()
    summary = estimates.summarise(rows, 0.95, SECTION[adjustment])
    level = 1 - 0.05 / 2 if adjustment == "bonferroni" else 0.95
    for b in ("4", "16"):
        cell = summary[b]
        by = {s: [x for x in rows if x["stream"] == s and x["train_batch_size"] == int(b)] for s in
              ("random", "sorted", "training_rows")}  # fmt: skip

        def table(stream, key):
            return estimates._table(pd.DataFrame(by[stream]), key)

        gap = table("sorted", "stream_accuracy") - table("random", "stream_accuracy")
        assert cell["sorted_minus_random"]["stream_accuracy"] == estimates.crossed_interval(gap, level)
        after = table("sorted", "inference_after") - table("random", "inference_after")
        assert cell["sorted_minus_random"]["inference_after"] == estimates.crossed_interval(after, 0.95)
        for stream in ("random", "sorted", "training_rows"):
            change = table(stream, "inference_after") - table(stream, "inference_before")
            assert cell[stream]["inference_change"] == estimates.crossed_interval(change, level)
            before = table(stream, "inference_before")
            assert cell[stream]["inference_before"] == estimates.crossed_interval(before, 0.95)
        diff = table("random", "inference_after") - table("training_rows", "inference_after")
        assert cell["random_minus_training_rows"]["inference_after"] == estimates.crossed_interval(diff, level)
    records = estimates.family_records(summary, 0.95, SECTION[adjustment])
    record = {"adjustment": adjustment, "members": 2, "confidence": 0.95, "level": level, "smallest_effect": 0.01}
    assert records == {name: record for name in ("serving_order", "serving_change", "serving_adaptation")}
    formed = {name: "serving" for name in records}
    checked = paper_families.check(SECTION[adjustment], formed, {"serving": {"families": records}})
    assert [f.name for f, _ in checked] == list(formed)
    other = ADJUSTMENTS[1 - ADJUSTMENTS.index(adjustment)]
    with pytest.raises(paper_families.FamilyMismatch, match="serving_order: adjustment"):
        paper_families.check(SECTION[other], formed, {"serving": {"families": records}})


def _section_parts() -> dict[str, str]:
    tex = (ROOT / "paper" / "sections" / "serving.tex").read_text()
    return {
        "protocol": tex[tex.index("\\paragraph{Protocol.}") : tex.index("\\paragraph{Result.}")],
        "result": tex[tex.index("\\paragraph{Result.}") : tex.index("\\ifdefined\\servingHasControl")],
        "control": tex[tex.index("\\paragraph{Adaptation or re-estimation.}") : tex.index("\\begin{figure}")],
        "caption": tex[tex.index("\\caption{Serving") : tex.index("\\label{tab:serving}")],
    }


@pytest.mark.parametrize("adjustment", ADJUSTMENTS)
def test_the_section_table_and_abstract_name_the_families_adjustment(adjustment, tmp_path):
    """The Protocol, Result and control paragraphs and the table's caption rendered with the study's
    macros and the families' (bnstudy.paper.families.macros), the table's comment and the abstract's
    sentence, under each declaration: no macro of either left, no grammar fault, "adjusted" only under
    Bonferroni and "unadjusted" only without, the level (95%) named beside no adjusted interval."""
    summary = estimates.summarise(_rows(), 0.95, SECTION[adjustment])
    fams = FAMILIES[adjustment]
    m = serving_report.macros(summary, SETTINGS, fams)
    records = estimates.family_records(summary, 0.95, SECTION[adjustment])
    fm = paper_families.macros(paper_families.check(SECTION[adjustment], {n: "serving" for n in records},
                                                    {"serving": {"families": records}}))  # fmt: skip
    texts = {name: " ".join(render(part, m | fm).split()) for name, part in _section_parts().items()}
    texts["abstract"] = m["servingAbstractSentence"]
    for name, text in texts.items():
        assert not re.search(r"\\(serving|familyServing)[A-Za-z]*", text), (name, text)
        for sentence in re.split(r"(?<=\.)\s+(?=[A-Z\\])", text):  # sentence by sentence: parallel ones may repeat
            assert not problems(sentence), (name, sentence)
        assert ("adjusted" in text.replace("unadjusted", "")) == (adjustment == "bonferroni"), (name, text)
        assert ("unadjusted" in text) == (adjustment == "unadjusted"), (name, text)
    phrase = {"bonferroni": "Bonferroni-adjusted over the 2 training batch sizes", "unadjusted": "unadjusted "
              "(exploratory)"}[adjustment]  # fmt: skip
    assert f"class-sorted minus random traffic, {phrase}; each kind of stream's change" in texts["protocol"]
    assert f"streams of each kind, {phrase}; and the" in texts["caption"]
    assert f"the differences' intervals are {phrase}." in texts["control"]
    assert ("95\\%" in texts["abstract"]) == (adjustment == "unadjusted")
    assert "95\\% before any adjustment" in texts["protocol"]  # the family-wise level, not an interval's
    serving_report.write_table(tmp_path / "serving.tex", summary, fams["serving_change"])
    comment = (tmp_path / "serving.tex").read_text().splitlines()[0]
    assert comment == f"% serving: inference accuracy before/after (changes {phrase}), served"


@pytest.mark.parametrize("sides", list(itertools.product(("above", "below", "zero"), repeat=3)))
@pytest.mark.parametrize("macro", ["servingRandomChangeZeroSentence", "servingSortedChangeZeroSentence",
                                   "servingSortedMinusRandomZeroSentence"])  # fmt: skip
def test_serving_counts_of_intervals_read_as_sizes_never_as_zero_counts(macro, sides):
    """Where the section's families of intervals lie against zero, in words over the training batch sizes
    (latex.zero_sentence): never 'below zero at 0 and above zero at 0 of the 6', each in place in the section."""
    sizes = ("2", "16", "64")
    words = {"above": "lie wholly above zero", "below": "wholly below zero", "zero": "contain zero"}
    text = latex.zero_sentence(
        "the adjusted intervals",
        [b for b, s in zip(sizes, sides) if s == "above"],
        [b for b, s in zip(sizes, sides) if s == "below"],
        len(sizes),
    )
    assert " at 0 " not in text and not re.search(r"\bat 0\b", text)
    assert any(w in text for w in words.values())
    ci = {"above": (0.01, 0.03), "below": (-0.03, -0.01), "zero": (-0.004, 0.003)}
    text += serving_report.within_clause(
        dict(zip(sizes, (ci[s] for s in sides))), FAMILIES["bonferroni"]["serving_change"]
    )
    assert ("within $\\pm1.0$ points" in text) == ("zero" in sides)
    windows = in_place("serving.tex", macro, text)
    assert len(windows) == 1
    for window in windows:
        assert not problems(window), window
