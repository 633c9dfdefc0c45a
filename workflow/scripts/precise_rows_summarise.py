"""Rule summarise_precise_rows: per training batch size and statistic, accuracy against the exact
statistics paired by seed at the level of the family precise_rows, the running averages' interval the
batch-size study's (its paired summary, gains.csv; its family remedies); JSON, macros, table
(bnstudy.studies.precise_rows.report)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
import pandas as pd

from bnstudy.base import io
from bnstudy.evaluation.families import declared
from bnstudy.paper import latex
from bnstudy.studies.precise_rows import report

inp, out, p = snakemake.input, snakemake.output, snakemake.params
family, remedies = declared(p.families, "precise_rows"), declared(p.families, "remedies")
rows = pd.concat([io.read_table(f) for f in inp.rows], ignore_index=True)
cells = report.cells(report.per_seed(rows), p.budgets, p.confidence, family)
cells = report.adjusted(cells, io.read_table(inp.gains))
note = report.intervals(remedies, family, int(cells[cells["key"] == report.EMA]["family"].max()), p.budgets)
io.write_table(out.cells, cells)
io.write_json(out.summary, report.summary_json(cells, p.budgets, p.replicates, p.seed, p.confidence, note, family))
latex.write_macros(out.macros, report.macros(cells, p.budgets, p.replicates, p.seed, family), "PreciseBN on a budget")
latex.write_table(out.table, *report.latex_table(cells, p.budgets, note, remedies.tag))
log.info("cells %s", cells.to_dict("records"))
