"""The equal-steps study (bnstudy.studies.equal_steps): an arm is the grid's training run with another
batch size's steps, its comparisons are oriented as named, and every variant of its sentences reads."""

from __future__ import annotations

import itertools
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bnstudy.base.config import ConfigError
from bnstudy.evaluation.families import declared
from bnstudy.nets import model, train
from bnstudy.nets.recipe import Recipe
from bnstudy.studies.equal_steps import checks, cost, design, report, science
from test_lr_sweep import ADJUSTMENTS, FAMILIES, declared_families
from test_sentences import problems

FAMILY = declared(FAMILIES, "equal_steps")  # as the test config declares it: unadjusted

ROOT = Path(__file__).resolve().parents[2]
WIDTHS = (6, 8, 8, 3)


def data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, WIDTHS[0])).astype(np.float32)
    y = np.arange(n) % WIDTHS[-1]
    return x, y


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


# ---- science: the arms are the grid's runs ---------------------------------------------------------


@pytest.mark.parametrize("normaliser", design.NORMALISERS)
@pytest.mark.parametrize("schedule", ["constant", "linear"])
def test_an_arm_with_its_own_batch_sizes_steps_is_its_grid_network_bit_for_bit(normaliser, schedule):
    x, y = data()
    spec = model.NetSpec(normaliser, WIDTHS, groups=1)
    recipe = Recipe(batch_size=4, epochs=3, lr=1e-2, lr_schedule=schedule)
    grid, _ = train.train_models(spec, recipe, [0, 3], x, y)
    # the arm takes the other side's rate: its own recipe gives only the batch size
    arm = science.train_arm(spec, replace(recipe, lr=0.5, optimizer="sgd"), recipe, [0, 3], x, y)
    assert same(arm, grid)


@pytest.mark.parametrize("normaliser", design.NORMALISERS)
def test_the_smaller_batch_for_fewer_steps_is_its_grid_network_stopped_early(normaliser):
    # batch 4 on 40 rows: 10 steps an epoch; batch 8 for 4 epochs: 5 x 4 = 20 steps = 2 epochs of batch 4
    x, y = data()
    spec = model.NetSpec(normaliser, WIDTHS, groups=1)
    own, other = Recipe(batch_size=4, epochs=6, lr=1e-2), Recipe(batch_size=8, epochs=4, lr=1e-2)
    stopped, _ = train.train_models(spec, Recipe(batch_size=4, epochs=2, lr=1e-2), [1], x, y)
    assert same(science.train_arm(spec, own, other, [1], x, y), stopped)
    longer, _ = train.train_models(spec, own, [1], x, y)
    assert not same(science.train_arm(spec, own, other, [1], x, y), longer)  # the steps do count


def test_run_rows_continue_the_grids_batch_order_over_epochs():
    _, y = data(n=42)
    rows = science.run_rows(y, 5, 4, 25)  # 10 batches an epoch (2 rows dropped), 2.5 epochs
    assert rows.dtype == np.int64 and len(rows) == 100
    assert np.array_equal(science.run_rows(y, 5, 4, 7), rows[:28])  # fewer steps: a prefix
    for epoch in (rows[:40], rows[40:80]):
        assert len(set(epoch.tolist())) == 40  # each epoch draws rows without repeats
    assert not np.array_equal(rows[:40], rows[40:80])  # and each epoch in its own order
    assert not np.array_equal(science.run_rows(y, 6, 4, 25), rows)  # and each seed its own


def test_another_normaliser_or_leftover_rows_are_refused():
    x, y = data()
    with pytest.raises(ValueError, match="equal-steps arms train"):
        science.train_arm(
            model.NetSpec("layernorm", WIDTHS, groups=1), Recipe(batch_size=4), Recipe(batch_size=8), [0], x, y
        )
    with pytest.raises(ValueError, match="leftover rows dropped"):
        spec = model.NetSpec("none", WIDTHS, groups=1)
        science.train_arm(spec, Recipe(batch_size=4, last_batch="keep"), Recipe(batch_size=8), [0], x, y)


def test_design_arms_and_steps():
    assert design.arm_batches("smallest", [16, 2, 64]) == (2, 64)
    assert design.arm_batches("largest", [16, 2, 64]) == (64, 2)
    assert design.arm_of(64, [2, 64]) == "largest"
    assert design.grid_steps(898, 2, 20) == 8980 and design.grid_steps(898, 64, 20) == 280
    with pytest.raises(ValueError):
        design.arm_batches("middle", [2, 64])


# ---- report: the comparisons are the differences they name -----------------------------------------


