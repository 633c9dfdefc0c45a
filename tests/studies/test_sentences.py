"""Every variant of every generated sentence of the studies' reports, rendered and checked.

Generated sentences are claims the pipeline writes into the paper. Each generator is driven
through all its branches (every verdict; empty, singular and plural lists; every family
size up to the grid's) and each rendering, alone and in its place in the section text, is
held to grammar-level invariants: no word doubled, subject and verb agree ("interval lies",
"intervals lie"), no clause repeated, no "at no batch size" beside a list of sizes.
"""

from __future__ import annotations

import collections
import itertools
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from batch_size_families import ADJUSTED, family, section
from bnstudy.base.designs import FINETUNE_STREAMS as STREAMS
from bnstudy.evaluation.families import Family
from bnstudy.paper import families as paper_families
from bnstudy.paper import latex
from bnstudy.studies.accumulation import sentences as accumulation_sentences
from bnstudy.studies.batch_size import macros as batch_size_macros
from bnstudy.studies.batch_size import sentences as batch_size_sentences
from bnstudy.studies.batch_size import summary as batch_size_summary
from bnstudy.studies.companions import published as companions_published
from bnstudy.studies.finetune import macros as finetune_macros
from bnstudy.studies.finetune import sentences as finetune_sentences
from bnstudy.studies.lr_sweep import report as lr_sweep_report
from bnstudy.studies.lr_sweep import sentences as lr_sweep_sentences
from bnstudy.studies.precise_rows import report as precise_rows_report
from bnstudy.studies.running_stats import science as running_stats
from declared_families import declared_as

ROOT = Path(__file__).resolve().parents[2]
SECTIONS = ROOT / "paper" / "sections"

AGREEMENT = [
    r"\bintervals (lies|contains)\b",
    r"\binterval (lie|contain)\b",
    r"\bintervals of [^,;.]*? (lies|contains)\b",
]


def plain(text: str) -> str:
    """TeX to words: math and commands dropped, braces removed, spaces collapsed."""
    text = re.sub(r"\$[^$]*\$", " N ", text)
    text = re.sub(r"\\[A-Za-z]+\{\}", " N ", text)
    text = re.sub(r"\\[A-Za-z]+", " N ", text)
    text = text.replace("{", " ").replace("}", " ").replace("~", " ")
    return re.sub(r"\s+", " ", text).strip()


def problems(text: str) -> list[str]:
    """The grammar-level faults of a rendered sentence (empty when there are none)."""
    words = re.findall(r"[a-z]+|\d+(?:\.\d+)?", plain(text).lower())  # a number is one token
    out = [f"doubled word {a!r}" for a, b in zip(words, words[1:]) if a == b and a.isalpha() and a not in {"n", "that"}]
    out += [f"agreement: {m.group(0)!r}" for pattern in AGREEMENT for m in re.finditer(pattern, text)]
    for clause in plain(text).lower().split(";"):  # parallel clauses joined by ';' may repeat
        cw = re.findall(r"[a-z]+", clause)
        grams = collections.Counter(" ".join(cw[i : i + 5]) for i in range(len(cw) - 4))
        out += [f"repeated clause {g!r}" for g in sorted(g for g, n in grams.items() if n > 1 and "n" not in g.split())]
    if re.search(r"at no batch size (and|,) (wholly )?(above|below)", text):
        out.append("'at no batch size' beside a list")
    depth = 0
    for char in plain(text):  # a parenthesis opened inside another reads as a typo: "[...] (adjusted))"
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth > 1:
            out.append("parentheses inside parentheses")
            break
    return out


def subsets(sizes):
    for k in range(len(sizes) + 1):
        yield from itertools.combinations(sizes, k)


def zero_sentence_variants(max_total: int = 6):
    for total in range(1, max_total + 1):
        sizes = [str(2**i) for i in range(1, total + 1)]
        for above in subsets(sizes):
            rest = [b for b in sizes if b not in above]
            for below in subsets(rest):
                yield total, list(above), list(below), latex.zero_sentence("the intervals", above, below, total)


def test_zero_sentence_every_variant_is_grammatical_and_names_each_size_once():
    seen = 0
    for total, above, below, text in zero_sentence_variants():
        assert not problems(text), (text, problems(text))
        for side in (above, below):
            for b in side if len(side) < total else []:
                named = re.sub(r"the other \d+ batch sizes", "", text)
                assert len(re.findall(rf"\b{b}\b", named)) == 1, text
            if side and len(side) == total:
                assert "at every batch size" in text
        if not above and not below:
            assert text.endswith("contain zero at every batch size")
        elif len(above) + len(below) < total:
            assert "contain zero at the other" in text
        else:
            assert "contain zero" not in text
        seen += 1
    assert seen > 700  # every split of up to six batch sizes into above, below and neither


@pytest.mark.parametrize("plural", [False, True])
@pytest.mark.parametrize("lo, hi", [(-2.0, -1.0), (1.0, 2.0), (-1.0, 1.0), (0.0, 1.0)])
def test_verdicts_agree_with_their_subject(lo, hi, plural):
    subject = "the intervals" if plural else "the interval"
    text = f"{subject} {latex.verdict(lo, hi, plural)}"
    assert not problems(text), text


@pytest.mark.parametrize("n", range(0, 5))
def test_lists_in_words(n):
    items = [str(2**i) for i in range(1, n + 1)]
    text = latex.words(items)
    assert not problems(f"at batches {text}")
    assert text.count(" and ") == (1 if n > 1 else 0)
    assert latex.at_batches(items) == ("at no batch size" if n == 0 else f"at batch{'es' if n > 1 else ''} {text}")


def pair_summary(comparisons: dict[str, list[tuple[float, float]]]) -> pd.DataFrame:
    """A paired summary with the given adjusted intervals per comparison, one per batch size."""
    rows = []
    for name, cis in comparisons.items():
        for i, (lo, hi) in enumerate(cis):
            rows.append(
                {
                    "comparison": name,
                    "batch_size": 2 ** (i + 1),
                    "gain": (lo + hi) / 2,
                    "ci_low": lo,
                    "ci_high": hi,
                    "ci_low_adj": lo,
                    "ci_high_adj": hi,
                    "family": len(cis),
                    "seeds_a_better": 0,
                    "seeds_b_better": 0,
                    # every seed on the interval's side; an interval across zero: seeds on both
                    "seeds": 20,
                    "seeds_ahead": 20 if lo > 0 else 0 if hi < 0 else 12,
                    "seeds_behind": 20 if hi < 0 else 0 if lo > 0 else 7,
                }
            )
    return pd.DataFrame(rows)


CI = {"above": (0.01, 0.02), "below": (-0.02, -0.01), "zero": (-0.01, 0.01)}


@pytest.mark.parametrize("n_remedies", [1, 2, 3])
@pytest.mark.parametrize("pattern", list(itertools.product(CI, repeat=2)))
def test_remedy_sentence_every_grouping(n_remedies, pattern):
    names = list(batch_size_sentences.REMEDY_NAMES)[:n_remedies]
    # the first remedy follows the pattern, the others differ from it or not
    for others_alike in (True, False):
        comps = {}
        for k, name in enumerate(names):
            cis = [CI[p] for p in pattern]
            if k and not others_alike:
                cis = cis[::-1]
            comps[name] = cis
        text = batch_size_sentences.remedy_sign_sentence(pair_summary(comps))
        assert not problems(text), text
        for name in names:
            assert batch_size_sentences.REMEDY_NAMES[name] in text


