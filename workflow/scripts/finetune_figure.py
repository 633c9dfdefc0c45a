"""Rule figure_finetune: the networks along the fine-tuning (bnstudy.studies.finetune.figure)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.paper import figures
from bnstudy.studies.finetune.figure import finetune

start_values = io.read_json(snakemake.input.summary)["start"]
start_means = {
    "inference_accuracy": start_values["inference_before"]["mean"],
    "var_to_exact": start_values["start_var_to_exact"]["mean"],
}
networks = io.read_blocks(snakemake.input.networks)
fig = finetune(io.read_table(snakemake.input.along), start_means, networks=networks)
figures.save(fig, snakemake.output.pdf, snakemake.output.png)
log.info("figure written")
