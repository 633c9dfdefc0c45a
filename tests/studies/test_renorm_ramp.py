"""The batch-renorm ramp study (bnstudy.studies.renorm_ramp): the schedule's absolute form leaves every
fractional schedule as it was, a variant is the grid's run but for its limits, the comparisons are the
differences they name, and every variant of its sentences reads."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from bnstudy.base.config import ConfigError
from bnstudy.evaluation.accuracy import inference_correct, share
from bnstudy.nets import model, train
from bnstudy.nets.recipe import Recipe, RenormSchedule, renorm_schedule
from bnstudy.paper import families as paper_families
from bnstudy.studies.renorm_ramp import checks, cost, design, report, science
from declared_families import declared_as
from test_sentences import in_place, problems, render

ROOT = Path(__file__).resolve().parents[2]
WIDTHS = (6, 8, 8, 3)
GRID_RAMP = {"rmax": 3.0, "dmax": 5.0, "warmup": 0.05, "rmax_full": 0.40, "dmax_full": 0.25}
IOFFE = {"name": "ioffe", "label": "Ioffe's schedule in steps", "steps": "absolute", "warmup": 5000,
         "rmax_full": 40000, "dmax_full": 25000}  # fmt: skip
FIXED = {"name": "fixed", "label": "the full limits from the first step", "steps": "absolute", "warmup": 0,
         "rmax_full": 0, "dmax_full": 0}  # fmt: skip
SLOW = {"name": "slow", "label": "the ramp twice as slow", "warmup": 0.10, "rmax_full": 0.80, "dmax_full": 0.50}
FAST = {"name": "fast", "label": "the ramp twice as fast", "warmup": 0.025, "rmax_full": 0.20, "dmax_full": 0.125}
# the study's family as the test config declares it, in either adjustment
FAMILY = {a: declared_as("renorm_ramp", a) for a in ("bonferroni", "unadjusted")}
BONFERRONI = FAMILY["bonferroni"]


# ---- the schedule: fractions as before, absolute steps as Ioffe's ---------------------------------


def limits_before(s: RenormSchedule, step: int) -> tuple[float, float]:
    """RenormSchedule.limits as it was before the absolute form (its fractional arithmetic, verbatim)."""
    t = step / max(s.total_steps, 1)

    def ramp(full: float) -> float:
        if t <= s.warmup:
            return 0.0
        return min(1.0, (t - s.warmup) / (full - s.warmup))

    return 1.0 + (s.rmax - 1.0) * ramp(s.rmax_full), s.dmax * ramp(s.dmax_full)


@pytest.mark.parametrize("total", [0, 1, 7, 20, 280, 4480, 8980])
@pytest.mark.parametrize("ramp", [GRID_RAMP, {**GRID_RAMP, **{k: SLOW[k] for k in design.MILESTONES}},
                                  {**GRID_RAMP, **{k: FAST[k] for k in design.MILESTONES}},
                                  dict(rmax=2.0, dmax=1.0, warmup=0.0, rmax_full=1.0, dmax_full=0.5)])  # fmt: skip
def test_fractional_schedules_give_the_limits_they_gave_before_at_every_step(total, ramp):
    s = RenormSchedule(total_steps=total, **ramp)
    for step in range(total + 2):
        assert s.limits(step) == limits_before(s, step), step  # the same floats, bit for bit
    recipe = Recipe(**{f"renorm_{k}": v for k, v in ramp.items()})
    assert (
        renorm_schedule("batchrenorm", recipe, 100) == RenormSchedule(total_steps=recipe.epochs * 1, **ramp)
        and not renorm_schedule("batchrenorm", recipe, 100).absolute
    )


def test_ioffes_schedule_in_absolute_steps_by_hand():
    s = RenormSchedule(total_steps=50000, warmup=5000, rmax_full=40000, dmax_full=25000, absolute=True)
    assert s.limits(0) == (1.0, 0.0) and s.limits(4999) == (1.0, 0.0)  # steps 1 to 5,000: plain batch norm
    assert s.limits(5000) == pytest.approx((1.0 + 2.0 / 35000, 5.0 / 20000))  # the 5,001st step
    assert s.limits(24999)[1] == 5.0 and s.limits(24998)[1] < 5.0  # dmax 5 at step 25,000
    assert s.limits(39999)[0] == 3.0 and s.limits(39998)[0] < 3.0  # rmax 3 at step 40,000
    # a digits run at batch 2 (8,980 steps) ends mid-ramp; at batch 4 (4,480) in the warm-up
    short = RenormSchedule(total_steps=8980, warmup=5000, rmax_full=40000, dmax_full=25000, absolute=True)
    assert short.last == pytest.approx((1.0 + 2.0 * 3980 / 35000, 5.0 * 3980 / 20000))
    assert RenormSchedule(total_steps=4480, warmup=5000, rmax_full=40000, dmax_full=25000, absolute=True).last == (
        1.0,
        0.0,
    )


def test_no_warmup_and_no_ramp_sets_the_full_limits_from_the_first_step():
    s = RenormSchedule(total_steps=30, warmup=0, rmax_full=0, dmax_full=0, absolute=True)
    assert all(s.limits(step) == (3.0, 5.0) for step in range(30))
    # a milestone at the warm-up's end: the limit in full right after it, the other still ramps
    j = RenormSchedule(total_steps=30, warmup=10, rmax_full=10, dmax_full=20, absolute=True)
    assert j.limits(9) == (1.0, 0.0) and j.limits(10) == (3.0, 0.5) and j.limits(19) == (3.0, 5.0)


def test_the_recipe_records_absolute_steps_only_where_used():
    fraction, absolute = Recipe(), Recipe(renorm_steps="absolute", renorm_warmup=5000.0)
    assert "renorm_steps" not in fraction.metadata()  # the grid's weights files as they were
    assert absolute.metadata()["renorm_steps"] == "absolute"
    assert Recipe.from_metadata(absolute.metadata()) == absolute
    assert renorm_schedule("batchrenorm", absolute, 100).absolute
    with pytest.raises(ValueError, match="unknown renorm_steps 'steps'"):
        renorm_schedule("batchrenorm", Recipe(renorm_steps="steps"), 100)


# ---- design and science ---------------------------------------------------------------------------


def test_a_variant_overrides_only_its_own_settings():
    base = {"batch_size": 4, "epochs": 3} | {f"renorm_{k}": v for k, v in GRID_RAMP.items()}
    assert design.recipe_params(base, {"name": "same"}, GRID_RAMP) == base
    slow = design.recipe_params(base, SLOW, GRID_RAMP)
    assert slow == base | {"renorm_warmup": 0.1, "renorm_rmax_full": 0.8, "renorm_dmax_full": 0.5}
    assert design.recipe_params(base, IOFFE, GRID_RAMP)["renorm_steps"] == "absolute"
    assert design.describe(IOFFE, GRID_RAMP) == (
        r"plain batch norm for the first 5{,}000 steps, $r_{\max}$ reaching 3 at step 40{,}000 and "
        r"$d_{\max}$ reaching 5 at step 25{,}000"
    )
    assert design.describe(FIXED, GRID_RAMP) == r"no warm-up, $r_{\max}$ 3 and $d_{\max}$ 5 from the first step"
    assert design.describe({}, GRID_RAMP) == (
        r"plain batch norm for the first 5\% of the steps, $r_{\max}$ reaching 3 at 40\% of the steps and "
        r"$d_{\max}$ reaching 5 at 25\% of the steps"
    )


def data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, WIDTHS[0])).astype(np.float32)
    return x, np.arange(n) % WIDTHS[-1]


def test_a_variant_is_the_grids_run_but_for_its_limits():
    x, y = data()
    spec = model.NetSpec("batchrenorm", WIDTHS, groups=1)
    params = {"batch_size": 4, "epochs": 3, "lr": 1e-2} | {f"renorm_{k}": v for k, v in GRID_RAMP.items()}
    seeds = [0, 3]
    rows = science.train_variants(spec, params, [{"name": "same"}, FIXED], GRID_RAMP, seeds, x, y, x, y)
    grid, _ = train.train_models(spec, Recipe.from_params(params), seeds, x, y)
    expected = share(inference_correct(grid, spec, x, y))
    same = [r["accuracy"] for r in rows if r["schedule"] == "same"]
    assert same == [float(a) for a in expected]  # the grid's schedule: its grid networks, bit for bit
    fixed = [r for r in rows if r["schedule"] == "fixed"]
    assert [r["seed"] for r in fixed] == seeds and {r["steps"] for r in fixed} == {30}
    assert {(r["last_rmax"], r["last_dmax"]) for r in fixed} == {(3.0, 5.0)}
    limits = train.step_limits(spec, Recipe.from_params(design.recipe_params(params, FIXED, GRID_RAMP)), len(y))
    assert limits.shape == (30, 2) and (limits == np.float32([3.0, 5.0])).all()  # the limits from step one
    with pytest.raises(ValueError, match="trains batch renorm"):
        science.train_variants(
            model.NetSpec("batchnorm", WIDTHS, groups=1), params, [FIXED], GRID_RAMP, [0], x, y, x, y
        )


# ---- report: the comparisons are the differences they name ----------------------------------------


def synthetic(seeds=(0, 1, 2, 3), sizes=(2, 4), schedules=("ioffe", "fixed"), seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for arm, b in itertools.product((report.BATCHNORM, design.GRID, *schedules), sizes):
        for s, v in zip(seeds, rng.uniform(0.5, 0.95, len(seeds)), strict=True):
            rows.append({"arm": arm, "batch_size": b, "seed": s, "accuracy": float(v)})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seed", range(4))
def test_comparisons_are_the_paired_differences_adjusted_over_the_family(seed):
    table = synthetic(seed=seed)
    cells = report.comparisons(table, ["ioffe", "fixed"], [4, 2], 0.95, BONFERRONI)
    assert len(cells) == report.family(["ioffe", "fixed"], [2, 4]) == 2 * 5
    assert set(cells["family"]) == {10} and cells["confidence"].iloc[0] == pytest.approx(1 - 0.05 / 10)
    assert list(cells["batch_size"]) == [2] * 5 + [4] * 5  # by batch size, the grid's schedule first

    def acc(arm, b):
        g = table[(table["arm"] == arm) & (table["batch_size"] == b)].sort_values("seed")
        return g["accuracy"].to_numpy()

    for r in cells.to_dict("records"):
        other = report.BATCHNORM if r["key"] == "vs_batchnorm" else design.GRID
        diffs = acc(r["schedule"], r["batch_size"]) - acc(other, r["batch_size"])
        assert r["gain"] == pytest.approx(diffs.mean(), abs=1e-12)
        assert r["agree"] == int((np.sign(diffs) == np.sign(diffs.mean())).sum())
        assert r["ci_low"] <= r["gain"] <= r["ci_high"]
    # a smaller family: a narrower interval of the same differences
    one = report.comparisons(table, ["ioffe"], [2], 0.95, BONFERRONI)
    assert (one["ci_high"] - one["ci_low"]).iloc[0] < (cells["ci_high"] - cells["ci_low"]).iloc[0]
    # the family declared without adjustment: the same differences, each interval at 95% and narrower
    plain_ = report.comparisons(table, ["ioffe", "fixed"], [4, 2], 0.95, FAMILY["unadjusted"])
    assert set(plain_["family"]) == {10} and set(plain_["confidence"]) == {0.95}
    assert list(plain_["gain"]) == list(cells["gain"]) and list(plain_["agree"]) == list(cells["agree"])
    assert ((plain_["ci_high"] - plain_["ci_low"]) < (cells["ci_high"] - cells["ci_low"])).all()
    for r in plain_.to_dict("records"):
        other = report.BATCHNORM if r["key"] == "vs_batchnorm" else design.GRID
        diffs = acc(r["schedule"], r["batch_size"]) - acc(other, r["batch_size"])
        half = sps.t.ppf(0.975, len(diffs) - 1) * diffs.std(ddof=1) / np.sqrt(len(diffs))
        assert [r["ci_low"], r["ci_high"]] == pytest.approx([diffs.mean() - half, diffs.mean() + half], abs=1e-12)
    s = report.sensitivity(cells, 2)
    gains = cells[(cells["batch_size"] == 2) & (cells["key"] == "vs_batchnorm")].set_index("schedule")["gain"]
    assert s["low"] == gains.min() and s["high"] == gains.max() and s["range"] == gains.max() - gains.min()
    assert s["low_schedule"] == gains.idxmin() and s["high_schedule"] == gains.idxmax()


def test_a_seed_missing_on_either_side_is_an_error():
    study = pd.DataFrame([{"schedule": "ioffe", "batch_size": 2, "seed": 0, "accuracy": 0.5}])
    grid = pd.DataFrame(
        [{"normaliser": n, "batch_size": 2, "seed": 0, "mode": m, "accuracy": 0.5}
         for n in ("batchnorm", "batchrenorm") for m in ("inference", "training")]
    )  # fmt: skip
    table = report.per_seed(study, grid, [0])
    assert sorted(table["arm"]) == ["batchnorm", "grid", "ioffe"]  # the inference rows only
    with pytest.raises(ValueError, match="seeds"):
        report.per_seed(study, grid, [0, 1])


# ---- the sentences: every variant ------------------------------------------------------------------

SIDES = {"below": (-0.03, -0.05, -0.01), "above": (0.03, 0.01, 0.05), "zero": (0.01, -0.02, 0.04),
         "alike": (0.0, 0.0, 0.0)}  # fmt: skip
LABELS = {"ioffe": "Ioffe's schedule in steps", "fixed": "the full limits from the first step"}


def cells_for(b: int, by_batchnorm: tuple, by_grid: tuple) -> pd.DataFrame:
    """Rows of one batch size: the grid's schedule and each variant against batch norm with the sides
    ``by_batchnorm`` (grid first), each variant against the grid's batch renorm with ``by_grid``."""
    out = []
    for arm, side_ in zip((design.GRID, *LABELS), by_batchnorm, strict=True):
        out.append(("vs_batchnorm", arm, side_))
    out += [("vs_grid", arm, side_) for arm, side_ in zip(LABELS, by_grid, strict=True)]
    rows = []
    for key, arm, side_ in out:
        gain, lo, hi = SIDES[side_]
        rows.append({"batch_size": b, "schedule": arm, "key": key, "seeds": 5, "gain": gain, "sd": 0.01,
                     "ci_low": lo, "ci_high": hi, "agree": 0 if side_ == "alike" else 4, "family": 10,
                     "confidence": 0.995})  # fmt: skip
    return pd.DataFrame(rows)