def per_seed_table(acc: dict, seeds=(0, 1, 2)) -> pd.DataFrame:
    """``acc[(source, normaliser, batch)]``: a function of the seed."""
    return pd.DataFrame(
        [{"source": s, "normaliser": n, "batch_size": b, "seed": seed, "accuracy": f(seed)}
         for (s, n, b), f in acc.items() for seed in seeds]
    )  # fmt: skip


def accuracies(rng):
    acc = {}
    for source, n, b in itertools.product((report.GRID, report.ARM), design.NORMALISERS, (2, 64)):
        values = rng.uniform(0.5, 0.95, 3)
        acc[(source, n, b)] = lambda seed, v=values: float(v[seed])
    return acc


@pytest.mark.parametrize("seed", range(5))
def test_the_batch_and_step_comparisons_add_up_to_the_grids_difference(seed):
    """At the smallest batch's arm, (grid gap at 2 - arm gap at 2) + (arm gap at 2 - grid gap at 64) is the
    grid's gap at 2 minus at 64: the step and the batch comparison, oriented as named, decompose it; at
    the largest's, likewise through the arm at 64."""
    acc = accuracies(np.random.default_rng(seed))
    table = per_seed_table(acc)
    steps = {2: 8980, 64: 280}
    cells = report.comparisons(table, ["smallest", "largest"], [2, 64], steps, 0.95, FAMILY).set_index(["arm", "key"])

    def gap(source, b):
        return np.mean([acc[(source, "batchnorm", b)](s) - acc[(source, "none", b)](s) for s in range(3)])

    grid_change = gap(report.GRID, 2) - gap(report.GRID, 64)
    for arm in ("smallest", "largest"):
        total = cells.loc[(arm, "batch"), "gain"] + cells.loc[(arm, "steps"), "gain"]
        assert total == pytest.approx(grid_change, abs=1e-12), arm
    assert cells.loc[("smallest", "gap"), "gain"] == pytest.approx(gap(report.ARM, 2), abs=1e-12)
    assert cells.loc[("largest", "gap_other"), "gain"] == pytest.approx(gap(report.GRID, 2), abs=1e-12)
    # the smallest arm takes batch 64's 280 steps: its step comparison is batch 2's grid minus the arm
    assert cells.loc[("smallest", "steps"), "gain"] == pytest.approx(gap(report.GRID, 2) - gap(report.ARM, 2))
    assert (cells["ci_low"] >= -2).all() and (cells["ci_high"] <= 2).all()
    one = cells.loc[[k for k in cells.index if k[1] in ("gap", "gap_other", "batch_none", "batch_batchnorm")]]
    assert (one["ci_low"] >= -1).all() and (one["ci_high"] <= 1).all()


@pytest.mark.parametrize("adjustment", ADJUSTMENTS)
@pytest.mark.parametrize("arms", [["smallest"], ["smallest", "largest"]], ids="-".join)
def test_every_interval_is_at_the_level_the_family_declares_and_said_so(adjustment, arms):
    """Each comparison's interval at the level of the family ``equal_steps``, its members the arms run
    (Bonferroni over them, or unadjusted), and the summary, the table's comment and the abstract
    sentence say which."""
    from bnstudy.evaluation.paired import paired_interval

    family = declared(declared_families(adjustment), "equal_steps")
    acc = accuracies(np.random.default_rng(7))
    table = per_seed_table(acc)
    cells = report.comparisons(table, arms, [2, 64], {2: 8980, 64: 280}, 0.95, family).set_index(["arm", "key"])
    level = 1 - 0.05 / len(arms) if adjustment == "bonferroni" else 0.95
    bn, none = ([acc[(report.ARM, n, 2)](s) for s in range(3)] for n in ("batchnorm", "none"))
    want = paired_interval(bn, none, level)  # the smallest arm's gap: batch norm minus none at batch 2
    got = cells.loc[("smallest", "gap")]
    assert (got.ci_low, got.ci_high) == pytest.approx((want["ci_low"], want["ci_high"]), abs=1e-12)
    if len(arms) == 2 and adjustment == "bonferroni":  # wider than the unadjusted interval
        plain = paired_interval(bn, none, 0.95)
        assert got.ci_low < plain["ci_low"] and plain["ci_high"] < got.ci_high
    summary = report.summary_json(cells.reset_index(), [0, 1, 2], [2, 64], 0.95, family, arms)
    assert summary["families"] == {"equal_steps": family.record(0.95, len(arms))}
    assert summary["families"]["equal_steps"]["level"] == level
    phrase = {
        "bonferroni": f"Bonferroni-adjusted over the {len(arms)} batch sizes"
        if len(arms) > 1
        else "Bonferroni-adjusted over its 1 batch size, so at the unadjusted level",
        "unadjusted": "unadjusted (exploratory)",
    }
    assert summary["intervals"].endswith(", " + phrase[adjustment])
    _, _, _, comment = report.latex_table(cells.reset_index(), report.intervals(family, arms))
    assert comment.endswith(phrase[adjustment])
    text = report.macros(cells.reset_index(), [0, 1, 2], [2, 64], family)["equalStepsAbstractSentence"]
    assert f" (3 seeds, {family.tag}): " in text and not problems(text)


