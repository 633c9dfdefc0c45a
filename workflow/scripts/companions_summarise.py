"""Rule summarise_companions: estimates with bootstrap intervals, JSON summary, macros, table."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # noqa: F821
from _setup import start  # noqa: E402

log = start(snakemake, torch=False)  # noqa: F821
import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from bnstudy import companions, io, latex, stats  # noqa: E402

inp, out, p = snakemake.input, snakemake.output, snakemake.params  # noqa: F821
probes = pd.concat([io.read_table(f) for f in [inp.dependence, *inp.cells]], ignore_index=True)
summary = pd.DataFrame(companions.summarise(probes, p.resamples, p.confidence, p.seed))
io.write_table(out.summary_table, summary)

grid = summary[summary["network"] == "grid"]
over_seeds = []
for value in ("flip_rate", "train_mode_accuracy", "ever_flipped"):
    s = stats.summarise_over_seeds(grid, ["normaliser", "train_batch_size", "design", "batch_size"],
                                   value, p.confidence)
    over_seeds.append(s.assign(measure=value))
over_seeds = pd.concat(over_seeds, ignore_index=True)
io.write_table(out.grid_table, over_seeds)

dep = summary[summary["network"] == "dependence"]
result = companions.dependence_json(dep)
io.write_json(out.summary, result)
log.info("dependence network: %s", result)

# ---- macros: every number the section quotes ------------------------------------
published = yaml.safe_load(open(inp.published))["companions"]
pct = lambda v: latex.fmt(v, 1, percent=True)  # noqa: E731
sizes = sorted(int(b) for b in dep.loc[dep["design"] == "random", "batch_size"])
first = dep.iloc[0]
m = {
    "compExamples": str(int(first["examples"])),
    "compPerClass": str(p.examples_per_class),
    "compBatches": str(p.batches_per_example),
    "compExactBatches": latex.fmt(int(dep.loc[dep["design"] == "exact", "batches_per_example"].iloc[0]))
    if (dep["design"] == "exact").any() else "n/a",
    "compOneClassSize": str(p.one_class_batch_size),
    "compOneClassCompanions": str(p.one_class_batch_size - 1),
    "compResamples": latex.fmt(int(p.resamples)),
    "compConfidence": f"{100 * p.confidence:g}\\%",
    "compSizeList": ", ".join(str(b) for b in sizes),
    "compInferenceAcc": latex.fmt(result["inference_accuracy"]),
    "compPublishedInferenceAcc": latex.fmt(published["inference_accuracy"]),
    "compOwnFlip": pct(result["one_class_same_flip"]),
    "compOtherFlip": pct(result["one_class_other_flip"]),
    "compPublishedOneClassFlip": pct(1 - published["one_class_same_label_b16"]),
    "compExactFlip": pct(result["exact_flip_rate_b2"]) if result["exact_flip_rate_b2"] is not None else "n/a",
}
for b in sizes:
    r = result[str(b)]
    m[latex.macro_name("comp", "flip", "b", b)] = pct(r["flip_rate"])
    m[latex.macro_name("comp", "flip", "low", "b", b)] = pct(r["flip_ci"][0])
    m[latex.macro_name("comp", "flip", "high", "b", b)] = pct(r["flip_ci"][1])
    m[latex.macro_name("comp", "acc", "b", b)] = latex.fmt(r["train_mode_accuracy"])
    m[latex.macro_name("comp", "ever", "b", b)] = pct(r["ever_flipped"])

# Exact b = 2 rate against the sampled interval, and the largest gap to the published rates.
if 2 in sizes and result["exact_flip_rate_b2"] is not None:
    lo, hi = result["2"]["flip_ci"]
    m["compExactInInterval"] = "inside" if lo <= result["exact_flip_rate_b2"] <= hi else "outside"
gaps = {b: 100 * (result[str(b)]["flip_rate"] - published["flip_rate"][b])
        for b in sizes if b in published["flip_rate"]}
worst = max(gaps, key=lambda b: abs(gaps[b]))
m["compMaxGapPoints"] = f"{abs(gaps[worst]):.1f}"
m["compMaxGapSign"] = "above" if gaps[worst] > 0 else "below"
m["compMaxGapSize"] = str(worst)

# Grid: controls must never flip; batch normalisers by normaliser, mean over seeds.
controls = probes[probes["normaliser"].isin(["none", "layernorm", "groupnorm"])]
m["compControlNetworks"] = str(len(controls.groupby(["normaliser", "train_batch_size", "seed"])))
m["compControlProbes"] = latex.fmt(int(controls["batches"].sum()))
m["compControlFlips"] = latex.fmt(int(controls["flips"].sum()))
m["compGridNetworks"] = str(len(grid.groupby(["normaliser", "train_batch_size", "seed"])))
flips = over_seeds[(over_seeds["measure"] == "flip_rate") & (over_seeds["design"] == "random")]
for norm in ("batchnorm", "batchrenorm"):
    for b in (sizes[0], sizes[-1]):
        cell = flips[(flips["normaliser"] == norm) & (flips["batch_size"] == b)]
        if len(cell):
            m[latex.macro_name("comp", "grid", norm, "min", "b", b)] = pct(cell["mean"].min())
            m[latex.macro_name("comp", "grid", norm, "max", "b", b)] = pct(cell["mean"].max())
latex.write_macros(out.macros, m, "Study 1: companion dependence")

# ---- table: the dependence network beside the published study ---------------------
def theirs(key, b, percent):
    v = published.get(key, {}).get(b)
    return "--" if v is None else (pct(v) if percent else latex.fmt(v))


rows = []
for b in sizes:
    r = result[str(b)]
    rows.append([f"random, $b={b}$", f"{pct(r['flip_rate'])} [{pct(r['flip_ci'][0])}, {pct(r['flip_ci'][1])}]",
                 theirs("flip_rate", b, True), latex.fmt(r["train_mode_accuracy"]),
                 theirs("train_mode_accuracy", b, False), pct(r["ever_flipped"]), theirs("ever_flipped", b, True)])
if result["exact_flip_rate_b2"] is not None:
    exact = dep[dep["design"] == "exact"].iloc[0]
    rows.append(["every companion, $b=2$", pct(exact["flip_rate"]), "--", latex.fmt(exact["train_mode_accuracy"]),
                 "--", pct(exact["ever_flipped"]), "--"])
for design, label in (("own_class", "own class"), ("other_class", "another class")):
    r = dep[dep["design"] == design].iloc[0]
    b = int(r["batch_size"])
    rows.append([f"{label}, $b={b}$",
                 f"{pct(r['flip_rate'])} [{pct(r['flip_rate_ci_low'])}, {pct(r['flip_rate_ci_high'])}]",
                 m["compPublishedOneClassFlip"] if b == 16 else "--", latex.fmt(r["train_mode_accuracy"]), "--",
                 pct(r["ever_flipped"]), "--"])
latex.write_table(
    out.table, ["companions", "flip rate [CI]", "publ.", "train-mode acc.", "publ.", "ever flipped", "publ."],
    rows, "lllllll", "Study 1: dependence network, ours beside the published values",
)
log.info("macros: %d", len(m))