CASES = list(itertools.product(itertools.product(SIDES, repeat=3), itertools.product(SIDES, repeat=2)))
VERDICT = {"below": "lies wholly below zero", "above": "lies wholly above zero", "zero": "contains zero"}


def faults(text: str) -> list[str]:
    """:func:`problems`, but a schedule's name may recur (it names a schedule in two comparisons, with
    two verdicts): a repeated five-word run inside a name is not a repeated clause."""
    plain_ = {n: " ".join(re.findall(r"[a-z]+", label.lower())) for n, label in LABELS.items()}
    names = [f"with {plain_[a]} and {plain_[b]}" for a in plain_ for b in plain_ if a != b]
    names += [f"with {name}" for name in plain_.values()]
    return [
        p
        for p in problems(text)
        if not (p.startswith("repeated clause") and any(p.split("'")[1] in name for name in names))
    ]


@pytest.mark.parametrize("by_batchnorm, by_grid", CASES, ids=lambda v: "-".join(v))
def test_every_sentence_variant_reads_with_one_verdict_per_comparison(by_batchnorm, by_grid):
    cells = cells_for(2, by_batchnorm, by_grid)
    unanimous = cells.assign(agree=cells["seeds"].where(cells["agree"] > 0, 0))  # every seed on the mean's side
    assert not faults(report.results_sentence(unanimous, 2, LABELS, 8980))
    assert " of 5 seeds" not in report.results_sentence(unanimous, 2, LABELS, 8980)
    text = report.results_sentence(cells, 2, LABELS, 8980)
    assert not faults(text), text
    # in its place in the section, and beside the next batch size's sentence (its other sides reversed)
    reverse = {"below": "above", "above": "below", "zero": "zero", "alike": "alike"}
    nxt = cells_for(4, tuple(reverse[x] for x in by_batchnorm), by_grid)
    both = pd.concat([cells, nxt], ignore_index=True)
    m = report.macros(both, [0, 1, 2, 3, 4], [2, 4], LABELS, {design.GRID: "g", "ioffe": "i", "fixed": "f"},
                      {2: 8980, 4: 4480}, 0.95, BONFERRONI)  # fmt: skip
    # each batch size's sentences read alone; side by side they repeat their structure, nothing else
    paragraph = m["renormRampResults"]
    assert m[report.results_macro(2)] == text and not faults(m[report.results_macro(4)])
    assert not [p for p in faults(paragraph) if not p.startswith("repeated clause")], paragraph
    section = (ROOT / "paper" / "sections" / "renorm_ramp.tex").read_text()
    used = "\\renormRampResults{}"
    paragraph = section[section.index("\\paragraph{Results.}") : section.index("\\begin{table}")]
    rendered = paragraph.replace(used, m["renormRampResults"])
    assert used in paragraph and not [p for p in faults(rendered) if not p.startswith("repeated clause")], text
    # one verdict per comparison: the grid's, then each variant's against batch norm either in the
    # "same holds" sentence or in its own; then the variants apart from the grid's renorm
    phrase = {k: v for k, v in report.AGAINST_BATCHNORM.items()}
    # a schedule whose every seed scores as batch norm is said to, not "cannot be told apart"
    grid_side = "alike" if by_batchnorm[0] == "alike" else report.side(*SIDES[by_batchnorm[0]][1:])
    sides = {
        n: "alike" if x == "alike" else report.side(*SIDES[x][1:])
        for n, x in zip(LABELS, by_batchnorm[1:], strict=True)
    }
    first = text.split(". ")[0]
    assert first.startswith("At batch 2 (8{,}980 steps), with the grid's schedule batch renormalisation ")
    assert phrase[grid_side] in first
    same = [n for n in LABELS if sides[n] == grid_side]
    if same:
        who = "every other schedule" if len(same) == len(LABELS) else LABELS[same[0]]
        assert f"The same holds with {who}" in text
    else:
        assert "The same holds" not in text
    for verdict_ in set(sides.values()) - {grid_side}:
        group = [LABELS[n] for n in LABELS if sides[n] == verdict_]
        assert f"With {' and '.join(group)} it {phrase[verdict_]}" in text, text
    for n in LABELS:  # each variant named once for its verdict against batch norm
        head = text[: text.index("Against the grid's") if "Against the grid's" in text else len(text)]
        assert head.count(LABELS[n]) == (0 if sides[n] == grid_side and len(same) == len(LABELS) else 1), text
    # every label is named once for its verdict against batch norm (in "the same holds" or its own)
    apart = [n for n, x in zip(LABELS, by_grid, strict=True) if report.side(*SIDES[x][1:]) != "zero"]
    for where in ("below", "above"):
        group = [n for n in apart if (SIDES[by_grid[list(LABELS).index(n)]][1] > 0) == (where == "above")]
        who = " and ".join(LABELS[n] for n in group)
        assert (f"{where} it with {who} (" in text) == bool(group), text
    assert ("Against the grid's batch renormalisation the networks score " in text) == bool(apart)
    if not apart:
        assert "each such interval contains zero" in text
    elif len(apart) < len(LABELS):
        assert "The other schedule's interval against it contains zero." in text
    assert ("scores exactly as batch normalisation, in every seed" in first) == (by_batchnorm[0] == "alike")
    assert "$0.00$ points (every seed alike)" not in text and "$0.00$ points each" not in text, text
    assert not re.search(r"the (first|second)( interval)?,? (lies|contains)", text)
    assert not any(v in text for v in VERDICT.values() if v != "contains zero")  # verdicts in words, not repeated
    gains = [SIDES[x][0] for x in by_batchnorm]
    tail = (
        text.rsplit(". ", 1)[-1]
        if not text.endswith(" points.")
        else text[text.rindex("Over the ") :]
        if "Over the " in text
        else text[text.rindex("With all ") :]
    )
    assert ("runs from" in tail) == (min(gains) != max(gains)), tail


