"""Rule summarise_curves: per grid cell, validation accuracy by epoch, the gain over the last epochs and
the test accuracy; JSON, macros, table (bnstudy.studies.curves.report)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
import pandas as pd

from bnstudy.base import io
from bnstudy.paper import latex
from bnstudy.studies.curves import report

inp, out, p = snakemake.input, snakemake.output, snakemake.params
files = [(name, b, io.read_table(f)) for (name, b), f in zip(p.cells, inp.epochs, strict=True)]
epochs = report.epochs_table(files)
accuracy = pd.concat([io.read_table(f) for f in inp.accuracy], ignore_index=True)
settings = dict(p.settings)
by_epoch = report.by_epoch(epochs, p.normalisers)
cells = report.cells(epochs, p.normalisers, settings["last_epochs"], settings["threshold"])
tests = report.test_accuracy(accuracy, p.normalisers)
io.write_table(out.by_epoch, by_epoch)
io.write_table(out.cells, cells)
io.write_json(out.summary, report.summary_json(cells, tests, settings))
latex.write_macros(out.macros, report.macros(cells, tests, settings), "Training curves")
latex.write_table(out.table, *report.latex_table(cells, tests))
log.info("cells %s", cells.to_dict("records"))