@pytest.mark.parametrize("adjustment", ["bonferroni", "unadjusted"])
@pytest.mark.parametrize("pattern", list(itertools.product(CI, repeat=3)))
def test_interval_sign_macros_every_pattern(pattern, adjustment):
    families = section(adjustment)
    m = batch_size_macros.interval_sign_macros(pair_summary({"batchnorm_vs_none": [CI[p] for p in pattern]}), families)
    text = f"Paired over seeds: {m['pairedBatchnormVsNoneSignSentence']}."
    assert not problems(text), text
    tag = "adjusted" if adjustment == "bonferroni" else "unadjusted"
    assert text.startswith(f"Paired over seeds: the {tag} paired intervals "), text
    phrase = family("normalisers", adjustment).phrase(3)  # the section's words before it
    for window in in_place(
        "batch_size.tex", "pairedBatchnormVsNoneSignSentence", m["pairedBatchnormVsNoneSignSentence"]
    ):
        window = window.replace("\\familyNormalisersPhrase", phrase)
        assert not problems(window), window


@pytest.mark.parametrize("comparison", ["batchnorm_vs_none", "batchrenorm_vs_batchnorm"])
@pytest.mark.parametrize("pattern", list(itertools.product(CI, repeat=3)))
def test_direction_sentence_names_each_unanimous_batch_size_once(comparison, pattern):
    m = batch_size_macros.interval_sign_macros(pair_summary({comparison: [CI[p] for p in pattern]}), ADJUSTED)
    name = latex.macro_name("paired", comparison, "direction sentence")
    text = f"Seed by seed, {m[name]}."
    assert not problems(text), text
    a, b = batch_size_sentences.COMPARED[comparison]
    below = [str(2 ** (i + 1)) for i, p in enumerate(pattern) if p == "below"]
    above = [str(2 ** (i + 1)) for i, p in enumerate(pattern) if p == "above"]
    if not below and not above:
        assert text == f"Seed by seed, at no batch size do all 20 seeds put {a} on one side of {b}."
    else:
        assert text.startswith(f"Seed by seed, every one of the 20 seeds puts {a} ")
        assert (f"below {b} {latex.at_batches(below)}" in text) == bool(below), text
        assert (f"above {'it' if below else b} {latex.at_batches(above)}" in text) == bool(above), text


SMALL = {"above": (0.002, 0.008), "below": (-0.008, -0.002), "large": (0.02, 0.04), "zero": (-0.004, 0.004)}


@pytest.mark.parametrize("adjustment", ["bonferroni", "unadjusted"])
@pytest.mark.parametrize("comparison", ["batchnorm_vs_none", "batchrenorm_vs_batchnorm"])
@pytest.mark.parametrize("pattern", list(itertools.product(SMALL, repeat=3)))
def test_small_effect_sentence_names_the_intervals_clear_of_zero_inside_the_margin(comparison, pattern, adjustment):
    families = section(adjustment)
    summary = pair_summary({comparison: [SMALL[p] for p in pattern]})
    name = latex.macro_name("paired", comparison, "direction sentence")
    text = batch_size_macros.interval_sign_macros(summary, families)[name]
    small = batch_size_summary.small_effect_macros(summary, families)[
        latex.macro_name("paired", comparison, "small effect")
    ]
    above = [str(2 ** (i + 1)) for i, p in enumerate(pattern) if p == "above"]
    below = [str(2 ** (i + 1)) for i, p in enumerate(pattern) if p == "below"]
    if not above and not below:
        assert small == ""
        return
    clear = sorted(above + below, key=int)
    tag = "adjusted" if adjustment == "bonferroni" else "unadjusted"
    assert small.startswith(f" Yet the {tag} interval{'s' if len(clear) > 1 else ''} clear of zero")
    assert f"clear of zero {latex.at_batches(clear)} {'lie' if len(clear) > 1 else 'lies'} wholly within" in small
    assert small.endswith("differ, but by less than that.") and "$\\pm1.0$ points" in small
    # the equivalence margin is the normalisers' smallest effect; renormalisation's family has its own
    assert ("(the equivalence margin)" in small) == (comparison == "batchnorm_vs_none"), small
    assert not problems(f"Seed by seed, {text}.{small}"), small


@pytest.mark.parametrize(
    "comparison, declared", [("batchnorm_vs_none", "normalisers"), ("batchrenorm_vs_batchnorm", "renorm")]
)
def test_small_effect_sentence_reads_the_familys_own_smallest_effect_and_none_without_one(comparison, declared):
    """Each comparison's intervals are read against its own family's smallest effect: a two-point one
    takes in an interval a one-point one does not; a family declaring none gets no sentence."""
    summary = pair_summary({comparison: [(0.002, 0.015), (-0.004, 0.004)]})
    key = latex.macro_name("paired", comparison, "small effect")
    assert batch_size_summary.small_effect_macros(summary, ADJUSTED)[key] == ""
    wider = section(**{declared: {"smallest_effect": 0.02}})
    small = batch_size_summary.small_effect_macros(summary, wider)[key]
    assert small.startswith(" Yet the adjusted interval clear of zero at batch 2 lies wholly within $\\pm2.0$ points")
    other = "renorm" if declared == "normalisers" else "normalisers"  # another family's margin is not read
    assert batch_size_summary.small_effect_macros(summary, section(**{other: {"smallest_effect": 0.02}}))[key] == ""
    none = section(**{declared: {"smallest_effect": None}})
    assert batch_size_summary.small_effect_macros(pair_summary({comparison: [SMALL["above"]]}), none)[key] == ""


def test_direction_sentence_counts_a_tied_seed_on_neither_side():
    summary = pair_summary({"batchnorm_vs_none": [CI["below"], CI["above"]]})
    summary.loc[0, ["seeds_behind"]] = 19  # one seed's two networks score alike at batch 2
    text = batch_size_macros.interval_sign_macros(summary, ADJUSTED)["pairedBatchnormVsNoneDirectionSentence"]
    assert text == "every one of the 20 seeds puts batch normalisation above no normaliser at batch 4"


def test_effect_dz_is_the_mean_difference_over_its_spread_and_undefined_without_spread():
    from bnstudy.studies.batch_size.paired import effect_dz

    assert effect_dz(np.array([0.01, 0.03])) == pytest.approx(0.02 / np.std([0.01, 0.03], ddof=1))
    assert np.isnan(effect_dz(np.array([0.02, 0.02, 0.02])))
    assert np.isnan(effect_dz(np.array([0.02])))


def published_case(rates: dict[int, float], ours: dict[int, tuple[float, float, float]]):
    """Our mean and interval over networks and examples per size beside the published rate."""
    return companions_published.published_comparison({b: (rates[b], *v) for b, v in ours.items() if b in rates})


@pytest.mark.parametrize(
    "ours",
    [
        {2: (0.45, 0.40, 0.50), 16: (0.05, 0.04, 0.06)},  # inside, above
        {2: (0.30, 0.25, 0.35), 16: (0.032, 0.02, 0.04)},  # below, inside
        {2: (0.45, 0.44, 0.46)},  # one size only
        {2: (0.60, 0.55, 0.65), 16: (0.05, 0.04, 0.06)},  # below, above
        {},  # no size: n/a
    ],
)
def test_published_comparison_sentences(ours):
    m = published_case({2: 0.453, 16: 0.032}, ours)
    text = (
        "We set the published flip rates against our intervals over networks and examples: "
        f"{m['compPublishedComparison']}. The published rate lies outside that interval {m['compPublishedOutside']}."
    )
    assert not problems(text), text
    assert len(re.findall(r"times theirs|the same as theirs|of theirs", text)) == len(ours)