# every seed's difference the same nonzero value: an interval of zero width (two seeds can agree)
UNIFORM = {"same_above": (0.0011, 0.0011, 0.0011), "same_below": (-0.0022, -0.0022, -0.0022)}
UNIFORM_CASES = list(
    itertools.product(
        itertools.product(("same_above", "same_below", "above"), ("same_above", "zero"), ("same_below", "above")),
        itertools.product(("same_above", "zero"), ("same_below", "zero")),
    )
)


@pytest.mark.parametrize("by_batchnorm, by_grid", UNIFORM_CASES, ids=lambda v: "-".join(v))
def test_seeds_that_all_differ_alike_are_said_to_and_get_no_interval(by_batchnorm, by_grid):
    """Where every seed's difference is the same nonzero value, its interval has zero width: the text
    gives that value with a dagger, never the zero-width interval, and the note the dagger points to
    (no spread, so no interval) ends the text once, only where a dagger is printed."""
    table = dict(SIDES, **UNIFORM)
    cells = cells_for(2, ("zero",) * 3, ("zero",) * 2)
    keys = [("vs_batchnorm", a) for a in (design.GRID, *LABELS)] + [("vs_grid", a) for a in LABELS]
    for (key, arm), name in zip(keys, (*by_batchnorm, *by_grid), strict=True):
        gain, lo, hi = table[name]
        row = (cells["key"] == key) & (cells["schedule"] == arm)
        cells.loc[row, ["gain", "ci_low", "ci_high", "agree"]] = [gain, lo, hi, 5 if name in UNIFORM else 4]
    text = report.results_sentence(cells, 2, LABELS, 8980)
    assert not faults(text), text
    assert "every seed alike" not in text, text
    body = text.split(report.UNIFORM_NOTE)[0]
    assert (report.UNIFORM_NOTE in text) == ("\\dagger" in body), text
    if report.UNIFORM_NOTE in text:
        assert text.count(report.UNIFORM_NOTE) == 1 and text.endswith(report.UNIFORM_NOTE), text
    value = {"same_above": "+0.11", "same_below": "-0.22"}
    if by_batchnorm[0] in UNIFORM:  # the grid schedule's verdict, with its value in every seed
        direction = "above" if by_batchnorm[0] == "same_above" else "below"
        first = text.split(". ")[0]
        assert first.endswith(
            f"scores {direction} batch normalisation: ${value[by_batchnorm[0]]}$ points$^{{\\dagger}}$"
        )
    sides = [report.side(*table[x][1:]) for x in by_batchnorm]
    for n, x, side_ in zip(LABELS, by_batchnorm[1:], sides[1:], strict=True):
        if x in UNIFORM and side_ != sides[0]:  # its own verdict's sentence gives its value, daggered
            sentence = next(t for t in body.split(". ") if t.startswith("With ") and LABELS[n] in t)
            assert f"${value[x]}$ points$^{{\\dagger}}$" in sentence, text
    for n, x in zip(LABELS, by_grid, strict=True):  # told apart from the grid's renorm, every seed alike
        if x in UNIFORM:
            assert f"{LABELS[n]} (${value[x]}$ points$^{{\\dagger}}$" in text, text


