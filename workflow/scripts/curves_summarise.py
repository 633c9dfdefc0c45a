"""Rule summarise_curves: per grid cell, validation accuracy by epoch, the gain over the last epochs and
the test accuracy (bnstudy.studies.curves.report); without a validation split, the training loss and
accuracy by epoch and their change over the last epochs (bnstudy.studies.curves.training); JSON,
macros, table."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
import pandas as pd

from bnstudy.base import io
from bnstudy.paper import latex
from bnstudy.studies.curves import report, training

inp, out, p = snakemake.input, snakemake.output, snakemake.params
files = [(name, b, io.read_table(f)) for (name, b), f in zip(p.cells, inp.epochs, strict=True)]
accuracy = pd.concat([io.read_table(f) for f in inp.accuracy], ignore_index=True)
settings = dict(p.settings)
tests = report.test_accuracy(accuracy, p.normalisers)
if p.validation:
    epochs = report.epochs_table(files)
    by_epoch = report.by_epoch(epochs, p.normalisers)
    cells = report.cells(epochs, p.normalisers, settings["last_epochs"], settings["threshold"])
    macros, table = report.macros(cells, tests, settings), report.latex_table(cells, tests)
    summary = report.summary_json(cells, tests, settings)
else:
    epochs = training.epochs_table(files)
    by_epoch = training.by_epoch(epochs, p.normalisers)
    cells = training.cells(epochs, p.normalisers, settings["last_epochs"], settings["threshold"])
    macros, table = training.macros(cells, tests, settings), training.latex_table(cells)
    summary = training.summary_json(cells, tests, settings)
io.write_table(out.by_epoch, by_epoch)
io.write_table(out.cells, cells)
io.write_json(out.summary, summary)
latex.write_macros(out.macros, macros, "Training curves")
latex.write_table(out.table, *table)
log.info("cells %s", cells.to_dict("records"))
