"""Rule summarise_batch_size: tidy table over seeds, JSON summary, macros, LaTeX table."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # noqa: F821
from _setup import start  # noqa: E402

log = start(snakemake)  # noqa: F821
import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from bnstudy import batch_size, io, latex, stats  # noqa: E402

inp, out, p = snakemake.input, snakemake.output, snakemake.params  # noqa: F821
runs = pd.concat([io.read_table(f) for f in inp.cells], ignore_index=True)
runs = runs.sort_values(["normaliser", "batch_size", "mode", "seed"], kind="stable")
summary = stats.summarise_over_seeds(runs, ["normaliser", "batch_size", "mode"], "accuracy", p.confidence)
io.write_table(out.runs, runs)
io.write_table(out.summary_table, summary)
io.write_json(out.summary, batch_size.summary_json(summary))

published = yaml.safe_load(open(inp.published))["batch_size"]
cell = {(r.normaliser, int(r.batch_size), r.mode): r for r in summary.itertuples(index=False)}
macros = {"gridSeeds": str(runs["seed"].nunique()), "publishedSeeds": str(published["seeds"])}
for (norm, b, mode), r in cell.items():
    macros[latex.macro_name("acc", mode, norm, "b", b)] = latex.fmt(r.mean)
    macros[latex.macro_name("sd", mode, norm, "b", b)] = latex.fmt(r.sd)
sizes = sorted({k[1] for k in cell})
macros |= {"batchMin": str(sizes[0]), "batchMax": str(sizes[-1])}
for (norm, b, mode), r in cell.items():
    for end, size in (("min", sizes[0]), ("max", sizes[-1])):
        if b == size:
            macros[latex.macro_name("acc", mode, norm, end)] = latex.fmt(r.mean)
latex.write_macros(out.macros, macros, "Study 2: accuracy by training batch size")


def ours(norm, b, mode):
    r = cell.get((norm, b, mode))
    return "--" if r is None else f"{r.mean:.3f} $\\pm$ {latex.fmt(r.sd)}"


def theirs(key, b):
    v = published[key].get(b)
    return "--" if v is None else f"{v:.3f}"


rows = []
for b in sorted({k[1] for k in cell}):
    rows.append([str(b),
                 ours("none", b, "inference"), theirs("none", b),
                 ours("batchnorm", b, "inference"), theirs("batchnorm", b),
                 ours("batchnorm", b, "training"), theirs("batchnorm_training_mode", b)])
latex.write_table(
    out.table,
    ["batch", "none", "publ.", "batch norm", "publ.", "BN, training mode", "publ."],
    rows, "rllllll", "Study 2: ours (mean $\\pm$ sd over seeds) beside the published values",
)
log.info("summary rows: %d", len(summary))
