"""Rule summarise_batch_size: tidy tables over seeds, JSON summary, macros, LaTeX tables."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # noqa: F821
from _setup import start  # noqa: E402

log = start(snakemake, torch=False)  # noqa: F821
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from bnstudy import evaluation, io, latex, stats  # noqa: E402
from bnstudy.fixedmath import powi  # noqa: E402

inp, out, p = snakemake.input, snakemake.output, snakemake.params  # noqa: F821
KEYS = ["normaliser", "batch_size", "mode", "seed"]

# ---- tidy tables: one row per run and evaluation mode -----------------------
remedy_runs = [io.read_table(f) for f in inp.remedies]
updates = pd.concat(remedy_runs, ignore_index=True)[["batch_size", "seed", "updates"]].drop_duplicates() \
    if remedy_runs else pd.DataFrame(columns=["batch_size", "seed", "updates"])
runs = pd.concat([io.read_table(f) for f in inp.cells] + [r[KEYS + ["accuracy"]] for r in remedy_runs],
                 ignore_index=True)
runs = runs.sort_values(KEYS, kind="stable").reset_index(drop=True)
summary = stats.summarise_over_seeds(runs, ["normaliser", "batch_size", "mode"], "accuracy", p.confidence)
io.write_table(out.runs, runs)
io.write_table(out.summary_table, summary)
io.write_json(out.summary, evaluation.summary_json(summary))

distances = pd.concat([io.read_table(f) for f in inp.distances], ignore_index=True) if inp.distances else \
    pd.DataFrame(columns=["normaliser", "batch_size", "seed", "statistics", "layer", "mean_distance", "var_distance"])
distances = distances.sort_values(["normaliser", "batch_size", "statistics", "layer", "seed"], kind="stable")
io.write_table(out.distances, distances)
DISTANCE_KEYS = ["normaliser", "batch_size", "statistics", "layer"]
distance_summary = pd.DataFrame(
    [dict(zip(DISTANCE_KEYS, key)) | {c: evaluation.mean_in_order(g[c]) for c in ("mean_distance", "var_distance")}
     for key, g in distances.groupby(DISTANCE_KEYS, sort=True)],  # each group's seeds in seed order
    columns=DISTANCE_KEYS + ["mean_distance", "var_distance"])
io.write_table(out.distance_summary, distance_summary)

# ---- gains of batch norm over no normaliser, inference mode ------------------
published = yaml.safe_load(open(inp.published))["batch_size"]
inference = runs[runs["mode"] == "inference"]
sizes = sorted(runs["batch_size"].unique().tolist())
gains = []
for b in sizes:
    bn = inference[(inference.normaliser == "batchnorm") & (inference.batch_size == b)]["accuracy"]
    no = inference[(inference.normaliser == "none") & (inference.batch_size == b)]["accuracy"]
    if len(bn) and len(no):
        diff, lo, hi = evaluation.gain_interval(bn, no, p.confidence)
        pub = (published["batchnorm"].get(b), published["none"].get(b))
        gains.append({"batch_size": b, "gain": diff, "ci_low": lo, "ci_high": hi,
                      "published_gain": None if None in pub else round(pub[0] - pub[1], 6)})
gains = pd.DataFrame(gains, columns=["batch_size", "gain", "ci_low", "ci_high", "published_gain"])
io.write_table(out.gains, gains)

# ---- macros -------------------------------------------------------------------
cell = {(r.normaliser, int(r.batch_size), r.mode): r for r in summary.itertuples(index=False)}


def points(v, digits=1):
    return latex.fmt(100 * v, digits) if v is not None and np.isfinite(v) else "n/a"


def interval(lo, hi, digits=3):
    return f"[{latex.fmt(lo, digits)}, {latex.fmt(hi, digits)}]"


macros = {"gridSeeds": str(runs["seed"].nunique()), "publishedSeeds": str(published["seeds"]),
          "batchMin": str(sizes[0]), "batchMax": str(sizes[-1]), "gridBatchCount": str(len(sizes))}
for (norm, b, mode), r in cell.items():
    macros[latex.macro_name("acc", mode, norm, "b", b)] = latex.fmt(r.mean)
    macros[latex.macro_name("sd", mode, norm, "b", b)] = latex.fmt(r.sd)
    for end, size in (("min", sizes[0]), ("max", sizes[-1])):
        if b == size:
            macros[latex.macro_name("acc", mode, norm, end)] = latex.fmt(r.mean)
            macros[latex.macro_name("ci", mode, norm, end)] = interval(r.ci_low, r.ci_high)
            macros[latex.macro_name("sd", mode, norm, end)] = latex.fmt(r.sd)

# how much of batch norm's inference-mode gap to no normaliser each remedy closes
for end, b in (("min", sizes[0]), ("max", sizes[-1])):
    base, ref = cell.get(("batchnorm", b, "inference")), cell.get(("none", b, "inference"))
    if base is None or ref is None:
        continue
    macros[latex.macro_name("gap", end)] = points(ref.mean - base.mean)
    for mode in ("debiased_ema", "cumulative", "precise_bn", "exact"):
        r = cell.get(("batchnorm", b, mode))
        if r is not None:
            macros[latex.macro_name("gain", mode, end)] = points(r.mean - base.mean)
            gap = ref.mean - base.mean
            macros[latex.macro_name("gapClosed", mode, end)] = \
                latex.fmt((r.mean - base.mean) / gap, 0, percent=True) if gap > 0 else "n/a"

# the initial value's weight after the fewest updates of any batch-norm network
if len(updates):
    fewest = int(updates["updates"].min())
    weight = powi(1.0 - p.momentum, fewest)
    mantissa, exponent = f"{weight:.1e}".split("e")
    macros["emaFewestUpdates"] = latex.fmt(fewest)
    macros["emaInitialWeightFewest"] = f"\\ensuremath{{{mantissa}\\times 10^{{{int(exponent)}}}}}"
    debiased = runs[runs["mode"] == "debiased_ema"].set_index(["batch_size", "seed"])["accuracy"]
    trained = runs[(runs["mode"] == "inference") & (runs["normaliser"] == "batchnorm")] \
        .set_index(["batch_size", "seed"])["accuracy"]
    macros["debiasedLargestChange"] = points(float((debiased - trained.reindex(debiased.index)).abs().max()))

# distances of the trained EMA and PreciseBN to the exact statistics, layer 2, smallest/largest batch
for end, b in (("min", sizes[0]), ("max", sizes[-1])):
    for name in ("ema", "precise_bn", "cumulative"):
        d = distance_summary[(distance_summary.batch_size == b) & (distance_summary.statistics == name)
                             & (distance_summary.layer == 2)]
        if len(d):
            macros[latex.macro_name("meanDistance", name, "layer", "two", end)] = latex.fmt(float(d.mean_distance.iloc[0]), 3)
            macros[latex.macro_name("varDistance", name, "layer", "two", end)] = latex.fmt(float(d.var_distance.iloc[0]), 3)

# the seed spread against the published gains
sd_inference = summary[summary["mode"] == "inference"]["sd"]
macros["sdInferenceMedian"] = points(float(sd_inference.median()), 2)
macros["sdInferenceLargest"] = points(float(sd_inference.max()), 2)
macros["seInferencePublishedSeeds"] = points(float(sd_inference.median()) / np.sqrt(published["seeds"]), 2)
claimed = {b: published["batchnorm"][b] - published["none"][b]
           for b in published["batchnorm"] if b in published["none"] and published["batchnorm"][b] > published["none"][b]}
for b, g in claimed.items():
    macros[latex.macro_name("publishedGain", "b", b)] = points(g)
compared = gains[gains.batch_size.isin(list(claimed))]
macros["gainCompared"] = str(len(compared))
macros["gainComparedExcludingZero"] = str(int(((compared.ci_low > 0) | (compared.ci_high < 0)).sum()))
macros["gainComparedSizes"] = ", ".join(str(int(b)) for b in sorted(compared.batch_size)) or "none"
if len(gains):
    macros["gainsExcludingZero"] = str(int(((gains.ci_low > 0) | (gains.ci_high < 0)).sum()))
latex.write_macros(out.macros, macros, "Study 2: accuracy by training batch size, remedies")


# ---- tables -----------------------------------------------------------------
def ours(norm, b, mode):
    r = cell.get((norm, b, mode))
    return "--" if r is None else f"{r.mean:.3f} $\\pm$ {latex.fmt(r.sd)}"


def theirs(key, b):
    v = published[key].get(b)
    return "--" if v is None else f"{v:.3f}"


rows = [[str(b), ours("none", b, "inference"), theirs("none", b),
         ours("batchnorm", b, "inference"), theirs("batchnorm", b),
         ours("batchnorm", b, "training"), theirs("batchnorm_training_mode", b)] for b in sizes]
latex.write_table(
    out.table,
    ["batch", "none", "publ.", "batch norm", "publ.", "BN, training mode", "publ."],
    rows, "rllllll", "Study 2: ours (mean $\\pm$ sd over seeds) beside the published values",
)

REMEDY_COLUMNS = [("inference", "EMA (trained)"), ("debiased_ema", "debiased EMA"),
                  ("cumulative", "cumulative"), ("precise_bn", "PreciseBN"), ("exact", "exact")]
rows = [[str(b)] + [ours("batchnorm", b, m) for m, _ in REMEDY_COLUMNS] + [ours("none", b, "inference")]
        for b in sizes]
latex.write_table(out.remedies_table, ["batch"] + [h for _, h in REMEDY_COLUMNS] + ["none"], rows,
                  "r" + "l" * (len(REMEDY_COLUMNS) + 1),
                  "Batch norm's inference-mode accuracy under each set of running statistics")

DISTANCE_COLUMNS = [("ema", "EMA (trained)"), ("debiased_ema", "debiased EMA"),
                    ("cumulative", "cumulative"), ("precise_bn", "PreciseBN")]
rows = []
for b in sizes:
    for layer in (1, 2):
        row = [str(b) if layer == 1 else "", str(layer)]
        for name, _ in DISTANCE_COLUMNS:
            d = distance_summary[(distance_summary.batch_size == b) & (distance_summary.statistics == name)
                                 & (distance_summary.layer == layer)]
            row.append("--" if d.empty else
                       f"{latex.fmt(float(d.mean_distance.iloc[0]))} / {latex.fmt(float(d.var_distance.iloc[0]))}")
        rows.append(row)
latex.write_table(out.distance_table, ["batch", "layer"] + [h for _, h in DISTANCE_COLUMNS], rows,
                  "rr" + "l" * len(DISTANCE_COLUMNS),
                  "Distance to the exact training-half statistics: mean shift / variance log-ratio (RMS)")

rows = []
for g in gains.itertuples(index=False):
    pub = "--" if g.published_gain is None or pd.isna(g.published_gain) else f"{100 * g.published_gain:+.1f}"
    rows.append([str(int(g.batch_size)), f"{100 * g.gain:+.2f}",
                 f"[{100 * g.ci_low:+.2f}, {100 * g.ci_high:+.2f}]", pub,
                 points(cell[("none", int(g.batch_size), "inference")].sd, 2),
                 points(cell[("batchnorm", int(g.batch_size), "inference")].sd, 2)])
latex.write_table(out.gain_table, ["batch", "gain", "95\\% interval", "publ.", "sd none", "sd BN"], rows,
                  "rrlrrr", "Inference-mode gain of batch norm over none, in points")
log.info("summary rows: %d, gains %s", len(summary), gains.to_dict("records"))
