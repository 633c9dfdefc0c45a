"""Studies 3 and 5's summary: JSON, macros and LaTeX tables from the passes, the self-checks,
the replicate shuffles and the class-sorted networks.

The rule script ``running_stats_summary.py`` reads its inputs and writes what
:func:`summarise` returns. Means over shuffles and seeds, with Student-t intervals (the
shuffles' errors on the log scale), are :func:`bnstudy.base.stats.summarise_over_seeds` (sums
correctly rounded); ratios are single divisions. Nothing here depends on the CPU.
"""

from __future__ import annotations

import pandas as pd

from bnstudy.base import stats
from bnstudy.paper import latex
from bnstudy.studies.running_stats import terms

SHUFFLE_METRICS = ("running_error", "train_eval_rmse")
VAR_HIGH, VAR_LOW = 5.0, 0.5  # the population description counts variances at least / at most these


def shuffle_summary_table(shuffles: pd.DataFrame, confidence: float) -> pd.DataFrame:
    """Mean, sd and interval over shuffles of each metric, per estimator and batch size: both
    metrics are errors (never negative), so the Student-t interval is formed on the log scale
    (:func:`bnstudy.base.stats.positive_interval`) and never reaches below zero."""
    long = shuffles.melt(
        id_vars=["estimator", "batch_size", "updates", "shuffle"], value_vars=list(SHUFFLE_METRICS), var_name="metric"
    )
    return stats.summarise_over_seeds(
        long, ["estimator", "batch_size", "updates", "metric"], "value", confidence, positive=True
    ).rename(columns={"seeds": "shuffles"})


def _shuffle_interval(lo, hi) -> str:
    """``[lo, hi]`` with four decimals; ``(every shuffle alike)`` for a degenerate interval."""
    if latex.degenerate(lo, hi):
        return "(every shuffle alike)"
    return f"[{latex.endpoint(float(lo), 4, scale=1.0)}, {latex.endpoint(float(hi), 4, scale=1.0)}]"


def shuffle_macros(summary: pd.DataFrame, confidence: float) -> dict:
    """Macros of the replicated shuffles: every mean with its interval, the best batch size, and
    a sentence on monotonicity that is true of the means."""

    def f4(v):
        return latex.endpoint(float(v), 4, scale=1.0)

    def with_ci(r):
        """``mean [lo, hi]``; ``exactly 0 in every shuffle`` for a degenerate interval at zero."""
        if float(r.mean) == 0 and float(r.ci_low) == 0 and float(r.ci_high) == 0:
            return "exactly 0 in every shuffle", ""
        return f4(r.mean), _shuffle_interval(r.ci_low, r.ci_high)

    m = {"rsShuffles": str(int(summary["shuffles"].max())), "rsConfidence": f"{100 * confidence:g}\\%"}
    ema = summary[(summary.estimator == "ema") & (summary.metric == "running_error")]
    means = {int(r.batch_size): float(r.mean) for r in ema.itertuples(index=False)}
    for r in summary.itertuples(index=False):
        name = latex.macro_name("rs rep", r.estimator, r.metric, "b", int(r.batch_size))
        m[name], m[name + "Ci"] = with_ci(r)
    if means:
        sizes = sorted(means)
        best = min(sizes, key=lambda b: means[b])
        m["rsRepMonotone"] = terms.monotone_sentence(means)
        m["rsRepBestBatch"] = str(best)
        for end, b in (("min", sizes[0]), ("max", sizes[-1]), ("best", best)):
            r = ema[ema.batch_size == b].iloc[0]
            m[latex.macro_name("rs rep running error", end)] = f4(r["mean"])
            m[latex.macro_name("rs rep running error", end, "ci")] = _shuffle_interval(r.ci_low, r.ci_high)
        # every estimator at the smallest and the largest batch, named without the size
        for r in summary[summary.batch_size.isin([sizes[0], sizes[-1]])].itertuples(index=False):
            end = "min" if int(r.batch_size) == sizes[0] else "max"
            name = latex.macro_name("rs rep", r.estimator, r.metric, end)
            m[name], m[name + "Ci"] = with_ci(r)
    return m


