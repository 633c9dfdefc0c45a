"""Rule lr_sweep_split: a stratified, seeded validation split of the training half."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.studies.lr_sweep import science as lr_sweep

p = snakemake.params
fit, validation = lr_sweep.validation_split(io.read_array(snakemake.input.y), p.fraction, p.seed)
io.write_table(snakemake.output.split, lr_sweep.split_table(fit, validation))
log.info("fit %d rows, validation %d rows", len(fit), len(validation))
