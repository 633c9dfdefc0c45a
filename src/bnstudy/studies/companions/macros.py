"""Study 1's macros: the numbers the companions section quotes, as LaTeX macros.

:func:`macros` and the other ``*_macros`` functions turn the summary's tables
(:mod:`bnstudy.studies.companions.summary`: the first dependence network, the dependence networks
and the grid over seeds) into macro values; the per-size ones are also quoted at the smallest and
largest probe size (:func:`end_macros`), so that the prose names no size.
"""

from __future__ import annotations

import math

import pandas as pd

from bnstudy.base import stats
from bnstudy.base.normalisers import BATCH_NAMES as BATCH_KINDS
from bnstudy.paper import latex
from bnstudy.paper.latex import words
from bnstudy.studies.companions import driven
from bnstudy.studies.companions import estimates as companions
from bnstudy.studies.companions.estimates import MEASURES
from bnstudy.studies.companions.formats import interval_text, pct_text, value_and_interval
from bnstudy.studies.companions.published import crossed_interval, published_ratio_macros


def exact_pool_macro(params) -> dict:
    """``compExactPool``: the exact design's sample of companions, where the config draws one (the
    sections test ``\\ifdefined\\compExactPool``); nothing where it pairs every test row."""
    n = params.get("exact_companions")
    return {} if n is None else {"compExactPool": latex.fmt(int(n))}


def grid_batches_macro(params) -> dict:
    """``compGridBatches``: the batches per example and size of the grid's networks, where the config
    probes them with the first of the drawn ones only (the sections test ``\\ifdefined\\compGridBatches``);
    nothing where they get every batch."""
    n = params.get("grid_batches_per_example")
    return {} if n is None else {"compGridBatches": latex.fmt(int(n))}


def exact_label(params) -> str:
    """The exact design's row label in the tables."""
    n = params.get("exact_companions")
    return "every companion" if n is None else f"every one of {latex.fmt(int(n))} sampled"


def setting_macros(probes, dep0, dep_networks, result: dict, published, params) -> dict:
    """The probes' design and the first dependence network's headline numbers."""
    sizes = sorted(int(b) for b in dep0.loc[dep0["design"] == "random", "batch_size"])
    first = dep0.iloc[0]
    classes = int(probes["label"].nunique())
    m = {
        "compExamples": str(int(first["examples"])),
        "compPerClass": str(params["examples_per_class"]),
        "compBatches": str(params["batches_per_example"]),
        "compExactBatches": latex.fmt(int(dep0.loc[dep0["design"] == "exact", "batches_per_example"].iloc[0]))
        if (dep0["design"] == "exact").any()
        else "n/a",
        **exact_pool_macro(params),
        **grid_batches_macro(params),
        "compOneClassSize": str(params["one_class_batch_size"]),
        "compOneClassCompanions": str(params["one_class_batch_size"] - 1),
        "compResamples": latex.fmt(int(params["resamples"])),
        "compConfidence": f"{100 * params['confidence']:g}\\%",
        "compSizeList": ", ".join(str(b) for b in sizes),
        "compInferenceAcc": latex.fmt(result["inference_accuracy"]),
        "compPublishedInferenceAcc": latex.fmt(published["inference_accuracy"]),
        "compOwnFlip": pct_text(result["one_class_same_flip"]),
        "compOtherFlip": pct_text(result["one_class_other_flip"]),
        "compPublishedOneClassFlip": pct_text(1 - published["one_class_same_label_b16"]),
        "compExactFlip": pct_text(result["exact_flip_rate_b2"]) if result["exact_flip_rate_b2"] is not None else "n/a",
        "compClasses": str(classes),
        "compOtherClasses": str(classes - 1),
        "compDepSeed": str(int(first["seed"])),
        "compDepNetworks": str(int(dep_networks["seeds"].max())),
    }
    if "one_class_any_flip" in result:
        m["compAnyFlip"] = pct_text(result["one_class_any_flip"])
        m["compMixtureFlip"] = pct_text(
            companions.mixture_flip_rate(result["one_class_same_flip"], result["one_class_other_flip"], classes)
        )
        m["compOwnShare"] = latex.fmt(1 / classes, 1)
        m["compOtherShare"] = latex.fmt((classes - 1) / classes, 1)
    return m