def shuffle_table(summary: pd.DataFrame) -> tuple:
    """Per batch size: the EMA's and the pooled statistics' running error, and the EMA's
    train/inference RMSE, mean over shuffles with its interval."""

    def f4(v):
        return latex.endpoint(float(v), 4, scale=1.0)

    def cell(estimator, metric, b):
        r = summary[(summary.estimator == estimator) & (summary.metric == metric) & (summary.batch_size == b)]
        if r.empty:
            return "--"
        r = r.iloc[0]
        if float(r["mean"]) == 0 and float(r.ci_low) == 0 and float(r.ci_high) == 0:
            return "exactly 0"
        return f"{f4(r['mean'])} {_shuffle_interval(r.ci_low, r.ci_high)}"

    rows = []
    for b in sorted(int(v) for v in summary.batch_size.unique()):
        u = int(summary[summary.batch_size == b].updates.iloc[0])
        rows.append(
            [
                str(b),
                str(u),
                cell("ema", "running_error", b),
                cell("bias_corrected", "running_error", b),
                cell("pooled", "running_error", b),
                cell("ema", "train_eval_rmse", b),
            ]
        )
    return (
        ["$b$", "updates", "EMA error", "bias-corr.\\ error", "pooled error", "div.\\ EMA"],
        rows,
        "rrllll",
        "Study 3 over replicate shuffles: mean [interval]",
    )


def _f4(v) -> str:
    """Four decimals; exact zero as ``exactly 0``; a nonzero value never as ``0.0000``."""
    return "exactly 0" if float(v) == 0 else latex.endpoint(float(v), 4, scale=1.0)


def _power_of_ten(tol: float) -> str:
    """``$10^{k}$`` for a tolerance ``10**k``, read from its decimal form (no libm log10)."""
    mantissa, exponent = f"{tol:.0e}".split("e")
    assert mantissa == "1", f"tolerance {tol} is not a power of ten"
    return f"$10^{{{int(exponent)}}}$"


def pass_cells(passes: pd.DataFrame, keep: float) -> tuple[dict, dict]:
    """The swept passes by batch size: the EMA's per order, and every estimator's per (order,
    estimator); the EMA and the bias-corrected EMA at the keep-factor ``keep``."""

    def cell(order, estimator, with_keep=True):
        rows = passes[(passes["order"] == order) & (passes["estimator"] == estimator)]
        if with_keep:
            rows = rows[(rows["keep"] - keep).abs() < 1e-12]
        return {int(r.batch_size): r for r in rows.itertuples(index=False)}

    ema = {o: cell(o, "ema") for o in terms.ORDERS}
    est = {(o, e): cell(o, e, e in ("ema", "bias_corrected")) for o in terms.ORDERS for e in terms.ESTIMATORS}
    return ema, est


def divergence_ratios(ema: dict, sizes: list[int]) -> dict:
    """Per batch size, the class-sorted pass's train/inference RMSE over the shuffled pass's."""
    return {b: ema["sorted"][b].train_eval_rmse / ema["shuffled"][b].train_eval_rmse for b in sizes}


def setting_macros(passes: pd.DataFrame, ema: dict, sizes: list[int], p) -> dict:
    """The pass's settings: rows, features, seed, keep-factors, batch sizes, the checks' tolerances."""
    bmin, bmax = sizes[0], sizes[-1]
    return {
        "rsRows": str(p["rows"]),
        "rsFeatures": str(p["features"]),
        "rsSeed": str(p["seed"]),
        "rsKeep": latex.fmt(p["keep"], 2),
        "rsBatchMin": str(bmin),
        "rsBatchMax": str(bmax),
        "rsUpdatesMin": str(ema["shuffled"][bmax].updates),
        "rsUpdatesMax": str(ema["shuffled"][bmin].updates),
        "rsKeeps": ", ".join(latex.fmt(k, 2) for k in sorted(passes["keep"].dropna().unique())),
        "rsBatchSizes": ", ".join(map(str, sizes)),
        "rsMeanTol": _power_of_ten(terms.MEAN_TOL),
        "rsVarTol": _power_of_ten(terms.VAR_TOL),
        "rsDifferentialTol": latex.fmt(terms.DIFFERENTIAL_TOL, 1),
    }


