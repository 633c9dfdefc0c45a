"""Rule finetune_arms: batch norm live, frozen and at momentum 0, and the controls (no normaliser,
layer norm), fine-tuned on the training half as it is and with shifted inputs (bnstudy.studies.finetune.science)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.evaluation import accuracy
from bnstudy.studies.finetune import science as finetune

inp, p = snakemake.input, snakemake.params
cells = {
    n: accuracy.load_trained([w for w in inp.weights if f"/{n}/" in w], inp.x_test, inp.y_test, inp.y_train)
    for n in p.normalisers
}
settings = {
    "batch_size": p.batch_size,
    "steps": p.steps,
    "lrs": list(p.lrs),
    "seed": p.seed,
    "shift": dict(p.shift),
}
rows = finetune.arms_cell(cells, io.read_array(inp.x_train), io.read_array(inp.y_train), settings)
for row in rows:
    log.info("%s", row)
io.write_table(snakemake.output.arms, rows)