def size_macros(dep0: pd.DataFrame, dep_networks: pd.DataFrame, sizes: list[int]) -> dict:
    """Per random probe size: the first network's flip rate, accuracy and ever-flipped share with
    their bootstrap intervals, and every measure's mean and interval over the dependence networks."""
    m = {}
    for b in sizes:
        r = dep0[(dep0["design"] == "random") & (dep0["batch_size"] == b)].iloc[0]
        m[latex.macro_name("comp", "flip", "b", b)] = pct_text(r["flip_rate"])
        m[latex.macro_name("comp", "flip", "low", "b", b)] = pct_text(r["flip_rate_ci_low"])
        m[latex.macro_name("comp", "flip", "high", "b", b)] = pct_text(r["flip_rate_ci_high"])
        (
            m[latex.macro_name("comp", "acc", "b", b)],
            m[latex.macro_name("comp", "acc", "ci", "b", b)],
        ) = value_and_interval(
            r["train_mode_accuracy"], r["train_mode_accuracy_ci_low"], r["train_mode_accuracy_ci_high"], False
        )
        (
            m[latex.macro_name("comp", "ever", "b", b)],
            m[latex.macro_name("comp", "ever", "ci", "b", b)],
        ) = value_and_interval(r["ever_flipped"], r["ever_flipped_ci_low"], r["ever_flipped_ci_high"])
        net = dep_networks[(dep_networks["design"] == "random") & (dep_networks["batch_size"] == b)]
        for measure in MEASURES:
            row = net[net["measure"] == measure]
            if len(row):
                row = row.iloc[0]
                (
                    m[latex.macro_name("comp", "net", measure, "b", b)],
                    m[latex.macro_name("comp", "net", measure, "ci", "b", b)],
                ) = value_and_interval(row["mean"], row.ci_low, row.ci_high, measure != "train_mode_accuracy")
    return m


def grid_macros(probes: pd.DataFrame, over_seeds: pd.DataFrame, sizes: list[int]) -> dict:
    """The grid's probes: controls (no batch statistics) must never flip; the batch normalisers'
    lowest and highest mean flip rate over training batch sizes."""
    m = {}
    controls = probes[~probes["normaliser"].isin(BATCH_KINDS)]  # no batch statistics: must never flip
    grid = probes[probes["network"] == "grid"]
    m["compControlNetworks"] = str(len(controls.groupby(["normaliser", "train_batch_size", "seed"])))
    m["compControlProbes"] = latex.fmt(int(controls["batches"].sum()))
    m["compControlFlips"] = latex.count(controls["flips"].sum())  # "none" for zero: "of N probes, none flipped"
    m["compGridNetworks"] = str(len(grid.groupby(["normaliser", "train_batch_size", "seed"])))
    flips = over_seeds[(over_seeds["measure"] == "flip_rate") & (over_seeds["design"] == "random")]
    for norm in ("batchnorm", "batchrenorm"):
        for b in (sizes[0], sizes[-1]):
            cell = flips[(flips["normaliser"] == norm) & (flips["batch_size"] == b)]
            if len(cell):
                m[latex.macro_name("comp", "grid", norm, "min", "b", b)] = pct_text(cell["mean"].min())
                m[latex.macro_name("comp", "grid", norm, "max", "b", b)] = pct_text(cell["mean"].max())
    return m


