"""Rule summarise_accumulation: accuracy of every configuration (with running and with recomputed
statistics), paired differences at the levels of the study's declared families (families.accumulation,
families.accumulation_other), accumulation against ghost batch norm; JSON, macros, table
(bnstudy.studies.accumulation.report)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
import pandas as pd

from bnstudy.base import io
from bnstudy.paper import latex
from bnstudy.studies.accumulation import report as accumulation_report

inp, out, p = snakemake.input, snakemake.output, snakemake.params
runs = pd.concat([io.read_table(f) for f in inp.runs], ignore_index=True)
differences = pd.concat([io.read_table(f) for f in inp.differences], ignore_index=True)
grid = pd.concat([io.read_table(f) for f in inp.grid], ignore_index=True)
# the grid's networks in inference mode with the exact statistics of the training half (evaluate_remedies)
remedies = pd.concat([io.read_table(f) for f in inp.recomputed], ignore_index=True)
recomputed = remedies[remedies["mode"] == "exact"].assign(mode="recomputed")
grid = pd.concat([grid, recomputed[["normaliser", "batch_size", "seed", "mode", "accuracy"]]], ignore_index=True)
result = accumulation_report.report(
    runs,
    grid,
    differences,
    p.batch_size,
    p.micro_batches,
    p.confidence,
    p.epochs,
    len(io.read_array(inp.y)),
    p.lr,
    dict(p.families),
)
io.write_table(out.table, result["table"])
io.write_table(out.cells, result["cells"])
io.write_table(out.paired, result["paired"])
io.write_table(out.recompute, result["recompute"])
io.write_table(out.closeness, result["closeness"])
io.write_json(out.summary, result["summary"])
latex.write_macros(out.macros, result["macros"], "Gradient accumulation and ghost batch norm")
latex.write_table(out.latex_table, *result["latex_table"])
log.info("paired %s", result["paired"].to_dict("records"))
log.info("closeness %s", result["closeness"].to_dict("records"))