def ema_pass_macros(ema: dict, sizes: list[int]) -> dict:
    """The EMA's passes: per batch size and at the two ends, the best batch size, the growth of
    the error, the divergence ratios and the worst variance error."""
    m = latex.macro_name
    bmin, bmax = sizes[0], sizes[-1]
    macros = {}
    for b in sizes:
        sh, so = ema["shuffled"][b], ema["sorted"][b]
        macros |= {
            m("rs updates b", b): str(sh.updates),
            m("rs initial weight b", b): _f4(sh.initial_weight),
            m("rs predicted error b", b): _f4(sh.predicted_error),
            m("rs running error b", b): _f4(sh.running_error),
            m("rs batch estimate error b", b): _f4(sh.batch_estimate_error),
            m("rs train eval shuffled b", b): _f4(sh.train_eval_rmse),
            m("rs train eval sorted b", b): _f4(so.train_eval_rmse),
            m("rs divergence ratio b", b): latex.fmt(so.train_eval_rmse / sh.train_eval_rmse, 1),
        }
    for end, b in (("min", bmin), ("max", bmax)):
        sh, so = ema["shuffled"][b], ema["sorted"][b]
        macros |= {
            m("rs running error", end): _f4(sh.running_error),
            m("rs predicted error", end): _f4(sh.predicted_error),
            m("rs initial weight", end): _f4(sh.initial_weight),
            m("rs batch estimate error", end): _f4(sh.batch_estimate_error),
            m("rs train eval shuffled", end): _f4(sh.train_eval_rmse),
            m("rs train eval sorted", end): _f4(so.train_eval_rmse),
            m("rs divergence ratio", end): latex.fmt(so.train_eval_rmse / sh.train_eval_rmse, 1),
        }
    best = min(sizes, key=lambda b: ema["shuffled"][b].running_error)
    ratios = divergence_ratios(ema, sizes)
    macros |= {
        "rsRunningErrorGrowth": latex.fmt(ema["shuffled"][bmax].running_error / ema["shuffled"][bmin].running_error, 1),
        "rsBatchEstimateGain": latex.fmt(
            ema["shuffled"][bmin].batch_estimate_error / ema["shuffled"][bmax].batch_estimate_error, 1
        ),
        "rsRunningErrorBestBatch": str(best),
        "rsRunningErrorBest": _f4(ema["shuffled"][best].running_error),
        "rsDivergenceRatioLow": latex.fmt(min(ratios.values()), 1),
        "rsDivergenceRatioHigh": latex.fmt(max(ratios.values()), 1),
    }
    worst_b = worst_var_batch(ema, sizes)
    worst = ema["shuffled"][worst_b]
    macros |= {
        "rsWorstVarError": latex.fmt(worst.worst_var_error, 2),
        "rsWorstVarBatch": str(worst_b),
        "rsWorstVarFeature": str(int(worst.worst_var_feature)),
    }
    return macros


def worst_var_batch(ema: dict, sizes: list[int]) -> int:
    """The batch size whose shuffled EMA pass has the largest worst-feature variance error."""
    return max(sizes, key=lambda b: ema["shuffled"][b].worst_var_error)