@pytest.mark.parametrize(
    "gain, lo, hi, grid_ci, answer",
    [
        (-0.02, -0.03, -0.01, (-0.03, -0.01), "survives"),
        (-0.01, -0.03, 0.01, (-0.03, -0.01), "can no longer"),  # told from zero at the grid's rate, not after
        (0.01, -0.01, 0.03, (-0.03, -0.01), "can no longer"),
        (0.02, 0.01, 0.03, (-0.03, -0.01), "does not"),  # batch norm ahead after the choice
        (0.01, -0.01, 0.03, (0.01, 0.03), "can no longer"),  # an advantage at the grid's rate, not told apart after
        (0.03, 0.01, 0.05, (0.01, 0.03), "survives"),  # an advantage at both
        (-0.02, -0.03, -0.01, (0.01, 0.03), "does not"),  # an advantage at the grid's rate, reversed after
        (-0.01, -0.03, 0.01, (-0.01, 0.01), "cannot be told"),  # told from zero at neither rate: never "no longer"
        (0.01, -0.01, 0.03, (-0.01, 0.01), "cannot be told"),
    ],
)
def test_deficit_answer_reads_in_every_sentence_that_uses_it(gain, lo, hi, grid_ci, answer):
    text = lr_sweep_answer(gain, lo, hi, grid_ci)
    assert text.startswith(answer)
    uses = 0
    for path in SECTIONS.glob("*.tex"):
        tex = path.read_text()
        for match in re.finditer(r"\\lrDeficitAnswer\{\}", tex):
            window = tex[max(0, match.start() - 150) : match.end() + 150].replace(match.group(0), text)
            assert not problems(window), (path.name, window)
            assert not re.search(r"after (a per-cell|the tuning)", window) or "after" in text, window
            uses += 1
    assert uses >= 3


def lr_sweep_answer(gain, lo, hi, grid_ci) -> str:
    """``lrDeficitAnswer`` from one-row paired tables, through the report's own code path."""
    runs = []
    # two normalisers, one batch size, one rate, two seeds with the given paired differences
    diffs = [gain - (hi - lo) / 4, gain + (hi - lo) / 4]
    for s, d in enumerate(diffs):
        runs.append({"normaliser": "none", "batch_size": 4, "lr": 1e-3, "seed": s, "test_accuracy": 0.9})
        runs.append({"normaliser": "batchnorm", "batch_size": 4, "lr": 1e-3, "seed": s, "test_accuracy": 0.9 + d})
    runs = pd.DataFrame(runs).assign(validation_accuracy=0.9)
    chosen = lr_sweep_report.best_rates(lr_sweep_report.rate_table(runs, 0.95))
    gap = Family("lr_gap", "batch norm minus none", "batch sizes", "bonferroni", 0.01)
    paired = lr_sweep_report.paired_at(runs, chosen, "batchnorm", "none", 0.95, gap)
    first, grid = paired.iloc[0].copy(), paired.iloc[0].copy()
    first["ci_low_adj"], first["ci_high_adj"] = lo, hi
    grid["ci_low_adj"], grid["ci_high_adj"] = grid_ci
    grid["gain"] = (grid_ci[0] + grid_ci[1]) / 2  # the grid's mean inside its interval (it names the gap)
    return lr_sweep_sentences.deficit_answer(first, grid)


@pytest.mark.parametrize(
    "means",
    [{8: 0.1, 32: 0.2, 64: 0.3}, {8: 0.3, 32: 0.2, 64: 0.4}, {8: 0.3, 32: 0.2, 64: 0.1}, {8: 0.2, 32: 0.3, 64: 0.1}],
)
def test_monotone_sentence_variants(means):
    text = f"across batch sizes the mean {running_stats.monotone_sentence(means)}."
    assert not problems(text), text


def in_place(section: str, macro: str, text: str, width: int = 200) -> list[str]:
    """The section's text around each use of ``macro``, with ``text`` put in its place."""
    tex = (SECTIONS / section).read_text()
    out = []
    for match in re.finditer(rf"\\{macro}(\{{\}})?(?![A-Za-z])", tex):
        out.append(tex[max(0, match.start() - width) : match.start()] + text + tex[match.end() : match.end() + width])
    return out


GHOST = [(f"{mode} mode", m) for m in (3, 5) for mode in ("training", "inference", "recomputed")]


@pytest.mark.parametrize("resolved", [list(c) for k in (0, 1, 2, 6) for c in itertools.combinations(GHOST, k)])
def test_ghost_resolved_sentence_agrees_with_its_count(resolved):
    n = len(resolved)
    text = accumulation_sentences.resolved_sentence(resolved)
    assert not problems(text), text
    verbs = re.findall(r"\b(excludes|exclude)\b", text)
    assert verbs == (["excludes"] if n <= 1 else ["exclude"]), text
    assert text.startswith({0: "none", 1: "one"}.get(n, str(n))), text
    for mode in {mode for mode, _ in resolved}:
        ms = [str(m) for md, m in resolved if md == mode]
        assert mode in text and f"micro-batch{'es' if len(ms) > 1 else ''} {' and '.join(ms)}" in text, text
    assert "are:" not in text
    windows = in_place("accumulation.tex", "accumGhostResolvedSentence", text)
    assert len(windows) == 1
    for window in windows:
        assert not problems(window), window


def recompute_entry(gain_lo: float, change_lo: float, mode: str) -> dict:
    """One mode's entry of the fine-tuning summary: recomputed accuracy, its paired gain over
    the fine-tuned network and its paired change from the start, each an interval of width 2
    points starting at the given lower end."""

    def interval(lo):
        return {"mean": lo + 0.01, "ci": [lo, lo + 0.02], "sd": 0.01, "seeds": 3}

    return {"recomputed_after": {"mean": 0.9 if mode == "live" else 0.85}} | {
        "recomputed_gain": interval(gain_lo),
        "recomputed_change": interval(change_lo),
    }


LOWER = {"above": 0.01, "zero": -0.01, "below": -0.03}


@pytest.mark.parametrize("gains", list(itertools.product(LOWER, repeat=2)))
@pytest.mark.parametrize("changes", list(itertools.product(LOWER, repeat=2)))
def test_recompute_sentence_claims_only_what_its_intervals_show(gains, changes):
    entry = {mode: recompute_entry(LOWER[g], LOWER[c], mode) for mode, g, c in zip(("live", "frozen"), gains, changes)}
    text = finetune_sentences.recompute_sentence(entry, "95.0\\%")
    assert not problems(text), text
    assert ("helps both modes" in text) == (gains == ("above", "above")), text
    if gains[0] == gains[1]:  # one plural verdict
        assert f"both intervals {latex.verdict(LOWER[gains[0]], LOWER[gains[0]] + 0.02, plural=True)}" in text, text
    else:  # each its own
        assert f"the live interval {latex.verdict(LOWER[gains[0]], LOWER[gains[0]] + 0.02)}" in text, text
        assert f"the frozen one {latex.verdict(LOWER[gains[1]], LOWER[gains[1]] + 0.02)}" in text, text
    # against the start: below only where the interval lies below; the weights blamed only when both do
    assert ("in the weights" in text) == (changes == ("below", "below")), text
    if changes[0] == changes[1]:
        said = {"below": "both stay below", "above": "both lie above", "zero": "neither is told apart"}[changes[0]]
        assert said in text, text
    else:
        phrase = {"below": "stay below it", "above": "lie above it", "zero": "are not told apart from it"}
        assert f"the live networks {phrase[changes[0]]} and the frozen ones {phrase[changes[1]]}" in text, text
    windows = in_place("finetune.tex", "finetuneRateTwoShuffleRecomputeSentence", text)
    assert len(windows) == 1
    for window in windows:
        assert not problems(window), window
        assert "helps both modes, to" not in window  # the old fixed claim is gone