def macros(probes, dep0, dep_networks, over_seeds, published, params, against=None) -> dict:
    """Every number the section quotes. ``dep0``: the first dependence network's summary rows;
    ``dep_networks``: :func:`over_networks` of all dependence networks; ``against``: the family of
    published comparisons and its members where the config forms it
    (:func:`bnstudy.studies.companions.published.published_ratio_macros`)."""
    result = companions.dependence_json(dep0)
    sizes = sorted(int(b) for b in dep0.loc[dep0["design"] == "random", "batch_size"])
    m = setting_macros(probes, dep0, dep_networks, result, published, params)
    m |= size_macros(dep0, dep_networks, sizes)
    # Exact b = 2 rate against the sampled interval, and the largest gap to the published rates.
    if 2 in sizes and result["exact_flip_rate_b2"] is not None:
        lo, hi = result["2"]["flip_ci"]
        m["compExactInInterval"] = "inside" if lo <= result["exact_flip_rate_b2"] <= hi else "outside"
    m |= published_ratio_macros(probes, published, sizes, params["confidence"], against)
    m |= grid_macros(probes, over_seeds, sizes)
    return m


def driven_macros(dep: pd.DataFrame, sizes) -> dict:
    """``compNetFlipRateDrivenB<size>``: the words that follow the mean flip rate over the dependence
    networks with random companions where one network drives it (every network's rate and the
    median: :func:`bnstudy.studies.companions.driven.driven_clause`); empty where none does."""
    m = {}
    for b in sizes:
        g = dep[(dep["design"] == "random") & (dep["batch_size"] == b)].sort_values("seed")
        m[latex.macro_name("comp net flip_rate driven", "b", b)] = driven.driven_clause(
            g["flip_rate"].tolist(), g["seed"].tolist(), pct_text
        )
    return m


def components_macros(probes: pd.DataFrame, sizes, confidence: float) -> dict:
    """The headline flip rate's variance over networks and over examples (crossed design).

    For the random design at the smallest and the largest probe size, the dependence
    networks' per-example flip rates form a networks x examples table;
    :func:`bnstudy.base.stats.crossed_components` gives the mean with an interval that counts
    both sources (``compNetFlipRateCombinedCi<End>``), each source's standard deviation in points
    (``compSdNetworks<End>``, ``compSdExamples<End>``) and as the text says it, with its unit
    (``compSdNetworksSaid<End>``, ``compSdExamplesSaid<End>``: :func:`sd_words`), and each one's share
    of the mean's variance (``compShareNetworks<End>``...: :func:`share_words`). A component whose
    method-of-moments estimate falls to or below zero is set to zero there; ``compComponentsFloored``
    says which and where (:func:`floored_note`), so that a zero is never read as a measured one."""
    m = {}
    floored: dict[str, list[int]] = {"networks": [], "examples": []}
    for end, b in (("min", sizes[0]), ("max", sizes[-1])):
        c = crossed_interval(probes, "dependence", b, confidence)
        if c is None:
            continue
        name = lambda *parts: latex.macro_name("comp", *parts, end)  # noqa: E731
        m[name("net flip rate combined ci")] = interval_text(c["ci_low"], c["ci_high"])
        m[name("sd networks")] = latex.points(math.sqrt(c["var_network"]))  # the number, as pinned
        m[name("sd examples")] = latex.points(math.sqrt(c["var_example"]))
        m[name("sd networks said")] = sd_words(c["var_network"])  # as the text says it
        m[name("sd examples said")] = sd_words(c["var_example"])
        said = shares_words(
            [c["share_networks"], c["share_examples"], 1 - c["share_networks"] - c["share_examples"]],
            [c["var_network"], c["var_example"], None],
        )
        for part, text in zip(("networks", "examples", "residual"), said, strict=True):
            m[name(f"share {part}")] = text
        m[name("components df")] = latex.fmt(c["df"], 0)
        for who, var in (("networks", c["var_network"]), ("examples", c["var_example"])):
            if var <= 0 and b not in floored[who]:
                floored[who].append(b)
    m["compComponentsFloored"] = floored_note(floored)
    return m


def sd_words(variance: float) -> str:
    """A variance component's standard deviation in points, with its unit: ``2.2 points``; ``zero``
    where the component was set to zero (:func:`floored_note` says why), never ``0.0 points``."""
    return "zero" if variance <= 0 else f"{latex.points(math.sqrt(variance))} points"