@pytest.mark.parametrize("by_batchnorm, by_grid", CASES, ids=lambda v: "-".join(v))
def test_the_range_of_the_means_is_given_once(by_batchnorm, by_grid):
    """Where every other schedule keeps the grid schedule's verdict, their means are not listed beside
    that verdict and again in the closing range over all schedules; the closing range is there in every
    variant, and no interval reads as two sides that score alike."""
    text = report.results_sentence(cells_for(2, by_batchnorm, by_grid), 2, LABELS, 8980)
    sides = ["alike" if x == "alike" else report.side(*SIDES[x][1:]) for x in by_batchnorm]
    if all(x == sides[0] for x in sides[1:]):
        assert "The same holds with every other schedule." in text, text
    assert text.count("means from") + text.count("runs from") <= 1, text
    assert text.count("runs from") + text.count("With all 3 schedules") == 1, text
    assert "score apart" not in text, text


ENDS = {"done": (3.0, 5.0), "warmup": (1.0, 0.0), "ramp": (1.23, 0.99)}


@pytest.mark.parametrize("ends", list(itertools.product(ENDS, repeat=4)), ids="-".join)
def test_the_unfinished_ramps_sentence_in_every_variant(ends):
    """Two variants at batches 2 and 4: each run's last limits done, in the warm-up or mid-ramp."""
    keys = [("ioffe", 2), ("ioffe", 4), ("fixed", 2), ("fixed", 4)]
    limits = {k: ENDS[e] for k, e in zip(keys, ends, strict=True)}
    text = design.unfinished_sentence(limits, {"ioffe": (3.0, 5.0), "fixed": (3.0, 5.0)}, LABELS)
    if set(ends) == {"done"}:
        assert text == ""
        return
    assert not problems(text) and text[0].isupper() and text.endswith("."), text
    clauses = {name: c for c in text[:-1].split("; ") for name in LABELS if LABELS[name] in c}
    for (name, b), e in zip(keys, ends, strict=True):
        clause = clauses.get(name, "")
        warm = re.search(r"its runs? at batch(es)? ([\d, and]+) ends? in the warm-up", clause)
        assert (warm is not None and str(b) in warm.group(2).split()) == (e == "warmup"), text
        assert (f"$ at batch {b}" in clause) == (e == "ramp"), text
    assert text.count("= 1.23$") == ends.count("ramp")
    assert set(clauses) == {n for n in LABELS if set(e for (k, _), e in zip(keys, ends) if k == n) != {"done"}}
    section = (ROOT / "paper" / "sections" / "renorm_ramp.tex").read_text()
    paragraph = section[section.index("\\paragraph{Results.}") : section.index("\\begin{table}")]
    assert not problems(paragraph.replace("\\renormRampUnfinished{}", text)), text