def remedy_macros(est: dict, sizes: list[int], sort_feature) -> dict:
    """Remedies: the shuffled pass at the largest batch, the sorted pass at the smallest; the
    sorted feature's variance within and between the smallest batches."""
    m = latex.macro_name
    macros = {}
    for order, b in (("shuffled", sizes[-1]), ("sorted", sizes[0])):
        for e in terms.ESTIMATORS:
            r = est[(order, e)][b]
            macros[m("rs remedy", order, e)] = _f4(r.running_error)
            macros[m("rs remedy", order, e, "var")] = latex.fmt(r.worst_var_error, 2)
            macros[m("rs remedy", order, e, "divergence")] = _f4(r.train_eval_rmse)
    so_min = est[("sorted", "ema")][sizes[0]]
    macros |= {
        "rsSortFeature": str(sort_feature),
        "rsSortedWithinVar": latex.fmt(so_min.sort_feature_within_var, 3),
        "rsSortedBetweenVar": latex.fmt(so_min.sort_feature_between_var, 3),
        "rsSortFeatureVar": latex.fmt(so_min.sort_feature_within_var + so_min.sort_feature_between_var, 3),
    }
    return macros


def population_macros(population, worst_feature: int) -> dict:
    """The synthetic population: the spread of its means and variances, the initial offset."""
    mu, sigma2 = terms.population_stats(population)
    return {
        "rsPopVarMin": latex.fmt(float(sigma2.min()), 2),
        "rsPopVarMax": latex.fmt(float(sigma2.max()), 2),
        "rsPopMeanAbsMax": latex.fmt(float(abs(mu).max()), 2),
        "rsPopVarAboveFive": str(int((sigma2 >= VAR_HIGH).sum())),
        "rsPopVarBelowHalf": str(int((sigma2 <= VAR_LOW).sum())),
        "rsPopVarHigh": f"{VAR_HIGH:g}",
        "rsPopVarLow": f"{VAR_LOW:g}",
        "rsInitialOffset": _f4(terms.initial_offset(mu, sigma2)),
        "rsWorstVarTrue": latex.fmt(float(sigma2[worst_feature]), 2),
    }


def selfcheck_macros(checks: pd.DataFrame, sizes: list[int]) -> dict:
    """How many of the layer's self-checks pass, in all and per order."""
    self_ok = checks.apply(lambda r: terms.self_checks_pass(r.to_dict()), axis=1)
    return {
        "rsSelfCheckPasses": str(int(sum(checks[f"{c}_pass"].sum() for c in terms.CHECKS))),
        "rsSelfCheckTotal": str(len(checks) * len(terms.CHECKS)),
        "rsSelfCheckPassesAll": "all" if bool(self_ok.all()) else "not all",
        "rsDifferentialPassesShuffled": str(int(checks[checks["order"] == "shuffled"]["differential_pass"].sum())),
        "rsDifferentialPassesSorted": str(int(checks[checks["order"] == "sorted"]["differential_pass"].sum())),
        "rsPasses": str(len(sizes)),
    }


def published_macros(published: dict) -> dict:
    """The published anchors of the running-statistics study."""
    pub_sizes = sorted(published["running_error"])
    return {
        "rsPublishedRunningErrorMin": latex.fmt(published["running_error"][pub_sizes[0]], 4),
        "rsPublishedRunningErrorMax": latex.fmt(published["running_error"][pub_sizes[-1]], 4),
        "rsPublishedBatchMin": str(pub_sizes[0]),
        "rsPublishedBatchMax": str(pub_sizes[-1]),
        "rsPublishedGrowth": latex.fmt(
            published["running_error"][pub_sizes[-1]] / published["running_error"][pub_sizes[0]], 1
        ),
        "rsPublishedTrainEvalShuffled": latex.fmt(published["train_eval_rmse_shuffled"], 4),
        "rsPublishedTrainEvalSorted": latex.fmt(published["train_eval_rmse_sorted"], 4),
        "rsPublishedDivergenceRatio": latex.fmt(
            published["train_eval_rmse_sorted"] / published["train_eval_rmse_shuffled"], 1
        ),
        "rsPublishedWorstVarError": latex.fmt(published["worst_feature_var_error"], 2),
    }


TRAINED_METRICS = ["inference_accuracy", "train_mode_accuracy", "label_disagreement", "train_eval_rmse"]


