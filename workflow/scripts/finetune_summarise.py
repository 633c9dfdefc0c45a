"""Rule summarise_finetune: the fine-tuning study's summary JSON, macros, table and mean path."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.evaluation.families import declared
from bnstudy.paper import latex
from bnstudy.studies.finetune import macros as finetune_macros
from bnstudy.studies.finetune import summary as finetune_summary
from bnstudy.studies.finetune import tables as finetune_tables

inp, out, p = snakemake.input, snakemake.output, snakemake.params
networks = io.read_blocks(inp.networks).to_dict("records")
summary = finetune_summary.summarise(networks, p.confidence)
settings = {
    "normaliser": "batchnorm",
    "source_batch_size": p.source_batch_size,
    "batch_size": p.batch_size,
    "steps": p.steps,
    "lrs": list(p.lrs),
    "every": p.every,
    "seed": p.seed,
    "momentum": p.momentum,
    "confidence": p.confidence,
    "train_rows": len(io.read_array(inp.y_train)),
    "optimizer_state": "fresh Adam state at the start of every fine-tuning",
    "shift": dict(p.shift),
}
arm_rows = io.read_blocks(inp.arms, "condition")
family = declared(dict(p.families), finetune_summary.FAMILY)
arms = finetune_summary.summarise_arms(arm_rows.to_dict("records"), p.confidence, family)
families = finetune_summary.families(arms, p.confidence, family)
io.write_json(out.summary, {"settings": settings} | summary | {"arms": arms, "families": families})
along = io.read_blocks(inp.along)
io.write_table(out.along, finetune_summary.along_means(along.to_dict("records")))
macros = finetune_macros.macros(summary, settings) | finetune_macros.arms_macros(arms, settings, family)
macros |= finetune_macros.abstract_macros(arms, settings, family)
latex.write_macros(out.macros, macros, "Fine-tuning in small batches")
finetune_tables.write_table(out.table, summary)
finetune_tables.write_arms_table(out.arms_table, arms, family)
log.info("macros: %d", len(macros))