def share_words(share: float, variance: float | None, decimals: int = 0) -> str:
    """A component's share of the mean's variance in percent, ``decimals`` after the point: ``25\\%``;
    ``none`` where the component (``variance``; ``None`` for the residual, never set to zero) was set
    to zero; ``under 1\\%`` (``under 0.1\\%``, ...) for a share that is not zero but rounds to it,
    never ``0\\%``."""
    if variance is not None and variance <= 0:
        return "none"
    text = latex.fmt(share, decimals, percent=True)
    zero = latex.fmt(0.0, decimals, percent=True)
    return f"under {latex.fmt(10.0**-decimals / 100, decimals, percent=True)}" if text == zero and share > 0 else text


def shares_words(shares: list[float], variances: list[float | None]) -> list[str]:
    """:func:`share_words` of the parts of one variance (networks, examples, the rest), all with the
    fewest decimals (0 to 2) at which the printed shares add up to the 100\\% they are shares of: 24.6,
    70.6 and 4.8 print as 25\\%, 71\\% and 5\\% in whole percent, which add up to 101."""
    for decimals in (0, 1, 2):
        said = [share_words(s, v, decimals) for s, v in zip(shares, variances, strict=True)]
        printed = [0.0 if t == "none" or t.startswith("under") else float(t.removesuffix("\\%")) for t in said]
        if abs(sum(printed) - 100) < 0.5 * 10.0**-decimals:
            return said
    return said


def floored_note(floored: dict[str, list[int]]) -> str:
    """The sentence on the components set to zero, after a space (empty where none is): per source
    (``networks``, ``examples``), the probe sizes where its method-of-moments estimate fell to or
    below zero; one sentence for both sources."""
    named = [(who, words([f"$b={b}$" for b in sorted(sizes)])) for who, sizes in floored.items() if sizes]
    if not named:
        return ""
    if len(named) == 1:
        ((who, at),) = named
        return (
            f" The {who}' variance component is set to zero ({at}), where its method-of-moments estimate falls"
            f" to or below zero: there the {who}' mean flip rates differ no more than the rest of the variation"
            " alone would make them differ."
        )
    (a, at_a), (b, at_b) = named
    return (
        f" The {a}' variance component ({at_a}) and the {b}' ({at_b}) are set to zero, where their"
        " method-of-moments estimates fall to or below zero: there the means of that source differ no more"
        " than the rest of the variation alone would make them differ."
    )


# Per-size macros that the text also quotes at the smallest and the largest probe size, so
# that the prose names no size: ``compFlipBTwo`` -> ``compFlipMin`` when 2 is the smallest.
END_STEMS = (
    "comp flip",
    "comp flip ci",
    "comp acc",
    "comp acc ci",
    "comp ever",
    "comp ever ci",
    "comp net flip_rate",
    "comp net flip_rate ci",
    "comp net flip_rate driven",
    "comp net train_mode_accuracy",
    "comp net train_mode_accuracy ci",
    "comp net ever_flipped",
    "comp net ever_flipped ci",
    "comp keep flip",
    "comp keep flip ci",
)