# ---- the abstract's recovery and renormalisation sentences, section 2's difference clause -----

ROW = {  # adjusted intervals (shares) on each side of zero, with the sentence's printed form
    "below": (-0.02, -0.03, -0.01, "$-2.00$ points $[-3.00, -1.00]$"),
    "zero": (0.0006, -0.0206, 0.0218, "$+0.06$ points $[-2.06, +2.18]$"),
    "above": (0.02, 0.01, 0.03, "$+2.00$ points $[+1.00, +3.00]$"),
}


def pair_row(side: str, batch_size: int = 2) -> pd.Series:
    gain, lo, hi, _ = ROW[side]
    return pd.Series({"gain": gain, "ci_low_adj": lo, "ci_high_adj": hi, "batch_size": batch_size})


STATS = "exact statistics of the training data in place of the running averages"
RECOVERY = {  # (loss side, exact side, share closed) -> the sentence, written out
    ("zero", "above", 0.5): "At batch 2 the adjusted interval of batch normalisation minus no normaliser contains "
    f"zero, so there is no established loss to recover; {STATS} change the accuracy there by {ROW['above'][3]} "
    "(adjusted), an interval that lies wholly above zero",
    ("zero", "zero", 0.5): "At batch 2 the adjusted interval of batch normalisation minus no normaliser contains "
    f"zero, so there is no established loss to recover; {STATS} change the accuracy there by {ROW['zero'][3]} "
    "(adjusted), an interval that contains zero",
    ("above", "below", 0.5): "At batch 2 batch normalisation is ahead of no normaliser (the adjusted interval "
    f"lies wholly above zero), so there is no loss to recover; {STATS} change its accuracy by "
    f"{ROW['below'][3]} (adjusted)",
    ("below", "zero", 0.5): f"Exact statistics of the training data in place of the running averages change "
    f"the accuracy at batch 2 by {ROW['zero'][3]} (adjusted), an interval that contains zero, so no share of "
    "the loss is shown to lie in the running statistics",
    ("below", "below", 0.5): "Exact statistics of the training data in place of the running averages lower "
    f"the accuracy at batch 2 further, by {ROW['below'][3]} (adjusted)",
    ("below", "above", 0.4): "Exact statistics of the training data in place of the running averages recover "
    f"40\\% of the loss at batch 2 ({ROW['above'][3]}, adjusted); as no set of statistics we tried recovers "
    "the rest, we infer, without measuring it directly, that the rest lies in the weights",
    ("below", "above", 1.0): "Exact statistics of the training data in place of the running averages recover "
    f"the whole loss at batch 2 (100\\% of it; {ROW['above'][3]}, adjusted)",
}


def untagged(text: str, adjustment: str) -> str:
    """A sentence written out for Bonferroni-adjusted families, as it reads where they are declared
    without adjustment: every interval named unadjusted."""
    return text if adjustment == "bonferroni" else re.sub(r"\badjusted\b", "unadjusted", text)


def tagged(adjustment: str) -> dict:
    """The families a recovery sentence's intervals belong to, each declared with ``adjustment``."""
    return {"normalisers": family("normalisers", adjustment), "remedies": family("remedies", adjustment)}


@pytest.mark.parametrize("adjustment", ["bonferroni", "unadjusted"])
@pytest.mark.parametrize("case", list(RECOVERY))
def test_recovery_sentence_every_verdict(case, adjustment):
    loss, exact, closed = case
    text = batch_size_sentences.recovery_sentence(pair_row(loss), pair_row(exact), closed, 2, **tagged(adjustment))
    assert text == untagged(RECOVERY[case], adjustment)
    assert ("unadjusted" in text) == (adjustment == "unadjusted")
    assert not problems(text), text
    # a share of the loss only where the loss's interval lies below zero and the gain's above
    assert ("\\% of" in text) == (loss == "below" and exact == "above"), text
    for window in in_place("abstract.tex", "recoverySentence", text):
        assert not problems(window), window


def test_recovery_sentence_names_each_interval_by_its_own_family():
    """The loss's interval is named by the family normalisers, the exact statistics' by remedies."""
    text = batch_size_sentences.recovery_sentence(
        pair_row("zero"),
        pair_row("above"),
        0.5,
        2,
        normalisers=family("normalisers", "unadjusted"),
        remedies=family("remedies"),
    )
    assert text.startswith("At batch 2 the unadjusted interval of batch normalisation minus no normaliser contains")
    assert text.endswith(f"{ROW['above'][3]} (adjusted), an interval that lies wholly above zero")


@pytest.mark.parametrize("adjustment", ["bonferroni", "unadjusted"])
@pytest.mark.parametrize("other_side", ["above", "zero", "below"])
def test_recovery_sentence_names_another_recomputation_whose_interval_lies_above_zero(other_side, adjustment):
    """Where the exact statistics' interval contains zero, the sentence does not say that no share of the
    loss lies in the running statistics while another recomputation's interval (adjusted alike) lies
    wholly above zero: it names that one and its share."""
    others = [("the cumulative average", pair_row(other_side), 0.08), ("PreciseBN", pair_row("zero"), 0.07)]
    text = batch_size_sentences.recovery_sentence(
        pair_row("below"), pair_row("zero"), 0.13, 2, others, **tagged(adjustment)
    )
    head = (
        f"Exact statistics of the training data in place of the running averages change the accuracy at batch 2 "
        f"by {ROW['zero'][3]} (adjusted), an interval that contains zero"
    )
    if other_side == "above":
        assert text == untagged(
            f"{head}, while the cumulative average's change, {ROW['above'][3]} (adjusted alike), lies wholly "
            "above zero: by that recomputation a share of the loss (8\\% of it) lies in the running statistics",
            adjustment,
        )
    else:
        assert text == untagged(
            f"{head}, and no other recomputation's change (the cumulative average and PreciseBN) lies wholly "
            "above zero, so no share of the loss is shown to lie in the running statistics",
            adjustment,
        )
    assert not problems(text), text
    for window in in_place("abstract.tex", "recoverySentence", text):
        assert not problems(window), window