def test_macros_cover_the_section_and_each_batch_size():
    table = synthetic(sizes=(2, 4))
    cells = report.comparisons(table, ["ioffe", "fixed"], [2, 4], 0.95, BONFERRONI)
    descriptions = {design.GRID: design.describe({}, GRID_RAMP), "ioffe": design.describe(IOFFE, GRID_RAMP),
                    "fixed": design.describe(FIXED, GRID_RAMP)}  # fmt: skip
    m = report.macros(cells, [0, 1, 2, 3], [2, 4], LABELS, descriptions, {2: 8980, 4: 4480}, 0.95, BONFERRONI, "Ends.")
    assert m["renormRampUnfinished"] == "Ends."
    assert "renormRampUnfinished" not in report.macros(
        cells, [0, 1], [2, 4], LABELS, descriptions, {2: 1, 4: 1}, 0.95, BONFERRONI
    )
    assert m["renormRampFamily"] == "10" and m["renormRampConfidence"] == "99.50\\%"
    assert m["renormRampSeeds"] == "0, 1, 2 and 3" and m["renormRampBatchSizes"] == "2 and 4"
    assert m["renormRampAtBatches"] == "at batches 2 and 4"  # the protocol's "For seeds ... at batches 2 and 4"
    protocol = (ROOT / "paper" / "sections" / "renorm_ramp.tex").read_text()
    assert "\\renormRampSeeds{} \\renormRampAtBatches{}," in protocol and "at batch \\renormRamp" not in protocol
    assert m["renormRampResults"] == m[report.results_macro(2)] + " " + m[report.results_macro(4)]
    section = (ROOT / "paper" / "sections" / "renorm_ramp.tex").read_text()
    used = set(re.findall(r"\\(renormRamp[A-Za-z]*)", section))
    assert used <= set(m), used - set(m)
    assert not re.search(r"\d", re.sub(r"\\[A-Za-z]+|\{[^}]*\}|sec:[a-z-]+|tab:[a-z-]+", "", section)), (
        "a number typed into the section"
    )
    header, rows, align, comment = report.latex_table(
        cells, {design.GRID: "grid", "ioffe": "ioffe", "fixed": "fixed"},
        {(s, b): (1.0, 0.0) for s in (design.GRID, "ioffe", "fixed") for b in (2, 4)}, BONFERRONI,
    )  # fmt: skip
    assert (
        comment
        == "paired by seed, percentage points; Bonferroni-adjusted over the 10 comparisons; seeds: on the mean's side"
    )
    assert len(rows) == 6 and len(header) == len(align) and all(len(r) == len(header) for r in rows)
    assert rows[0][1] == "grid" and rows[0][-3:] == ["", "", ""]  # the grid's schedule is no variant of itself


