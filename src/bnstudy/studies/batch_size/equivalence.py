"""Whether a control "does as well as" no normaliser: two one-sided tests against a declared margin.

An interval of a paired difference that contains zero says that the seeds cannot tell two
normalisers apart, not that they score alike. A claim that a normaliser without batch statistics
(layer, group or RMS normalisation) does as well as no normaliser is tested as an equivalence:
two one-sided paired t tests (Schuirmann's TOST), each rejecting a difference of at least
``margin`` in its direction at level ``alpha``; the two reject together exactly when the
``1 - 2 alpha`` paired t interval lies inside ``(-margin, +margin)``. The tests are members of the
config's family ``normalisers`` (:mod:`bnstudy.evaluation.families`), as batch normalisation minus
none is, one per batch size of a control: the margin is the family's ``smallest_effect``, declared
before the build, and ``alpha = 1 - level``, the family's level (Bonferroni: ``(1 - confidence) /
m``; declared without adjustment: ``1 - confidence``).
"""

from __future__ import annotations

import pandas as pd

from bnstudy.evaluation.families import Family, within
from bnstudy.evaluation.paired import paired_interval
from bnstudy.paper import latex
from bnstudy.paper.latex import points, words
from bnstudy.studies.batch_size.design import CONTROLS


def tost_alpha(family: Family, confidence: float, members: int) -> float:
    """Each one-sided test's level: ``1 - family.level(confidence, members)``, written as ``(1 -
    confidence) / members`` where the family is adjusted (the same number, without the rounding of
    subtracting the level from one)."""
    family.level(confidence, members)  # a family has one member or more
    return (1 - confidence) / (members if family.adjusted else 1)


def equivalence_rows(runs: pd.DataFrame, confidence: float, family: Family) -> pd.DataFrame:
    """Per control of the grid and batch size: the paired mean of control minus none (inference mode,
    seed by seed), the ``1 - 2 alpha`` interval of the TOST and whether it lies inside the margin
    (``family``: the declared family ``normalisers``, its smallest effect the margin; a grid with a
    control and no margin declared is an error, refused by the config check before the build)."""
    margin = family.smallest_effect
    inference = runs[runs["mode"] == "inference"]
    acc = inference.set_index(["normaliser", "batch_size", "seed"])["accuracy"]
    rows = []
    for control in CONTROLS:
        sizes = sorted(int(b) for b in inference.loc[inference.normaliser == control, "batch_size"].unique())
        if sizes and margin is None:
            raise ValueError(
                f"families.{family.name}.smallest_effect: none declared, no margin to test {control} against"
            )
        alpha = tost_alpha(family, confidence, len(sizes)) if sizes else float("nan")
        for b in sizes:
            seeds = sorted(
                int(s)
                for s in inference.loc[(inference.normaliser == control) & (inference.batch_size == b), "seed"]
                if (("none", b, int(s)) in acc.index)
            )
            if len(seeds) < 2:
                continue
            pi = paired_interval([acc[(control, b, s)] for s in seeds], [acc[("none", b, s)] for s in seeds],
                                 1 - 2 * alpha)  # fmt: skip
            equivalent = within(pi["ci_low"], pi["ci_high"], margin)
            rows.append({"normaliser": control, "batch_size": b, "seeds": len(seeds), "gain": pi["gain"],
                         "alpha": alpha, "tost_low": pi["ci_low"], "tost_high": pi["ci_high"],
                         "margin": margin, "equivalent": bool(equivalent)})  # fmt: skip
    columns = ["normaliser", "batch_size", "seeds", "gain", "alpha", "tost_low", "tost_high", "margin", "equivalent"]
    return pd.DataFrame(rows, columns=columns)