RENORM_HEAD = {  # (side at the smallest batch, batch norm's loss below zero) -> the opening
    ("above", True): f"Batch renormalisation recovers 30\\% of the loss at batch 2 ({ROW['above'][3]}, adjusted)",
    ("above", False): f"Batch renormalisation is ahead of batch normalisation at batch 2, by {ROW['above'][3]} "
    "(adjusted)",
    ("below", True): f"Batch renormalisation falls behind batch normalisation at batch 2, by {ROW['below'][3]} "
    "(adjusted)",
    ("zero", False): f"Batch renormalisation cannot be told apart from batch normalisation at batch 2 "
    f"({ROW['zero'][3]}, adjusted, an interval that contains zero)",
}
RENORM_LEAST = {
    "below": f"; its smallest paired difference to batch normalisation, at batch 4, is {ROW['below'][3]} "
    "(adjusted), an interval that lies wholly below zero: there it loses accuracy",
    "zero": f"; its smallest paired difference to batch normalisation, at batch 4, is {ROW['zero'][3]} "
    "(adjusted), an interval that contains zero",
    "above": f"; its smallest paired difference to batch normalisation, at batch 4, is {ROW['above'][3]} "
    "(adjusted), an interval that lies wholly above zero",
}


@pytest.mark.parametrize("adjustment", ["bonferroni", "unadjusted"])
@pytest.mark.parametrize("head", list(RENORM_HEAD))
@pytest.mark.parametrize("least", [*RENORM_LEAST, "same size"])
def test_renorm_sentence_every_verdict(head, least, adjustment):
    side, loss_below = head
    at_min = pair_row(side)
    least_row = at_min if least == "same size" else pair_row(least, 4)
    renorm = family("renorm", adjustment)
    text = batch_size_sentences.renorm_sentence(at_min, least_row, 0.3, loss_below, 2, renorm=renorm)
    tail = "; this is its smallest paired difference to batch normalisation" if least == "same size" else None
    assert text == untagged(RENORM_HEAD[head] + (tail or RENORM_LEAST[least]), adjustment)
    assert not problems(text), text
    for window in in_place("abstract.tex", "renormSentence", text):
        assert not problems(window), window


@pytest.mark.parametrize(
    "side, said",
    [("below", "lies wholly below zero"), ("zero", "contains zero"), ("above", "lies wholly above zero")],
)
def test_difference_clause_never_says_above_for_an_interval_holding_zero(side, said):
    gain, lo, hi, printed = ROW[side]
    text = latex.difference_clause(gain, lo, hi, "batch normalisation")
    assert text == f"a paired difference to batch normalisation of {printed}, an interval that {said}"
    windows = in_place("batch_size.tex", "pairedBatchrenormVsBatchnormMinDifference", text)
    assert len(windows) == 1
    for window in windows:
        assert not problems(window), window
        assert not re.search(r"\] (above|below) batch", window), window


# ---- fine-tuning: what one-class batches cost, what recomputing recovered, the remedy ---------


def interval(side: str) -> dict:
    gain, lo, hi, _ = ROW[side]
    return {"mean": gain, "ci": [lo, hi], "sd": 0.01, "seeds": 3}


MATH = {  # the same intervals as fine-tuning prints them (math points, one decimal)
    "below": "$-2.0$ [$-3.0$, $-1.0$] points",
    "zero": "$+0.1$ [$-2.1$, $+2.2$] points",
    "above": "$+2.0$ [$+1.0$, $+3.0$] points",
}
COST = {"below": "cost more", "above": "cost less", "zero": "cannot be told apart from them"}


@pytest.mark.parametrize("sides", [s for n in (1, 2, 3) for s in itertools.product(COST, repeat=n)])
def test_skew_cost_sentence_every_verdict(sides):
    rates = ["r1", "r2", "r3"][: len(sides)]
    text = finetune_sentences.skew_cost_sentence(rates, [interval(s) for s in sides])
    groups = {side: [r for r, s in zip(rates, sides) if s == side] for side in ("below", "above", "zero")}
    clauses = []
    for side, where in groups.items():
        if not where:
            continue
        if len(where) == len(rates):
            at = "at either rate" if len(rates) == 2 else "at every rate"
        else:
            at = "at " + (where[0] if len(where) == 1 else ", ".join(where[:-1]) + " and " + where[-1])
        clauses.append(f"{COST[side]} {at}")
    joined = clauses[0] if len(clauses) == 1 else ", ".join(clauses[:-1]) + " and " + clauses[-1]
    want = "against random batches of the same size, one-class batches " + joined
    if len(rates) == 1:
        assert "at every rate" in want
    assert text == want
    assert not problems(text), text
    assert "no more than" not in text  # the old fixed claim
    for window in in_place("finetune.tex", "finetuneSortedCostSentence", text):
        assert not problems(window), window


RECOVERED = {  # (live change's side, recomputed minus before's side) -> the sentence, written out; the live
    # change itself is the sentence before's, never printed again here
    ("below", "below"): "recomputing recovered only part of live fine-tuning's loss: recomputed, the networks still "
    f"lie {MATH['below']} from the start, an interval wholly below zero",
    ("below", "above"): "recomputing recovered more than live fine-tuning's loss: recomputed, the networks lie "
    f"{MATH['above']} from the start, an interval wholly above zero",
    ("below", "zero"): "after live fine-tuning's loss, recomputed, the networks can no longer be told apart from the "
    f"start ({MATH['zero']}, an interval that contains zero)",
    ("zero", "below"): "live fine-tuning showed no loss for recomputing to recover (its change's interval contains "
    f"zero); recomputed, the networks lie {MATH['below']} from the start",
    ("above", "zero"): "live fine-tuning showed no loss for recomputing to recover (its change's interval lies wholly "
    f"above zero); recomputed, the networks lie {MATH['zero']} from the start",
}


@pytest.mark.parametrize("case", list(RECOVERED))
def test_finetune_recovery_sentence_every_verdict(case):
    live = {"inference_change": interval(case[0]), "recomputed_change": interval(case[1])}
    text = finetune_sentences.recovery_sentence(live)
    assert text == RECOVERED[case]
    assert MATH[case[0]] not in text or case[0] == case[1]  # the live change is not printed a second time
    assert " cost " not in f" {text} "  # never 'cost -1.0 points
    assert not problems(text), text
    assert "recovered all" not in text
    windows = in_place("finetune.tex", "finetuneRateOneRecoverySentence", text)
    assert len(windows) == 1
    for window in windows:
        assert not problems(window), window


REMEDY = {
    "above": "does better than live fine-tuning",
    "below": "does worse than live fine-tuning",
    "zero": "cannot be told apart from live fine-tuning",
}


@pytest.mark.parametrize("sides", list(itertools.product(REMEDY, repeat=2)))
def test_finetune_remedy_sentence_every_verdict(sides):
    cell = {s: {"frozen_minus_live": {"inference_after": interval(side)}} for s, side in zip(STREAMS, sides)}
    text = finetune_sentences.remedy_sentence(cell)
    if sides[0] == sides[1]:
        assert text == f"the remedy {REMEDY[sides[0]]} on either stream"
    else:
        short = {"above": "does better", "below": "does worse", "zero": "cannot be told apart from it"}
        assert text == (
            f"against live fine-tuning, the remedy {short[sides[0]]} on random batches and "
            f"{short[sides[1]]} on one-class batches"
        )
    for macro in ("finetuneRateOneRemedySentence", "finetuneRateTwoRemedySentence"):
        for window in in_place("finetune.tex", macro, text):
            assert not problems(window), window


# ---- the abstract's sentences on the follow-up studies, one per study --------------------------

VERDICT = {"below": "lies wholly below zero", "zero": "contains zero", "above": "lies wholly above zero"}
BOTH = {"below": "both intervals lie wholly below zero", "zero": "both intervals contain zero",
        "above": "both intervals lie wholly above zero"}  # fmt: skip
