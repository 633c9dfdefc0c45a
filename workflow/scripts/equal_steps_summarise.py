"""Rule summarise_equal_steps: the arms against the grid's networks of the same seeds, paired by seed;
JSON, macros, table (bnstudy.studies.equal_steps.report)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
import pandas as pd

from bnstudy.base import io
from bnstudy.evaluation.families import declared
from bnstudy.paper import latex
from bnstudy.studies.equal_steps import report

inp, out, p = snakemake.input, snakemake.output, snakemake.params
arms = pd.concat([io.read_table(f) for f in inp.arms], ignore_index=True)
grid = pd.concat([io.read_table(f) for f in inp.grid], ignore_index=True)
table = report.per_seed(arms, grid, p.seeds)
steps = {int(b): int(s) for b, s in zip(arms["batch_size"], arms["own_steps"])}
steps |= {int(b): int(s) for b, s in zip(arms["other"], arms["steps"])}
family = declared(p.families, "equal_steps")
cells = report.comparisons(table, p.arms, p.batch_sizes, steps, p.confidence, family)
io.write_table(out.cells, cells)
io.write_json(out.summary, report.summary_json(cells, p.seeds, p.batch_sizes, p.confidence, family, p.arms))
latex.write_macros(out.macros, report.macros(cells, p.seeds, p.batch_sizes, family), "Batch size at equal steps")
latex.write_table(out.table, *report.latex_table(cells, report.intervals(family, p.arms)))
log.info("comparisons %s", cells.to_dict("records"))
