"""Rule summarise_renorm_ramp: each schedule's batch renorm against the grid's batch norm and batch
renorm of the same seeds, paired by seed; JSON, macros, table (bnstudy.studies.renorm_ramp.report)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
import pandas as pd

from bnstudy.base import io
from bnstudy.evaluation.families import declared
from bnstudy.paper import latex
from bnstudy.studies.renorm_ramp import design, report

inp, out, p = snakemake.input, snakemake.output, snakemake.params
study = pd.concat([io.read_table(f) for f in inp.study], ignore_index=True)
grid = pd.concat([io.read_table(f) for f in inp.grid], ignore_index=True)
schedules, renorm = [dict(v) for v in p.schedules], dict(p.batchrenorm)
table = report.per_seed(study, grid, p.seeds)
family = declared(dict(p.families), report.FAMILY)
cells = report.comparisons(table, [v["name"] for v in schedules], p.batch_sizes, p.confidence, family)
io.write_table(out.cells, cells)
io.write_json(out.summary, report.summary_json(cells, p.seeds, p.batch_sizes, schedules, p.confidence, family))
labels = {v["name"]: latex.escape(v["label"]) for v in schedules}
descriptions = {design.GRID: design.describe({}, renorm)} | {v["name"]: design.describe(v, renorm) for v in schedules}
steps = {int(b): int(s) for b, s in zip(study["batch_size"], study["steps"])}
limits = {(r["schedule"], int(r["batch_size"])): (r["last_rmax"], r["last_dmax"]) for _, r in study.iterrows()}
targets = {v["name"]: (design.settings(v, renorm)["rmax"], design.settings(v, renorm)["dmax"]) for v in schedules}
ends = design.unfinished_sentence(limits, targets, labels)
macros = report.macros(cells, p.seeds, p.batch_sizes, labels, descriptions, steps, p.confidence, family, ends)
latex.write_macros(out.macros, macros, "Batch renorm's ramp")
limits |= {(design.GRID, b): design.grid_last(renorm, s) for b, s in steps.items()}
names = {design.GRID: "grid"} | {v["name"]: v["name"].replace("_", " ") for v in schedules}
latex.write_table(out.table, *report.latex_table(cells, names, limits, family))
log.info("comparisons %s", cells.to_dict("records"))