SIDES = list(VERDICT)
# ROW's intervals as serving and fine-tuning print them (math points, one decimal), mean first
ONE_DECIMAL = {
    "below": "$-2.0$ points [$-3.0$, $-1.0$]",
    "zero": "$+0.1$ points [$-2.1$, $+2.2$]",
    "above": "$+2.0$ points [$+1.0$, $+3.0$]",
}


def verdicts_of_two(first: str, second: str) -> str:
    if first == second:
        return BOTH[first]
    return f"the first interval {VERDICT[first]}, the second {VERDICT[second]}"


def abstract_windows(macro: str, text: str) -> list[str]:
    windows = in_place("abstract.tex", macro, text)
    assert len(windows) == 1, macro
    return windows


# The serving and accumulation studies' abstract sentences, which read their declared families: every
# variant in tests/studies/test_serving_sentences.py and tests/studies/test_accumulation_sentences.py.


FINETUNE_HEAD = "Fine-tuned live in one-class batches of 2 rows, batch normalisation's inference-mode accuracy "
FINETUNE_HEAD += "changes by "
CONTROL_NAMES = {"none": "no normaliser's", "layernorm": "layer normalisation's"}
RATES = ("$10^{-4}$", "$10^{-3}$")
# the family of the batch-norm-specific parts as the test config declares it, in either adjustment, and
# how its 8 cells' intervals are named under each
FINETUNE_FAMILY = {a: declared_as("finetune_specific", a) for a in ("bonferroni", "unadjusted")}
FINETUNE_NAMED = {
    "bonferroni": "Bonferroni-adjusted over the 8 fine-tuning settings",
    "unadjusted": "unadjusted (exploratory)",
}


def adjusted(side: str) -> dict:
    """A batch-norm-specific part whose adjusted interval lies on ``side`` (its unadjusted one always
    wholly above zero, so that a sentence reading the wrong interval shows)."""
    return interval("above") | {"mean": ROW[side][0], "ci_adjusted": [ROW[side][1], ROW[side][2]], "family": 8}


def finetune_cases():
    """Per rate the live change's side and each control's part's side: every side of one rate's live
    change with every pattern of its parts, the other rate fixed; and both rates' patterns crossed."""
    for controls in ([], ["none"], ["layernorm"], ["none", "layernorm"]):
        patterns = list(itertools.product(SIDES, repeat=len(controls)))
        for live in SIDES:
            for pattern in patterns:
                yield controls, [(live, pattern), ("below", ("zero",) * len(controls))]
        if len(controls) == 2:
            for first, second in itertools.product(patterns, repeat=2):
                yield controls, [("below", first), ("below", second)]


def said_phrase(live: str, parts: dict) -> str:
    """What one rate's parts show, written out: a loss put down to batch normalisation only where the
    live change and every part lie below zero; else the change against each control, grouped by side."""
    if live == "below" and set(parts.values()) == {"below"}:
        names = " and ".join(CONTROL_NAMES[c] for c in parts)
        return f"a loss beyond {names}, which can be put down to batch normalisation"
    words_ = {"below": "below {}", "above": "above {}", "zero": "not told apart from {}"}
    groups = [words_[side].format(" and ".join(CONTROL_NAMES[c] for c, s in parts.items() if s == side))
              for side in ("below", "above", "zero") if side in parts.values()]  # fmt: skip
    return "a change " + " and ".join(groups)


@pytest.mark.parametrize("adjustment", list(FINETUNE_FAMILY))
@pytest.mark.parametrize("controls, rates", list(finetune_cases()))
def test_finetune_abstract_sentence_every_verdict(controls, rates, adjustment):
    cells = []
    for rate, (live, pattern) in zip(RATES, rates):
        cell = {
            "arms": {"live": {"change": interval(live)}, "frozen": {"change": interval("above")}},
            "contrasts": {f"live_minus_{c}": adjusted(side) for c, side in zip(controls, pattern)}
            | {"statistics_update": interval("above")},
        }
        cells.append((rate, cell))
    text = finetune_sentences.abstract_sentence(cells, 2, FINETUNE_FAMILY[adjustment], 8)
    lives = [live for live, _ in rates]
    want = (
        f"{FINETUNE_HEAD}{ONE_DECIMAL[lives[0]]} at rate {RATES[0]} and {ONE_DECIMAL[lives[1]]} at rate {RATES[1]} "
        f"(unadjusted: {verdicts_of_two(*lives)})"
    )
    if controls:
        minus = " and minus ".join(CONTROL_NAMES[c] for c in controls)
        per_rate = [" and ".join(ONE_DECIMAL[side] for side in pattern) + f" at {rate}"
                    for rate, (_, pattern) in zip(RATES, rates)]  # fmt: skip
        want += (
            f"; its change minus {minus}, the part specific to batch normalisation, paired by seed and "
            f"{FINETUNE_NAMED[adjustment]}, is {per_rate[0]} and {per_rate[1]}: "
        )
        phrases = [said_phrase(live, dict(zip(controls, pattern))) for live, pattern in rates]
        if phrases[0] == phrases[1]:
            want += f"at both rates {phrases[0]}"  # the rates named once, in the clause before
        else:
            want += f"at {RATES[0]} {phrases[0]}; at {RATES[1]} {phrases[1]}"
    assert text == want
    assert not problems(text), text
    assert "none" not in text
    assert ("Bonferroni" in text) == (adjustment == "bonferroni" and bool(controls))
    for window in abstract_windows("finetuneAbstractSentence", text):
        assert not problems(window), window


def test_finetune_abstract_sentence_reads_the_adjusted_interval_not_the_unadjusted_one():
    """A part whose unadjusted interval lies below zero and adjusted one holds zero is not a loss put down
    to batch normalisation."""
    part = interval("below") | {"ci_adjusted": [ROW["zero"][1], ROW["zero"][2]], "family": 8}
    cell = {"arms": {"live": {"change": interval("below")}}, "contrasts": {"live_minus_none": part}}
    text = finetune_sentences.abstract_sentence([("$10^{-4}$", cell)], 2, FINETUNE_FAMILY["bonferroni"], 8)
    assert text.endswith("is $-2.0$ points [$-2.1$, $+2.2$] at $10^{-4}$: at $10^{-4}$ a change not told apart "
                         "from no normaliser's")  # fmt: skip
    assert "an interval that lies wholly below zero" in text  # one rate: its live change's verdict alone


SPECIFIC_VERDICT = {  # {whom}: the control or the controls
    "below": ", so the loss beyond {whom}'{s} can be put down to batch normalisation",
    "above": ", so batch norm changes less for the worse than {whom}",
    "zero": ", so batch norm's change cannot be told apart from {whom}'{s}: no part of it is shown to be batch "
    "normalisation's (which does not show that none is)",
}
COUNT_WORDS = {1: "one", 2: "two", 3: "three", 4: "four"}


def specific_cell(controls: list[str], sides: dict, changes: dict) -> dict:
    """One rate's cells with the inputs as trained: per stream the controls' changes and the parts."""
    cell = {}
    for s in STREAMS:
        cell[s] = {
            "arms": {"live": {"change": interval("below")}}
            | {c: {"change": {"mean": changes[(c, s)]}} for c in controls},
            "contrasts": {f"live_minus_{c}": adjusted(sides[(c, s)]) for c in controls},
        }
    return cell