def test_a_seed_missing_on_either_side_is_an_error():
    arms = pd.DataFrame([{"normaliser": "none", "batch_size": 2, "seed": 0, "accuracy": 0.5}])
    grid = pd.DataFrame([{"normaliser": "none", "batch_size": 2, "seed": 0, "mode": "inference", "accuracy": 0.5}])
    assert len(report.per_seed(arms, grid, [0])) == 2
    with pytest.raises(ValueError, match="seeds"):
        report.per_seed(arms, grid, [0, 1])


# ---- the sentences: every variant --------------------------------------------------------------------

SIDES = {"below": (-0.03, -0.05, -0.01), "above": (0.03, 0.01, 0.05), "zero": (0.01, -0.02, 0.04),
         "alike": (0.0, 0.0, 0.0)}  # fmt: skip


def rows_for(arm: str, sides: dict) -> dict:
    b, o = design.arm_batches(arm, [2, 64])
    steps = {2: 8980, 64: 280}
    out = {}
    for key in report.KEYS:
        gain, lo, hi = SIDES[sides.get(key, "zero")]
        out[key] = {"arm": arm, "key": key, "batch_size": b, "other": o, "steps": steps[o], "own_steps": steps[b],
                    "seeds": 3, "gain": gain, "sd": 0.01, "ci_low": lo, "ci_high": hi}  # fmt: skip
    return out


CASES = [
    (arm, dict(zip(("gap", "gap_other", "batch", "steps"), sides, strict=True)))
    for arm in design.ARMS
    for sides in itertools.product(SIDES, repeat=4)
]


@pytest.mark.parametrize("arm, sides", CASES, ids=lambda v: v if isinstance(v, str) else "-".join(v.values()))
def test_arm_sentence_every_variant_reads_and_claims_only_what_its_intervals_show(arm, sides):
    text = report.arm_sentence(rows_for(arm, sides))
    assert not problems(text), text
    section = (ROOT / "paper" / "sections" / "equal_steps.tex").read_text()
    macro = report.results_macro(arm)
    assert f"\\{macro}" in section
    paragraph = section[section.index("\\paragraph{Results.}") : section.index("\\begin{table}")]
    used = f"\\{macro}{{}} \\fi"  # the sentence, then one space, where the config runs the arm
    assert used in paragraph
    assert not problems(paragraph.replace(used, text + " \\fi")), text
    for key in ("batch", "steps"):
        side = report.side(*SIDES[sides[key]][1:])
        assert report.READING[key][side] in text
        other = {"below": "lower", "above": "raise"}
        for s, verb in other.items():  # a direction only where the interval is clear of zero on that side
            said = re.search(rf"(smaller batch|more steps) {verb}s? batch norm", report.READING[key][side])
            assert (said is not None) == (side == s)
    assert "alike" not in text.replace("every seed alike", "")


@pytest.mark.parametrize("gaps", ["below", "zero"])
@pytest.mark.parametrize("sides", list(itertools.product(("below", "above", "zero"), repeat=4)), ids="-".join)
def test_the_results_paragraph_states_each_reading_once_and_the_zero_note_only_where_a_gap_holds_zero(sides, gaps):
    """Both arms' sentences in one paragraph: a reading the first arm gave is pointed back to by the
    second (``as at 280 steps``, ``as at batch 2``), never repeated; the note that an interval holding
    zero shows no equivalence stands where a gap's interval (a clause without a reading) holds zero."""
    rows = []
    for arm, (batch, steps) in zip(design.ARMS, (sides[:2], sides[2:]), strict=True):
        rows += list(rows_for(arm, {"gap": gaps, "gap_other": "below", "batch": batch, "steps": steps}).values())
    m = report.macros(pd.DataFrame(rows), [0, 1, 2], [2, 64], FAMILY)
    section = (ROOT / "paper" / "sections" / "equal_steps.tex").read_text()
    paragraph = section[section.index("\\paragraph{Results.}") : section.index("\\begin{table}")]
    paragraph = re.sub(r"\\ifdefined\\(\w+) (.*?)\\fi", lambda f: f.group(2) if f.group(1) in m else "", paragraph)
    paragraph = re.sub(r"\\(\w+)(\{\})?", lambda f: m.get(f.group(1), f.group(0)), paragraph)
    for sentence in re.split(r"(?<=\.)\s+", paragraph):  # each arm's sentence, and the note
        assert not problems(sentence), sentence
    for key, (first, second) in (("batch", (sides[0], sides[2])), ("steps", (sides[1], sides[3]))):
        for side_ in {first, second}:
            assert paragraph.count(report.READING[key][side_]) == 1
        back = {"batch": "as at 280 steps", "steps": "as at batch 2"}[key]
        assert (back in paragraph) == (first == second)
    note = "An interval that holds zero does not show that the two sides score alike."
    assert (note in paragraph) == (gaps == "zero") and m["equalStepsZeroNote"] in ("", note)