# ---- config check and cost ------------------------------------------------------------------------


def config(**section):
    s = {"batch_sizes": [2, 4], "seeds": [0, 1], "schedules": [IOFFE, FIXED]} | section
    return {"normalisers": ["none", "batchnorm", "batchrenorm"], "batchrenorm": dict(GRID_RAMP),
            "grid": {"batch_sizes": [2, 4, 64], "seeds": [0, 1, 2]}, "renorm_ramp": s}  # fmt: skip


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(batch_sizes=[2, 8]), r"renorm_ramp.batch_sizes: \[8\] not in grid.batch_sizes"),
        (dict(seeds=[0, 5]), r"renorm_ramp.seeds: \[5\] not in grid.seeds"),
        (dict(schedules=[IOFFE, IOFFE]), "'ioffe' is taken"),
        (dict(schedules=[{"name": "grid", "label": "x", "rmax": 2.0}]), "'grid' is taken"),
        (
            dict(schedules=[{"name": "a", "label": "x", "steps": "absolute", "warmup": 5}]),
            "without rmax_full, dmax_full",
        ),
        (dict(schedules=[{"name": "a", "label": "x", "warmup": 0.05}]), "a is the grid's own schedule"),
    ],
)
def test_config_check_refuses_what_the_study_cannot_pair_or_name(change, message):
    checks.check(config(), None)
    with pytest.raises(ConfigError, match=message) as e:
        checks.check(config(**change), None)
    assert "\n" not in str(e.value) and str(e.value).startswith("config error: renorm_ramp")
    c = config()
    c["normalisers"] = ["batchnorm"]
    with pytest.raises(ConfigError, match="batchrenorm"):
        checks.check(c, None)