def specific_cases():
    for controls in (["none"], ["layernorm"], ["none", "layernorm"]):
        keys = [(c, s) for c in controls for s in STREAMS]
        for pattern in itertools.product(SIDES, repeat=len(keys)):
            yield controls, dict(zip(keys, pattern))


@pytest.mark.parametrize("controls, sides", list(specific_cases()))
def test_finetune_specific_sentence_every_verdict(controls, sides):
    keys = [(c, s) for c in controls for s in STREAMS]
    changes = {k: -0.024 - 0.011 * i for i, k in enumerate(keys)}
    text = finetune_sentences.specific_sentence(specific_cell(controls, sides, changes))
    lo, hi = f"${100 * min(changes.values()):+.1f}$", f"${100 * max(changes.values()):+.1f}$"
    head = "the controls change" if len(controls) == 2 else "the control changes"
    whose = "theirs" if len(controls) == 2 else "the control's"
    names = {"none": "no normaliser", "layernorm": "layer norm"}
    parts = []
    for j, c in enumerate(controls):
        a, b = ONE_DECIMAL[sides[(c, "shuffle")]], ONE_DECIMAL[sides[(c, "class_sorted")]]
        a, b = a.replace(" points", ""), b.replace(" points", "")
        on = (" on random", " on one-class batches") if j == 0 else ("", "")
        parts.append(f"{a}{on[0]} and {b}{on[1]} against {names[c]}")
    n = len(keys)
    values = [sides[k] for k in keys]
    if len(set(values)) == 1:
        subject = "both intervals" if n == 2 else "all four intervals"
        verb = {"below": "lie wholly below zero", "above": "lie wholly above zero", "zero": "contain zero"}[values[0]]
        whom, possessive = ("the controls", "") if len(controls) == 2 else ("the control", "s")
        verdict = f"{subject} {verb}" + SPECIFIC_VERDICT[values[0]].format(whom=whom, s=possessive)
    else:
        counted = []
        for side, one, many in (("below", "lies wholly below zero", "lie wholly below zero"),
                                ("above", "lies wholly above zero", "lie wholly above zero"),
                                ("zero", "contains zero", "contain zero")):  # fmt: skip
            k = values.count(side)
            if k:
                counted.append(f"{COUNT_WORDS[k]} {one if k == 1 else many}")
        listed = counted[0] if len(counted) == 1 else ", ".join(counted[:-1]) + " and " + counted[-1]
        verdict = (
            f"of these intervals {listed}, and only where an interval lies wholly below zero can a part of the "
            "loss be put down to batch normalisation"
        )
    joined = parts[0] if len(parts) == 1 else f"{parts[0]} and {parts[1]}"
    want = (
        f"{head} by {lo} to {hi} points, and live batch norm's change minus {whose}, the part specific to batch "
        f"normalisation, is {joined}: {verdict}"
    )
    assert text == want
    assert not problems(text), text
    for macro in ("finetuneRateOneSpecificSentence", "finetuneRateTwoSpecificSentence"):
        windows = in_place("finetune.tex", macro, text)
        assert len(windows) == 1, macro
        for window in windows:
            assert not problems(window), window


def test_finetune_specific_sentence_says_one_change_once():
    """Controls that change alike on both streams: their range is one value, not "x to x"."""
    cell = specific_cell(["none"], {("none", s): "zero" for s in STREAMS}, {("none", s): -0.024 for s in STREAMS})
    text = finetune_sentences.specific_sentence(cell)
    assert text.startswith("the control changes by $-2.4$ points, and")


def specific_arms(controls: list[str], order: list[str]) -> dict:
    """Two rates, both conditions and streams (8 cells), each control's part's interval (at the family's
    level) on the side ``order`` gives cell by cell."""
    arms, k = {}, 0
    for rate in ("0.0001", "0.001"):
        arms[rate] = {}
        for c in ("same", "shifted"):
            arms[rate][c] = {}
            for s in STREAMS:
                arms[rate][c][s] = {
                    "arms": {"live": {"change": interval("below")}}
                    | {a: {"change": interval("zero")} for a in controls},
                    "contrasts": {f"live_minus_{a}": adjusted(order[k]) for a in controls},
                }
                k += 1
    return arms


@pytest.mark.parametrize("controls", [["none"], ["layernorm"], ["none", "layernorm"]])
@pytest.mark.parametrize("cells", [(0, 0), (8, 0), (0, 8), (3, 0), (0, 1), (2, 5)])
def test_finetune_specific_counts_every_split(controls, cells):
    """finetuneSpecificCounts over eight cells (two rates, conditions and streams): every split of the
    cells' intervals (at the family's level) into below, above and around zero, in its place in the section."""
    below, above = cells
    order = ["below"] * below + ["above"] * above + ["zero"] * (8 - below - above)
    arms = specific_arms(controls, order)
    m = finetune_macros.specific_macros(arms, FINETUNE_FAMILY["bonferroni"], 0.95)
    assert m["finetuneSpecificFamily"] == "8"
    text = m["finetuneSpecificCounts"]
    assert text.count("against") == len(controls)
    assert not problems(text), text
    windows = in_place("finetune.tex", "finetuneSpecificCounts", text)
    assert len(windows) == 1
    for window in windows:
        assert not problems(window), window
    if below + above == 0:
        assert "contains zero in all 8 cells" in text
    else:
        n = {"below": below, "above": above}
        for side in n:  # a side that takes every cell reads "in all 8 cells"
            said = f"{side} zero in all 8 cells" if n[side] == 8 else f"{side} zero in {n[side]}"
            if side == "below" or not below:  # the first count carries the noun
                said += "" if n[side] in (0, 8) else (" cell" if n[side] == 1 else " cells")
            assert (said in text) == bool(n[side]), text
        assert "1 cells" not in text


def render(tex: str, macros: dict[str, str]) -> str:
    """``tex`` with each of ``macros`` (``{name: TeX}``) put in its place; other macros left as they are."""
    for name, value in macros.items():
        tex = re.sub(rf"\\{name}(\{{\}})?(?![A-Za-z])", lambda _: value, tex)
    return tex


FINETUNE_FAMILY_SENTENCE = {
    "bonferroni": "Each of its intervals is Bonferroni-adjusted over the 8 fine-tuning settings, so that all of them "
    "hold together with probability at least 95\\%, whichever cell a claim picks",
    "unadjusted": "Its intervals are unadjusted (exploratory): each is a 95\\% interval on its own, and the 8 do "
    "not hold together at 95\\%",
}


