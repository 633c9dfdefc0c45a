"""Whether a control "does as well as" no normaliser: two one-sided tests against a declared margin.

An interval of a paired difference that contains zero says that the seeds cannot tell two
normalisers apart, not that they score alike. A claim that a normaliser without batch statistics
(layer, group or RMS normalisation) does as well as no normaliser is tested as an equivalence:
two one-sided paired t tests (Schuirmann's TOST), each rejecting a difference of at least
``margin`` (the config's ``batch_size_eval.equivalence_margin``, declared before the build) in its
direction at level ``alpha``; the two reject together exactly when the ``1 - 2 alpha`` paired t
interval lies inside ``(-margin, +margin)``. Each control's batch sizes are one family, as the
headline comparisons' are: ``alpha = (1 - confidence) / family`` (Bonferroni).
"""

from __future__ import annotations

import pandas as pd

from bnstudy.evaluation.paired import paired_interval
from bnstudy.paper import latex
from bnstudy.paper.latex import points, words

CONTROLS = {"layernorm": "layer normalisation", "groupnorm": "group normalisation", "rmsnorm": "RMS normalisation"}


def equivalence_rows(runs: pd.DataFrame, confidence: float, margin: float) -> pd.DataFrame:
    """Per control of the grid and batch size: the paired mean of control minus none (inference mode,
    seed by seed), the ``1 - 2 alpha`` interval of the TOST and whether it lies inside the margin."""
    inference = runs[runs["mode"] == "inference"]
    acc = inference.set_index(["normaliser", "batch_size", "seed"])["accuracy"]
    rows = []
    for control in CONTROLS:
        sizes = sorted(int(b) for b in inference.loc[inference.normaliser == control, "batch_size"].unique())
        alpha = (1 - confidence) / len(sizes) if sizes else float("nan")
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
            equivalent = -margin < pi["ci_low"] and pi["ci_high"] < margin
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


def protocol(rows: pd.DataFrame, confidence: float) -> str:
    """How the verdicts were reached, for the sentence's parenthesis."""
    family = int(rows.groupby("normaliser").batch_size.nunique().max())
    alpha = latex.fmt(1 - confidence, 0, percent=True)
    return (
        f"two one-sided paired $t$ tests against the margin declared before the build, each at level "
        f"{alpha}/{family}, Bonferroni over the {family} batch sizes"
    )


def macros(rows: pd.DataFrame, confidence: float) -> dict[str, str]:
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
        "controlsEquivalence": f"{text} ({protocol(rows, confidence)})",
        "equivalenceMargin": points(float(rows.margin.iloc[0]), 1),
    }
    if "groupnorm" in names:
        m["groupnormDiscussion"] = discussion_sentence(rows, confidence)
    return m


def discussion_sentence(rows: pd.DataFrame, confidence: float) -> str:
    """What the test says of group normalisation's merit on this task, for the discussion: that it
    neither helps nor hurts by the margin only where it is equivalent at every batch size."""
    g = rows[rows.normaliser == "groupnorm"]
    text = f"On our task {control_sentence(rows, 'groupnorm')} ({protocol(rows, confidence)})"
    if g.equivalent.all():
        return f"{text}, so here it neither helps nor hurts by as much as the margin"
    if not g.equivalent.any():
        return f"{text}: our seeds cannot say that it does no harm here, nor that it helps"
    return f"{text}: where it is not, our seeds cannot say that it does no harm"
