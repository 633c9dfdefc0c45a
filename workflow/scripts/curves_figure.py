"""Rule figure_curves: validation accuracy by epoch, or without a validation split the training loss
and accuracy by epoch (bnstudy.studies.curves.figure)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.paper import figures
from bnstudy.studies.curves import figure

by_epoch = io.read_table(snakemake.input.by_epoch)
draw = figure.curves if "validation_accuracy" in by_epoch.columns else figure.training_curves
figures.save(draw(by_epoch), snakemake.output.pdf, snakemake.output.png)
log.info("figure written")