def end_macros(m: dict, dep0: pd.DataFrame, over_seeds: pd.DataFrame, one_class_size: int) -> dict:
    """Macros that name no probe size, from the per-size ones in ``m``.

    - ``compSizeMin``/``compSizeMax``: the smallest and largest random probe size, and each
      stem of :data:`END_STEMS` at those sizes (``compFlipMin``, ``compNetFlipRateCiMax``...);
      ``compFlipCiMin``: the bootstrap interval of the flip rate as one ``[low, high]``;
    - ``compSizeWords`` and ``compFlipList``: every random size and its flip rate, as words
      (``2, 4, 16 and 64``; ``45.3\\%, ... and 1.4\\%``), in the same order;
    - ``compExactSize``: the batch size of the every-companion design;
    - ``compRandomFlipOneClass``: the flip rate with random companions at the one-class batch size
      (``n/a`` if that size is not probed);
    - ``compGrid<Norm>Lowest<End>``/``Highest<End>``: lowest and highest grid flip rate over
      training batch sizes (mean over seeds) at the smallest/largest probe size, and
      ``compGrid<Norm>Range<End>`` the two as the text quotes them (:func:`flip_range`).
    """
    random = dep0[dep0["design"] == "random"].sort_values("batch_size")
    sizes = [int(b) for b in random["batch_size"]]
    out = {"compSizeMin": str(sizes[0]), "compSizeMax": str(sizes[-1])}
    out["compSizeWords"] = words([str(b) for b in sizes])
    out["compFlipList"] = words([pct_text(v) for v in random["flip_rate"]])
    for r in random.itertuples(index=False):
        ci = interval_text(r.flip_rate_ci_low, r.flip_rate_ci_high)
        out[latex.macro_name("comp flip ci b", int(r.batch_size))] = ci
    m = m | out
    for end, b in (("min", sizes[0]), ("max", sizes[-1])):
        for stem in END_STEMS:
            source = latex.macro_name(stem, "b", b)
            if source in m:
                out[latex.macro_name(stem, end)] = m[source]
    exact = dep0[dep0["design"] == "exact"]
    out["compExactSize"] = str(int(exact["batch_size"].iloc[0])) if len(exact) else "n/a"
    at = random[random["batch_size"] == one_class_size]
    out["compRandomFlipOneClass"] = pct_text(float(at["flip_rate"].iloc[0])) if len(at) else "n/a"
    flips = over_seeds[(over_seeds["measure"] == "flip_rate") & (over_seeds["design"] == "random")]
    for norm in ("batchnorm", "batchrenorm"):
        for end, b in (("min", sizes[0]), ("max", sizes[-1])):
            cell = flips[(flips["normaliser"] == norm) & (flips["batch_size"] == b)]
            if len(cell):
                low, high = pct_text(cell["mean"].min()), pct_text(cell["mean"].max())
                out[latex.macro_name("comp grid", norm, "lowest", end)] = low
                out[latex.macro_name("comp grid", norm, "highest", end)] = high
                out[latex.macro_name("comp grid", norm, "range", end)] = flip_range(
                    cell["mean"].min(), cell["mean"].max()
                )
    return out


def flip_range(low: float, high: float) -> str:
    """The grid's flip rates over training batch sizes as the text quotes them: ``low--high``;
    one value where both print alike; ``none`` where no probe of any network flipped (both 0),
    as the Methods promise for a nil share."""
    if low == high == 0.0:
        return "none"
    a, b = pct_text(low), pct_text(high)
    return a if a == b else f"{a}--{b}"


def keep_macros(keep: pd.DataFrame) -> dict:
    """The first dependence network retrained with the leftover rows kept: flip rate with its
    interval per random size, exact rate at b = 2, inference accuracy."""
    m = {}
    for r in keep.to_dict("records"):
        b = int(r["batch_size"])
        if r["design"] == "random":
            m[latex.macro_name("comp", "keep", "flip", "b", b)] = pct_text(r["flip_rate"])
            m[latex.macro_name("comp", "keep", "flip", "ci", "b", b)] = interval_text(
                r["flip_rate_ci_low"], r["flip_rate_ci_high"]
            )
        elif r["design"] == "exact":
            m["compKeepExactFlip"] = pct_text(r["flip_rate"])
        m["compKeepInferenceAcc"] = latex.fmt(r["inference_accuracy"])
    return m


def network_accuracy_macros(dep: pd.DataFrame, confidence: float) -> dict:
    """The dependence networks' inference-mode accuracy, mean over networks with its interval
    (logit scale; ``compNetInferenceAcc``, ``compNetInferenceAccCi``), as fractions: the value the
    text quotes beside the other means over networks (the first network's alone is in its table)."""
    per_network = dep.groupby("seed", sort=True)["inference_accuracy"].first()
    if len(per_network) < 2:
        return {}
    mean, _, lo, hi = stats.share_interval(per_network.tolist(), confidence)
    value, ci = value_and_interval(mean, lo, hi, percent=False)
    return {"compNetInferenceAcc": value, "compNetInferenceAccCi": ci}
