"""Rule summarise_batch_size: tidy tables over seeds, paired comparisons, JSON summary, macros, LaTeX tables."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
import pandas as pd
import yaml

from bnstudy.base import io
from bnstudy.paper import latex
from bnstudy.studies.batch_size import summary as batch_size_summary

inp, out, p = snakemake.input, snakemake.output, snakemake.params
distances = (
    pd.concat([io.read_table(f) for f in inp.distances], ignore_index=True)
    if inp.distances
    else pd.DataFrame(
        columns=["normaliser", "batch_size", "seed", "statistics", "layer", "mean_distance", "var_distance"]
    )
)
correct = pd.concat(
    [io.read_table(f) for f in [*inp.correct, *inp.remedies_correct]]
    + [batch_size_summary.kept(io.read_table(f)) for f in inp.keep_correct],
    ignore_index=True,
)
result = batch_size_summary.summarise(
    cells=[io.read_table(f) for f in inp.cells] + [batch_size_summary.kept(io.read_table(f)) for f in inp.keep],
    remedy_runs=[io.read_table(f) for f in inp.remedies],
    distances=distances,
    correct=correct,
    published=yaml.safe_load(open(inp.published))["batch_size"],
    momentum=p.momentum,
    confidence=p.confidence,
    families=p.families,
)
for name in ("runs", "summary_table", "distances", "distance_summary", "gains", "paired", "equivalence"):
    io.write_table(out[name], result[name])
io.write_json(out.summary, result["summary"])
latex.write_macros(out.macros, result["macros"], "Study 2: accuracy by training batch size, remedies")
for name, (header, rows, align, comment) in result["tables"].items():
    latex.write_table(out[name], header, rows, align, comment)
log.info("paired comparisons %s", result["gains"].to_dict("records"))