def trained_summary(trained: pd.DataFrame, confidence: float) -> pd.DataFrame:
    """The class-sorted and shuffled trained networks: mean, sd and interval over seeds per metric."""
    long = trained.melt(
        id_vars=["normaliser", "batch_size", "order", "seed"], value_vars=TRAINED_METRICS, var_name="metric"
    )
    return stats.summarise_over_seeds(long, ["normaliser", "batch_size", "order", "metric"], "value", confidence)


def trained_macros(cells: dict, seeds: int) -> dict:
    """Macros of the trained networks: every cell's mean, and the smallest batch size's by name."""
    m = latex.macro_name

    def value(metric, mean):  # a share of the test rows with its unit ("32.9\\%"), an accuracy as a fraction
        if metric == "label_disagreement":
            return latex.fmt(None if mean is None else float(mean), 1, percent=True)
        return latex.fmt(None if mean is None else float(mean), 3)

    macros = {}
    for (b, order, metric), r in cells.items():
        macros[m("rs trained", order, metric, "b", b)] = value(metric, r.mean)
    trained_sizes = sorted({k[0] for k in cells})
    macros["rsTrainedSeeds"] = str(seeds)
    b0 = trained_sizes[0]
    macros["rsTrainedBatch"] = str(b0)
    for order in ("shuffled", "sorted"):
        for metric in TRAINED_METRICS:
            r = cells.get((b0, order, metric))
            macros[m("rs trained", order, metric)] = value(metric, None if r is None else r.mean)
    noun = "batch size" if len(trained_sizes) == 1 else "batch sizes"
    macros["rsTrainedBatchSizes"] = f"{noun} {latex.words([str(b) for b in trained_sizes])}"
    return macros


def errors_table(ema: dict, sizes: list[int], published: dict) -> tuple:
    """Study 3's table: per batch size the EMA pass's errors and divergences beside the published error."""
    ratios = divergence_ratios(ema, sizes)
    rows = []
    for b in sizes:
        sh, so = ema["shuffled"][b], ema["sorted"][b]
        pub = published["running_error"].get(b)
        rows.append(
            [
                str(b),
                str(sh.updates),
                _f4(sh.initial_weight),
                _f4(sh.predicted_error),
                _f4(sh.running_error),
                _f4(sh.batch_estimate_error),
                _f4(sh.train_eval_rmse),
                _f4(so.train_eval_rmse),
                latex.fmt(ratios[b], 1),
                "--" if pub is None else f"{pub:.4f}",
            ]
        )
    return (
        ["$b$", "updates", "$k^u$", "predicted", "running", "one batch", "shuffled", "sorted", "ratio", "publ."],
        rows,
        "rrrrrrrrrr",
        "Study 3: running-statistics error and train/inference divergence",
    )


def _mark(ok) -> str:
    return "pass" if bool(ok) else "\\textbf{fail}"


def selfchecks_table(checks: pd.DataFrame, passes: pd.DataFrame) -> tuple:
    """Study 5's table: the four self-checks, the divergence and the differential check per pass."""

    def pass_divergence(r) -> str:
        """The divergence of the same pass (order, batch size and keep-factor) as the tables of
        the swept passes print it (one value, one rounding): the float64 pass's, not the float32
        layer's, which differs in the fourth decimal; the check's own where no pass of its
        keep-factor was swept."""
        same = passes[
            (passes["order"] == r.order)
            & (passes["estimator"] == "ema")
            & (passes["batch_size"] == int(r.batch_size))
            & ((passes["keep"] - float(r.keep)).abs() < 1e-12)
        ]
        return _f4(same.iloc[0].train_eval_rmse if len(same) else r.train_eval_rmse)

    rows = []
    for r in checks.sort_values(["batch_size", "order"], ascending=[True, False], kind="stable").itertuples(
        index=False
    ):
        rows.append(
            [
                str(r.batch_size),
                r.order,
                f"{_mark(r.train_mean_pass)} ({r.train_mean:.0e})",
                f"{_mark(r.train_var_pass)} ({r.train_var:.0e})",
                _mark(r.inference_repeatable_pass),
                _mark(r.shape_pass),
                pass_divergence(r),
                f"{_mark(r.differential_pass)} ({r.differential_rmse:.3f})",
            ]
        )
    return (
        [
            "$b$",
            "order",
            "mean $\\approx\\beta$",
            "var $\\approx\\gamma^2$",
            "repeatable",
            "shape",
            "divergence",
            "vs.\\ reference",
        ],
        rows,
        "rlllllrl",
        "Study 5: the four self-checks, the divergence and the differential check",
    )


