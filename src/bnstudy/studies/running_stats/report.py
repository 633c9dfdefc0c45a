"""Studies 3 and 5's summary: JSON, macros and LaTeX tables from the passes, the self-checks,
the replicate shuffles and the class-sorted networks.

The rule script ``running_stats_summary.py`` reads its inputs and writes what
:func:`summarise` returns. Means over shuffles and seeds, with Student-t intervals (the
shuffles' errors on the log scale), are :func:`bnstudy.base.stats.summarise_over_seeds` (sums
correctly rounded); ratios are single divisions. Nothing here depends on the CPU. The replicate
shuffles' and the class-sorted networks' parts are :mod:`bnstudy.studies.running_stats.shuffles`'
and :mod:`bnstudy.studies.running_stats.sorted_networks`'.
"""

from __future__ import annotations

import pandas as pd

from bnstudy.paper import latex
from bnstudy.studies.running_stats import terms
from bnstudy.studies.running_stats.shuffles import shuffle_macros, shuffle_summary_table, shuffle_table
from bnstudy.studies.running_stats.sorted_networks import sorted_table, trained_macros, trained_summary

VAR_HIGH, VAR_LOW = 5.0, 0.5  # the population description counts variances at least / at most these


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
        "rsDifferentialPassesShuffled": latex.count(checks[checks["order"] == "shuffled"]["differential_pass"].sum()),
        "rsDifferentialPassesSorted": latex.count(checks[checks["order"] == "sorted"]["differential_pass"].sum()),
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
                f"{_mark(r.train_mean_pass)} ({latex.power_of_ten(r.train_mean)})",  # a true minus, not 1e-05
                f"{_mark(r.train_var_pass)} ({latex.power_of_ten(r.train_var)})",
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
