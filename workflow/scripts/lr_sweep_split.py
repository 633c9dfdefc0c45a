"""Rule lr_sweep_split: a stratified, seeded validation split of the training half, or its K stratified folds."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.studies.lr_sweep import science as lr_sweep

p = snakemake.params
y = io.read_array(snakemake.input.y)
if "folds" in p.keys():
    fold = lr_sweep.fold_split(y, p.folds, p.seed)
    io.write_table(snakemake.output.split, lr_sweep.fold_table(fold))
    log.info("rows per fold %s", [int(v) for v in (fold[:, None] == range(p.folds)).sum(axis=0)])
else:
    fit, validation = lr_sweep.validation_split(y, p.fraction, p.seed)
    io.write_table(snakemake.output.split, lr_sweep.split_table(fit, validation))
    log.info("fit %d rows, validation %d rows", len(fit), len(validation))