def test_cost_grows_with_the_schedules_the_seeds_and_the_steps():
    import yaml

    paper = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    work = cost.WORK["train_renorm_ramp"].function

    def job(b, schedules=2, seeds=(0, 1)):
        p = {"seeds": list(seeds), "schedules": [{}] * schedules,
             "recipe": {"batch_size": b, "epochs": 20, "last_batch": "drop"}}  # fmt: skip
        return work(p, {"batch_size": str(b)}, paper)

    assert job(2, schedules=4) == pytest.approx(2 * job(2))
    assert job(2, seeds=(0, 1, 2, 3)) == pytest.approx(2 * job(2))
    assert job(2) > job(4)  # more steps at the smaller batch
    assert cost.UNMEASURED == {f"train_renorm_ramp:{f}" for f in ("mlp", "conv")}


@pytest.mark.parametrize("adjustment", list(FAMILY))
@pytest.mark.parametrize("by_batchnorm, by_grid", CASES[::7], ids=lambda v: "-".join(v))
def test_the_abstract_sentence_keeps_or_names_the_changed_verdicts(by_batchnorm, by_grid, adjustment):
    cells = cells_for(2, by_batchnorm, by_grid)
    text = report.abstract_sentence(cells, 2, LABELS, FAMILY[adjustment])
    assert not faults(f"{text}."), text
    assert text.startswith("Under two other schedules of its limits, batch renormalisation's difference")
    changed = report.sensitivity(cells, 2)["changed"]
    assert ("keeps the grid schedule's verdict" in text) == (not changed)
    assert all(LABELS[v] in text for v in changed)
    tag = {"bonferroni": "(adjusted)", "unadjusted": "(unadjusted)"}[adjustment]  # the verdict named as the family's
    assert text.count(tag) == 1 and text.count("adjusted") == 1, text
    window = in_place("abstract.tex", "renormRampAbstractSentence", text)[-1]  # in its place (after \\ifdefined)
    assert f"{text}.\\fi" in window and not faults(window), window