@pytest.mark.parametrize("controls", [["none"], ["none", "layernorm"]])
@pytest.mark.parametrize("adjustment", list(FINETUNE_FAMILY))
def test_finetune_specific_paragraph_and_caption_read_in_both_declarations(adjustment, controls):
    """The paragraph on the batch-norm-specific part and the arms table's caption, with the study's macros
    and the family's (bnstudy.paper.families.macros) in place, under the family declared with Bonferroni
    and with none: they say the intervals hold together only where the family is adjusted, and name
    the adjustment in the family's words."""
    family = FINETUNE_FAMILY[adjustment]
    arms = specific_arms(controls, ["below", "zero", "above", "zero"] * 2)
    m = finetune_macros.specific_macros(arms, family, 0.95)
    assert m["finetuneSpecificFamilySentence"] == FINETUNE_FAMILY_SENTENCE[adjustment]
    assert m["finetuneSpecificMark"] == {"bonferroni": "adj.", "unadjusted": "unadj."}[adjustment]
    fm = paper_families.macros([(family, family.record(0.95, 8))])
    assert fm["familyFinetuneSpecificPhrase"] == FINETUNE_NAMED[adjustment]
    tex = (SECTIONS / "finetune.tex").read_text()
    paragraph = tex[
        tex.index("\\paragraph{The part specific") : tex.index("\\begin{table}", tex.index("The part specific"))
    ]
    caption = tex[tex.index("\\caption{Fine-tuning arms") : tex.index("\\label{tab:finetune-arms}")]
    own = {k: v for k, v in m.items() if k.startswith("finetuneSpecific")}  # the rates' sentences tested above
    for part in (paragraph, caption):
        text = render(part, own | fm | {"finetuneConfidence": "95\\%"})
        assert not re.search(r"\\(finetuneSpecific|familyFinetuneSpecific)[A-Za-z]*", text), text
        assert not problems(text), text
        assert ("Bonferroni" in text) == (adjustment == "bonferroni"), text
        assert ("unadjusted" in text) == (adjustment == "unadjusted"), text
    rendered = render(paragraph, own | fm)
    assert ("hold together with probability" in rendered) == (adjustment == "bonferroni")
    assert ("do not hold together" in rendered) == (adjustment == "unadjusted")
    assert f"the {family.tag} interval against" in rendered


def budget_table(sides: dict) -> pd.DataFrame:
    """``{(batch size, key): side}`` as the budget study's cells, ROW's intervals the ones each row
    reports (``ci_low_adj``, ``ci_high_adj``: at the family's level); the unadjusted ones (``ci_low``,
    ``ci_high``) a point at the mean, which the sentence must not read."""
    rows = []
    for (b, key), side in sides.items():
        gain, lo, hi, _ = ROW[side]
        rows.append({"batch_size": b, "key": key, "gap": gain, "ci_low": gain, "ci_high": gain} | {
            "ci_low_adj": lo, "ci_high_adj": hi
        })  # fmt: skip
    return pd.DataFrame(rows)


EXACT = "inference-mode accuracy minus that with the exact statistics is"
BUDGETS = {  # name -> (budgets, cells, the sentence written out)
    "the smallest budget is clear of zero": (
        [8, 16],
        {(2, "8"): "zero", (4, "8"): "above", (2, "16"): "zero", (4, "16"): "zero", (2, "ema"): "below"},
        "With statistics recomputed by PreciseBN from 8 training rows, the smallest budget tried, "
        f"{EXACT} from $+0.06$ to $+2.00$ points and the unadjusted paired interval lies wholly above zero "
        "at batch 4 and "
        "contains zero at batch 2",
    ),
    "a larger budget is clear of zero": (
        [8, 16, 32],
        {(2, "8"): "below", (4, "8"): "below", (2, "16"): "below", (4, "16"): "zero", (2, "32"): "zero",
         (4, "32"): "zero"},
        f"With statistics recomputed by PreciseBN from 32 training rows, {EXACT} $+0.06$ points and the unadjusted "
        "paired interval contains zero at batches 2 and 4; with 16 rows it lies wholly below zero at batch 2 and "
        "contains zero at batch 4",
    ),
    "no budget is clear of zero": (
        [8, 16],
        {(2, "8"): "below", (4, "8"): "below", (2, "16"): "zero", (4, "16"): "below"},
        "Even with statistics recomputed by PreciseBN from 16 training rows, the largest budget tried, "
        f"{EXACT} from $-2.00$ to $+0.06$ points and the unadjusted paired interval lies wholly below zero "
        "at batch 4 and "
        "contains zero at batch 2",
    ),
    "no budget holds a batch of every size": (
        [8],
        {(2, "8"): "zero", (16, "ema"): "zero", (16, "all"): "zero", (2, "all"): "zero"},
        f"With statistics recomputed by PreciseBN from 8 training rows, the largest budget tried, {EXACT} "
        "$+0.06$ points and the unadjusted paired interval contains zero at batch 2",
    ),
}  # fmt: skip


@pytest.mark.parametrize("adjustment", ["unadjusted", "bonferroni"])
@pytest.mark.parametrize("case", list(BUDGETS))
def test_precise_rows_abstract_sentence_every_branch(case, adjustment):
    """Every branch under either declaration of the family ``precise_rows``: its tag names the interval."""
    budgets, cells, want = BUDGETS[case]
    family = Family("precise_rows", "recomputed minus exact", "budgets", adjustment, None)
    text = precise_rows_report.abstract_sentence(budget_table(cells), budgets, family)
    if adjustment == "bonferroni":
        want = want.replace("the unadjusted paired interval", "the adjusted paired interval")
    assert text == want
    assert not problems(text), text
    assert "alike" not in text and "match" not in text  # an interval holding zero tells nothing apart
    for window in abstract_windows("preciseRowsAbstractSentence", text):
        assert not problems(window), window


@pytest.mark.parametrize("largest", [0.0, 0.0011, 0.125])
def test_debiasing_sentence_every_variant_in_its_place(largest):
    """The batch-size section's sentence on debiasing: no network changed is said in words ("changes
    nothing", never "0.0 points"), any change printed with no claim that nothing changed."""
    m = batch_size_macros.debiased_words(largest)
    text = (SECTIONS / "batch_size.tex").read_text()
    start = text.index("\\debiasedLead")
    sentence = text[start : text.index(". The bias", start) + 1]
    for name, value in m.items():
        sentence = sentence.replace(f"\\{name}", value)
    assert not problems(sentence), sentence
    assert ("changes nothing" in sentence) == (largest == 0) and "0.0 points" not in sentence
    if largest:
        assert f"is {latex.points(largest)} points" in sentence


@pytest.mark.parametrize("controls, sides", list(specific_cases()))
def test_finetune_specific_sentence_after_the_same_reading_at_the_smaller_rate(controls, sides):
    """The larger rate's sentence after the smaller rate's: where the intervals lie on the same sides,
    the reading is not said a second time ('as at 1e-4, all four intervals contain zero'); where they
    differ, the sentence reads in full. Both rendered in the paragraph."""
    keys = [(c, s) for c in controls for s in STREAMS]
    changes = {k: -0.024 - 0.011 * i for i, k in enumerate(keys)}
    cell = specific_cell(controls, sides, changes)
    first = finetune_sentences.specific_sentence(cell)
    rate = "$1 \\times 10^{-4}$"
    same = finetune_sentences.specific_sentence(cell, (rate, finetune_sentences.specific_sides_of(cell)))
    shown = finetune_sentences.specific_sides(finetune_sentences.specific_sides_of(cell))
    assert same == first.split(": ")[0] + f": as at {rate}, {shown}"
    assert " so " not in same.split(": ")[1] and "only where" not in same
    flipped = ["above" if s != "above" else "below" for s in finetune_sentences.specific_sides_of(cell)]
    assert finetune_sentences.specific_sentence(cell, (rate, flipped)) == first
    text = render(
        (SECTIONS / "finetune.tex").read_text(),
        {"finetuneRateOneSpecificSentence": first, "finetuneRateTwoSpecificSentence": same, "finetuneRateOne": rate},
    )
    start = text.index("With the inputs as trained, at")
    passage = text[start : text.index("Over all", start)]
    assert not problems(passage), passage
    assert passage.count("(which does not show that none is)") <= 1
