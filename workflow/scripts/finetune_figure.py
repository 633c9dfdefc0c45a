"""Rule figure_finetune: the networks along the fine-tuning (bnstudy.figures_finetune)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy import figures, io
from bnstudy.figures_finetune import finetune

start_values = io.read_json(snakemake.input.summary)["start"]
start_means = {
    "inference_accuracy": start_values["inference_before"]["mean"],
    "var_to_exact": start_values["start_var_to_exact"]["mean"],
}
fig = finetune(io.read_table(snakemake.input.along), start_means, networks=io.read_table(snakemake.input.networks))
figures.save(fig, snakemake.output.pdf, snakemake.output.png)
log.info("figure written")