FAMILY_SENTENCE = {
    "bonferroni": "The intervals are Bonferroni-adjusted over the 10 comparisons, so that all of them hold together "
    "at 95\\%",
    "unadjusted": "The intervals are unadjusted (exploratory): each holds at 95\\% on its own, and the 10 do not hold "
    "together at 95\\%",
}


@pytest.mark.parametrize("adjustment", list(FAMILY))
def test_the_protocol_caption_table_and_summary_name_the_familys_adjustment(adjustment):
    """Under the family declared with Bonferroni and with none: the intervals' level, the generated sentence
    on the family, the Protocol paragraph and the table's caption with the study's and the family's macros
    (bnstudy.paper.families.macros) in place, the table's comment and the summary's record of the family,
    each in the family's words; "hold together" said only where the family is adjusted."""
    family = FAMILY[adjustment]
    cells = report.comparisons(synthetic(), ["ioffe", "fixed"], [2, 4], 0.95, family)
    level = {"bonferroni": 1 - 0.05 / 10, "unadjusted": 0.95}[adjustment]
    assert list(cells["confidence"]) == pytest.approx([level] * 10, abs=1e-15)
    descriptions = {design.GRID: "g", "ioffe": "i", "fixed": "f"}
    m = report.macros(cells, [0, 1, 2, 3], [2, 4], LABELS, descriptions, {2: 8980, 4: 4480}, 0.95, family)
    assert m["renormRampFamilySentence"] == FAMILY_SENTENCE[adjustment]
    assert m["renormRampConfidence"] == {"bonferroni": "99.50\\%", "unadjusted": "95.00\\%"}[adjustment]
    summary = report.summary_json(cells, [0, 1, 2, 3], [2, 4], [IOFFE, FIXED], 0.95, family)
    record = {"adjustment": adjustment, "members": 10, "confidence": 0.95, "level": pytest.approx(level, abs=1e-15),
              "smallest_effect": 0.01}  # fmt: skip
    assert summary["families"] == {"renorm_ramp": record}
    checked = paper_families.check(
        {"renorm_ramp": {"compares": family.compares, "over": family.over, "adjustment": adjustment,
                         "smallest_effect": 0.01}},
        {"renorm_ramp": "renorm_ramp"}, {"renorm_ramp": summary},
    )  # fmt: skip
    fm = paper_families.macros(checked)
    _, _, _, comment = report.latex_table(
        cells, {design.GRID: "grid", "ioffe": "ioffe", "fixed": "fixed"},
        {(s, b): (1.0, 0.0) for s in (design.GRID, "ioffe", "fixed") for b in (2, 4)}, family,
    )  # fmt: skip
    named = {"bonferroni": "Bonferroni-adjusted over the 10 comparisons", "unadjusted": "unadjusted (exploratory)"}
    assert comment == f"paired by seed, percentage points; {named[adjustment]}; seeds: on the mean's side"
    section = (ROOT / "paper" / "sections" / "renorm_ramp.tex").read_text()
    protocol = section[section.index("The family is") : section.index("\\paragraph{Results.}")]  # its intervals
    caption = section[section.index("\\caption{") : section.index("; seeds:")]  # up to the column's name
    for part in (protocol, caption):
        text = render(part, m | fm)
        assert not re.search(r"\\(renormRamp|familyRenormRamp)[A-Za-z]*", text), text
        assert not problems(text), text
        assert ("adjusted" in text.replace("unadjusted", "")) == (adjustment == "bonferroni"), text
        assert ("unadjusted" in text) == (adjustment == "unadjusted"), text
    text = render(protocol, m | fm)
    assert ("so that all of them hold together" in text) == (adjustment == "bonferroni"), text
    assert ("do not hold together" in text) == (adjustment == "unadjusted"), text