@pytest.mark.parametrize("adjustment", ADJUSTMENTS)
@pytest.mark.parametrize("arms", [["smallest"], ["largest"], ["smallest", "largest"]], ids="-".join)
@pytest.mark.parametrize("sides", list(itertools.product(("below", "above", "zero"), repeat=2)), ids="-".join)
def test_the_abstract_sentence_reads_in_every_variant_and_gives_a_direction_only_where_each_interval_does(
    arms, sides, adjustment
):
    rows = []
    for arm, side in zip(arms, sides):  # one side per arm run
        r = rows_for(arm, {"batch": side})
        rows += list(r.values())
    cells = pd.DataFrame(rows)
    family = declared(declared_families(adjustment), "equal_steps")
    text = report.abstract_sentence(cells, family)
    assert not problems(text), text
    abstract = (ROOT / "paper" / "sections" / "abstract.tex").read_text()
    used = "\\equalStepsAbstractSentence."
    assert used in abstract and not problems(text + ".")
    run = sides[: len(arms)]
    tag = f" (3 seeds, {family.tag})"  # the seeds the intervals are over, beside the family's tag
    assert len(re.findall(r"\d steps", text.split(tag)[0])) == len(arms) and tag in text
    if len(set(run)) == 1:
        assert text.endswith(report.ABSTRACT_READING[run[0]])
    else:
        assert not any(reading in text for reading in report.ABSTRACT_READING.values())
        assert ("lies below zero at" in text) == ("below" in run) and ("lies above zero at" in text) == ("above" in run)
        assert ("contains zero at" in text) == ("zero" in run)


def test_macros_define_a_sentence_for_each_arm_run_and_only_those():
    acc = accuracies(np.random.default_rng(0))
    table = per_seed_table(acc)
    for arms in (["smallest"], ["largest"], ["smallest", "largest"]):
        cells = report.comparisons(table, arms, [2, 64], {2: 8980, 64: 280}, 0.95, FAMILY)
        m = report.macros(cells, [0, 1, 2], [2, 64], FAMILY)
        assert {k for k in m if k.endswith("Results")} == {report.results_macro(a) for a in arms}
        assert m["equalStepsSeeds"] == "0, 1 and 2" and m["equalStepsSmallest"] == "2"
        header, rows, align, _ = report.latex_table(cells, report.intervals(FAMILY, arms))
        assert len(rows) == len(arms) * len(report.KEYS) and len(header) == len(align)


# ---- config check and cost ------------------------------------------------------------------------


def config(**grid):
    g = {"batch_sizes": [2, 64], "seeds": [0, 1, 2], "last_batch": "drop"} | grid
    return {"normalisers": ["none", "batchnorm"], "grid": g, "equal_steps": {"seeds": [0, 1], "arms": ["smallest"]}}


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(batch_sizes=[16]), "one batch size"),
        (dict(last_batch="keep"), "leftover rows"),
        (dict(seeds=[0, 2]), r"\[1\] not in grid.seeds"),
    ],
)
def test_config_check_refuses_what_the_arms_cannot_pair(change, message):
    checks.check(config(), None)
    with pytest.raises(ConfigError, match=message):
        checks.check(config(**change), None)
    c = config()
    c["normalisers"] = ["batchnorm"]
    with pytest.raises(ConfigError, match="none"):
        checks.check(c, None)


def test_cost_grows_with_the_other_batch_sizes_steps_and_the_seeds():
    import yaml

    paper = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    work = cost.WORK["train_equal_steps"].function

    def job(own, other, seeds=(0, 1)):
        p = {"seeds": list(seeds), "recipe": {"batch_size": own, "epochs": 20},
             "other": {"batch_size": other, "epochs": 20}}  # fmt: skip
        return work(p, {"normaliser": "none", "batch_size": str(own)}, paper)

    assert job(64, 2) > 20 * job(2, 64)  # batch 64 for 8,980 steps against batch 2 for 280
    assert job(64, 2, seeds=(0, 1, 2, 3)) == pytest.approx(2 * job(64, 2))
    assert cost.UNMEASURED == {f"train_equal_steps:{f}" for f in ("mlp", "conv")}