def where_equivalent(rows: pd.DataFrame, name: str) -> str:
    """Where one control is shown equivalent to no normaliser: ``at every batch size``, ``only at
    batches 16 and 64, not at 2 and 4``, ``at no batch size``."""
    g = rows[rows.normaliser == name].sort_values("batch_size")
    yes = [int(b) for b in g.batch_size[g.equivalent]]
    no = [int(b) for b in g.batch_size[~g.equivalent]]
    if not no:
        return "at every batch size"
    if not yes:
        return "at no batch size"
    return f"only {latex.at_batches([str(b) for b in yes])}, not at {words([str(b) for b in no])}"


def control_sentence(rows: pd.DataFrame, name: str, margin: bool = True) -> str:
    """One control's verdict: ``group normalisation is equivalent to no normaliser within $\\pm1.0$
    points at every batch size`` (``is shown equivalent ... at no batch size``); without the margin's
    words where the text states it."""
    g = rows[rows.normaliser == name]
    where = where_equivalent(rows, name)
    within = f" within $\\pm{points(float(g.margin.iloc[0]), 1)}$ points" if margin else ""
    verb = "is shown equivalent" if where == "at no batch size" else "is equivalent"
    return f"{CONTROLS[name]} {verb} to no normaliser{within} {where}"


def control_names(names: list[str]) -> str:
    """``layer normalisation``; ``layer and RMS normalisation``; ``layer, group and RMS normalisation``."""
    stems = [CONTROLS[n].removesuffix(" normalisation") for n in names]
    return f"{words(stems)} normalisation"


def protocol(rows: pd.DataFrame, confidence: float, family: Family) -> str:
    """How the verdicts were reached, for the sentence's parenthesis: ``... each at level 5\\%/6,
    Bonferroni-adjusted over the 6 batch sizes`` or ``... each at level 5\\%, unadjusted and
    exploratory`` (``family``: the declared family the tests are members of)."""
    m = int(rows.groupby("normaliser").batch_size.nunique().max())
    alpha = latex.fmt(1 - confidence, 0, percent=True)
    level = f"{alpha}/{m}" if family.adjusted else alpha
    how = family.phrase(m) if family.adjusted else f"{family.tag} and exploratory"  # inside parentheses: no second pair
    return f"two one-sided paired $t$ tests against the margin declared before the build, each at level {level}, {how}"


def macros(rows: pd.DataFrame, confidence: float, family: Family) -> dict[str, str]:
    """``controlsEquivalence``: every control's verdict in one sentence; ``groupnormDiscussion``: group
    normalisation's alone (the discussion's); none where the grid has no control."""
    if rows.empty:
        return {}
    names = [n for n in CONTROLS if n in set(rows.normaliser)]
    groups: dict[str, list[str]] = {}  # the controls of one verdict named together, each verdict once
    for n in names:
        groups.setdefault(where_equivalent(rows, n), []).append(n)
    (where, first), *rest = groups.items()
    if len(first) == 1:
        head = control_sentence(rows, first[0], margin=False)
    else:
        verb = "are each shown equivalent" if where == "at no batch size" else "are each equivalent"
        head = f"{control_names(first)} {verb} to no normaliser {where}"
    text = "; ".join([head] + [f"{control_names(group)} {w}" for w, group in rest])
    m = {
        "controlsEquivalence": f"{text} ({protocol(rows, confidence, family)})",
        "equivalenceMargin": points(float(rows.margin.iloc[0]), 1),
    }
    if "groupnorm" in names:
        m["groupnormDiscussion"] = discussion_sentence(rows, confidence, family)
    return m


def discussion_sentence(rows: pd.DataFrame, confidence: float, family: Family) -> str:
    """What the test says of group normalisation's merit on this task, for the discussion: that it
    neither helps nor hurts by the margin only where it is equivalent at every batch size."""
    g = rows[rows.normaliser == "groupnorm"]
    text = f"On our task {control_sentence(rows, 'groupnorm')} ({protocol(rows, confidence, family)})"
    if g.equivalent.all():
        return f"{text}, so here it neither helps nor hurts by as much as the margin"
    if not g.equivalent.any():
        return f"{text}: our seeds cannot say that it does no harm here, nor that it helps"
    return f"{text}: where it is not, our seeds cannot say that it does no harm"