def remedies_table(est: dict, sizes: list[int]) -> tuple:
    """Study 3's remedies on the same passes: each estimator's error, the EMA's and pooled divergence."""
    rows = []
    for order in terms.ORDERS:
        for b in sizes:
            rows.append(
                [order, str(b)]
                + [_f4(est[(order, e)][b].running_error) for e in terms.ESTIMATORS]
                + [_f4(est[(order, e)][b].train_eval_rmse) for e in ("ema", "pooled")]
            )
    return (
        ["order", "$b$", "EMA", "bias-corr.", "cumulative", "pooled", "div.\\ EMA", "div.\\ pooled"],
        rows,
        "lrrrrrrr",
        "Study 3: remedies on the same passes",
    )


def sorted_table(cells: dict) -> tuple:
    """Study 3 in trained networks: mean +- sd over seeds per batch size, order and metric."""

    def ms(b, order, metric, digits=3):
        r = cells.get((b, order, metric))
        if r is None:
            return "--"
        sd = "" if pd.isna(r.sd) else f" $\\pm$ {r.sd:.{digits}f}"
        return f"{r.mean:.{digits}f}{sd}"

    trained_sizes = sorted({k[0] for k in cells})
    rows = [
        [str(b), order] + [ms(b, order, k) for k in TRAINED_METRICS]
        for b in trained_sizes
        for order in ("shuffled", "sorted")
    ]
    return (
        ["$b$", "batches", "inference acc.", "training-mode acc.", "label disagreement", "logit RMSE"],
        rows,
        "rlllll",
        "Study 3 in trained networks: class-sorted versus shuffled training batches",
    )


def summarise(passes, checks, population, trained, shuffles, published, p) -> dict:
    """Everything the rule writes. ``p``: keep, sort_feature, rows, features, seed, confidence."""
    out = {}
    shuffle_summary = shuffle_summary_table(shuffles, p["confidence"])
    out["shuffle_summary"] = shuffle_summary
    out["table_shuffles"] = shuffle_table(shuffle_summary)
    records = passes.astype(object).where(passes.notna(), None).to_dict("records")
    out["summary"] = terms.summary_json(records, keep=p["keep"])

    ema, est = pass_cells(passes, p["keep"])
    sizes = sorted(ema["shuffled"])
    worst = ema["shuffled"][worst_var_batch(ema, sizes)]
    macros = setting_macros(passes, ema, sizes, p) | ema_pass_macros(ema, sizes)
    macros |= remedy_macros(est, sizes, p["sort_feature"])
    macros |= population_macros(population, int(worst.worst_var_feature))
    macros |= selfcheck_macros(checks, sizes) | published_macros(published)

    sorted_summary = trained_summary(trained, p["confidence"])
    out["sorted_training"] = sorted_summary
    cells = {(int(r.batch_size), r.order, r.metric): r for r in sorted_summary.itertuples(index=False)}
    macros |= trained_macros(cells, trained["seed"].nunique())
    macros |= shuffle_macros(shuffle_summary, p["confidence"])
    out["macros"] = macros

    out["table_errors"] = errors_table(ema, sizes, published)
    out["table_selfchecks"] = selfchecks_table(checks, passes)
    out["table_remedies"] = remedies_table(est, sizes)
    out["table_sorted"] = sorted_table(cells)
    return out
