"""Rule summarise_running_stats: JSON summary, macros and LaTeX tables of studies 3 and 5."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # noqa: F821
from _setup import start  # noqa: E402

log = start(snakemake, torch=False)  # noqa: F821
import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from bnstudy import io, latex, running_stats, selfchecks, stats  # noqa: E402

inp, out, p = snakemake.input, snakemake.output, snakemake.params  # noqa: F821
passes = io.read_table(inp.passes)
checks = io.read_table(inp.checks)
published = yaml.safe_load(open(inp.published))["running_stats"]
keep = p.keep

# ---- JSON summary ------------------------------------------------------------------
records = passes.astype(object).where(passes.notna(), None).to_dict("records")
io.write_json(out.summary, running_stats.summary_json(records, keep=keep))


def cell(order, estimator, with_keep=True):
    rows = passes[(passes["order"] == order) & (passes["estimator"] == estimator)]
    if with_keep:
        rows = rows[(rows["keep"] - keep).abs() < 1e-12]
    return {int(r.batch_size): r for r in rows.itertuples(index=False)}


ema = {o: cell(o, "ema") for o in running_stats.ORDERS}
est = {(o, e): cell(o, e, e in ("ema", "bias_corrected")) for o in running_stats.ORDERS
       for e in running_stats.ESTIMATORS}
sizes = sorted(ema["shuffled"])
bmin, bmax = sizes[0], sizes[-1]
m = latex.macro_name


def power_of_ten(tol: float) -> str:
    """``$10^{k}$`` for a tolerance ``10**k``, read from its decimal form (no libm log10)."""
    mantissa, exponent = f"{tol:.0e}".split("e")
    assert mantissa == "1", f"tolerance {tol} is not a power of ten"
    return f"$10^{{{int(exponent)}}}$"

f4 = lambda v: latex.fmt(float(v), 4)  # noqa: E731

macros = {
    "rsRows": str(p.rows), "rsFeatures": str(p.features), "rsSeed": str(p.seed),
    "rsKeep": latex.fmt(keep, 2), "rsBatchMin": str(bmin), "rsBatchMax": str(bmax),
    "rsUpdatesMin": str(ema["shuffled"][bmax].updates), "rsUpdatesMax": str(ema["shuffled"][bmin].updates),
    "rsKeeps": ", ".join(latex.fmt(k, 2) for k in sorted(passes["keep"].dropna().unique())),
    "rsBatchSizes": ", ".join(map(str, sizes)),
    "rsMeanTol": power_of_ten(selfchecks.MEAN_TOL),
    "rsVarTol": power_of_ten(selfchecks.VAR_TOL),
    "rsDifferentialTol": latex.fmt(selfchecks.DIFFERENTIAL_TOL, 1),
}
for b in sizes:
    sh, so = ema["shuffled"][b], ema["sorted"][b]
    macros |= {
        m("rs updates b", b): str(sh.updates),
        m("rs initial weight b", b): f4(sh.initial_weight),
        m("rs predicted error b", b): f4(sh.predicted_error),
        m("rs running error b", b): f4(sh.running_error),
        m("rs batch estimate error b", b): f4(sh.batch_estimate_error),
        m("rs train eval shuffled b", b): f4(sh.train_eval_rmse),
        m("rs train eval sorted b", b): f4(so.train_eval_rmse),
        m("rs divergence ratio b", b): latex.fmt(so.train_eval_rmse / sh.train_eval_rmse, 1),
    }
for end, b in (("min", bmin), ("max", bmax)):
    sh, so = ema["shuffled"][b], ema["sorted"][b]
    macros |= {
        m("rs running error", end): f4(sh.running_error),
        m("rs predicted error", end): f4(sh.predicted_error),
        m("rs initial weight", end): f4(sh.initial_weight),
        m("rs batch estimate error", end): f4(sh.batch_estimate_error),
        m("rs train eval shuffled", end): f4(sh.train_eval_rmse),
        m("rs train eval sorted", end): f4(so.train_eval_rmse),
        m("rs divergence ratio", end): latex.fmt(so.train_eval_rmse / sh.train_eval_rmse, 1),
    }
best = min(sizes, key=lambda b: ema["shuffled"][b].running_error)
ratios = {b: ema["sorted"][b].train_eval_rmse / ema["shuffled"][b].train_eval_rmse for b in sizes}
macros |= {
    "rsRunningErrorGrowth": latex.fmt(ema["shuffled"][bmax].running_error / ema["shuffled"][bmin].running_error, 1),
    "rsBatchEstimateGain": latex.fmt(ema["shuffled"][bmin].batch_estimate_error
                                     / ema["shuffled"][bmax].batch_estimate_error, 1),
    "rsRunningErrorBestBatch": str(best),
    "rsRunningErrorBest": f4(ema["shuffled"][best].running_error),
    "rsDivergenceRatioLow": latex.fmt(min(ratios.values()), 1),
    "rsDivergenceRatioHigh": latex.fmt(max(ratios.values()), 1),
}
worst_b = max(sizes, key=lambda b: ema["shuffled"][b].worst_var_error)
worst = ema["shuffled"][worst_b]
macros |= {
    "rsWorstVarError": latex.fmt(worst.worst_var_error, 2),
    "rsWorstVarBatch": str(worst_b),
    "rsWorstVarFeature": str(int(worst.worst_var_feature)),
}
# Remedies: the shuffled pass at the largest batch, the sorted pass at the smallest.
for order, b in (("shuffled", bmax), ("sorted", bmin)):
    for e in running_stats.ESTIMATORS:
        r = est[(order, e)][b]
        macros[m("rs remedy", order, e)] = f4(r.running_error)
        macros[m("rs remedy", order, e, "var")] = latex.fmt(r.worst_var_error, 2)
        macros[m("rs remedy", order, e, "divergence")] = f4(r.train_eval_rmse)
so_min = ema["sorted"][bmin]
macros |= {
    "rsSortFeature": str(p.sort_feature),
    "rsSortedWithinVar": latex.fmt(so_min.sort_feature_within_var, 3),
    "rsSortedBetweenVar": latex.fmt(so_min.sort_feature_between_var, 3),
    "rsSortFeatureVar": latex.fmt(so_min.sort_feature_within_var + so_min.sort_feature_between_var, 3),
}
# The population.
population = io.read_array(inp.population)
mu, sigma2 = running_stats.population_stats(population)
macros |= {
    "rsPopVarMin": latex.fmt(float(sigma2.min()), 2), "rsPopVarMax": latex.fmt(float(sigma2.max()), 2),
    "rsPopMeanAbsMax": latex.fmt(float(abs(mu).max()), 2),
    "rsPopVarAboveFive": str(int((sigma2 >= 5).sum())), "rsPopVarBelowHalf": str(int((sigma2 <= 0.5).sum())),
    "rsInitialOffset": f4(running_stats.initial_offset(mu, sigma2)),
    "rsWorstVarTrue": latex.fmt(float(sigma2[int(worst.worst_var_feature)]), 2),
}
# Self-checks.
self_ok = checks.apply(lambda r: selfchecks.self_checks_pass(r.to_dict()), axis=1)
macros |= {
    "rsSelfCheckPasses": str(int(sum(checks[f"{c}_pass"].sum() for c in selfchecks.CHECKS))),
    "rsSelfCheckTotal": str(len(checks) * len(selfchecks.CHECKS)),
    "rsSelfCheckPassesAll": "all" if bool(self_ok.all()) else "not all",
    "rsDifferentialPassesShuffled": str(int(checks[checks["order"] == "shuffled"]["differential_pass"].sum())),
    "rsDifferentialPassesSorted": str(int(checks[checks["order"] == "sorted"]["differential_pass"].sum())),
    "rsPasses": str(len(sizes)),
}
# Published anchors.
pub_sizes = sorted(published["running_error"])
macros |= {
    "rsPublishedRunningErrorMin": latex.fmt(published["running_error"][pub_sizes[0]], 4),
    "rsPublishedRunningErrorMax": latex.fmt(published["running_error"][pub_sizes[-1]], 4),
    "rsPublishedBatchMin": str(pub_sizes[0]), "rsPublishedBatchMax": str(pub_sizes[-1]),
    "rsPublishedGrowth": latex.fmt(published["running_error"][pub_sizes[-1]] / published["running_error"][pub_sizes[0]], 1),
    "rsPublishedTrainEvalShuffled": latex.fmt(published["train_eval_rmse_shuffled"], 4),
    "rsPublishedTrainEvalSorted": latex.fmt(published["train_eval_rmse_sorted"], 4),
    "rsPublishedDivergenceRatio": latex.fmt(published["train_eval_rmse_sorted"] / published["train_eval_rmse_shuffled"], 1),
    "rsPublishedWorstVarError": latex.fmt(published["worst_feature_var_error"], 2),
}

# ---- trained networks: class-sorted versus shuffled ---------------------------------
trained = pd.concat([io.read_table(f) for f in inp.sorted_cells], ignore_index=True)
metrics = ["inference_accuracy", "train_mode_accuracy", "label_disagreement", "train_eval_rmse"]
long = trained.melt(id_vars=["normaliser", "batch_size", "order", "seed"], value_vars=metrics, var_name="metric")
sorted_summary = stats.summarise_over_seeds(long, ["normaliser", "batch_size", "order", "metric"], "value", 0.95)
io.write_table(out.sorted_training, sorted_summary)
cells = {(int(r.batch_size), r.order, r.metric): r for r in sorted_summary.itertuples(index=False)}
for (b, order, metric), r in cells.items():
    macros[m("rs trained", order, metric, "b", b)] = latex.fmt(r.mean, 3)
trained_sizes = sorted({k[0] for k in cells})
macros["rsTrainedSeeds"] = str(trained["seed"].nunique())
b0 = trained_sizes[0]
macros["rsTrainedBatch"] = str(b0)
for order in ("shuffled", "sorted"):
    for metric in metrics:
        r = cells.get((b0, order, metric))
        macros[m("rs trained", order, metric)] = latex.fmt(None if r is None else float(r.mean), 3)
macros["rsTrainedBatchSizes"] = ", ".join(map(str, trained_sizes))
latex.write_macros(out.macros, macros, "Studies 3 and 5: running statistics and what tests can see")

# ---- tables ------------------------------------------------------------------------
rows = []
for b in sizes:
    sh, so = ema["shuffled"][b], ema["sorted"][b]
    pub = published["running_error"].get(b)
    rows.append([str(b), str(sh.updates), f4(sh.initial_weight), f4(sh.predicted_error), f4(sh.running_error),
                 f4(sh.batch_estimate_error), f4(sh.train_eval_rmse), f4(so.train_eval_rmse),
                 latex.fmt(ratios[b], 1), "--" if pub is None else f"{pub:.4f}"])
latex.write_table(out.table_errors,
                  ["$b$", "updates", "$k^u$", "predicted", "running", "one batch", "shuffled", "sorted", "ratio",
                   "publ."],
                  rows, "rrrrrrrrrr", "Study 3: running-statistics error and train/inference divergence")


def mark(ok):
    return "pass" if bool(ok) else "\\textbf{fail}"


rows = []
for r in checks.sort_values(["batch_size", "order"], ascending=[True, False], kind="stable").itertuples(index=False):
    rows.append([str(r.batch_size), r.order,
                 f"{mark(r.train_mean_pass)} ({r.train_mean:.0e})", f"{mark(r.train_var_pass)} ({r.train_var:.0e})",
                 mark(r.inference_repeatable_pass), mark(r.shape_pass), f4(r.train_eval_rmse),
                 f"{mark(r.differential_pass)} ({r.differential_rmse:.3f})"])
latex.write_table(out.table_selfchecks,
                  ["$b$", "order", "mean $\\approx\\beta$", "var $\\approx\\gamma^2$", "repeatable", "shape",
                   "divergence", "vs.\\ reference"],
                  rows, "rlllllrl", "Study 5: the four self-checks, the divergence and the differential check")

rows = []
for order in running_stats.ORDERS:
    for b in sizes:
        rows.append([order, str(b)] + [f4(est[(order, e)][b].running_error) for e in running_stats.ESTIMATORS]
                    + [f4(est[(order, e)][b].train_eval_rmse) for e in ("ema", "pooled")])
latex.write_table(out.table_remedies,
                  ["order", "$b$", "EMA", "bias-corr.", "cumulative", "pooled", "div.\\ EMA", "div.\\ pooled"],
                  rows, "lrrrrrrr", "Study 3: remedies on the same passes")


def ms(b, order, metric, digits=3):
    r = cells.get((b, order, metric))
    if r is None:
        return "--"
    sd = "" if pd.isna(r.sd) else f" $\\pm$ {r.sd:.{digits}f}"
    return f"{r.mean:.{digits}f}{sd}"


rows = [[str(b), order] + [ms(b, order, k) for k in metrics]
        for b in trained_sizes for order in ("shuffled", "sorted")]
latex.write_table(out.table_sorted,
                  ["$b$", "batches", "inference acc.", "training-mode acc.", "label disagreement", "logit RMSE"],
                  rows, "rlllll", "Study 3 in trained networks: class-sorted versus shuffled training batches")
log.info("macros: %d", len(macros))
