"""Rule summarise_serving: the serving study's summary JSON, macros, table and mean stream."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.evaluation.families import declared
from bnstudy.paper import latex
from bnstudy.studies.serving import estimates as serving
from bnstudy.studies.serving import report as serving_report

inp, out, p = snakemake.input, snakemake.output, snakemake.params
networks = io.read_table(inp.networks).to_dict("records")
declarations = dict(p.families)  # the study's own: serving_order, serving_change (serving_adaptation)
summary = serving.summarise(networks, p.confidence, declarations)
families = {name: declared(declarations, name) for name in declarations}
test_rows = int(networks[0]["test_rows"])
stream_rows = int(networks[0]["stream_rows"])
per_pass = stream_rows // p.batch_size  # batches per pass; the leftover rows are not served
settings = {
    "normaliser": p.normaliser,
    "batch_size": p.batch_size,
    "passes": p.passes,
    "seed": p.seed,
    "momentum": p.momentum,
    "confidence": p.confidence,
    "test_rows": test_rows,
    "stream_rows": stream_rows,
    "held_out_rows": int(networks[0]["held_out_rows"]),
    "held_out": p.held_out,
    "replicates": p.replicates,
    "served": per_pass * p.batch_size,
    "batches": per_pass,
}
records = serving.family_records(summary, p.confidence, declarations)
io.write_json(out.summary, {"settings": settings, "by_train_batch_size": summary, "families": records})
io.write_table(out.along, serving.along_means(io.read_table(inp.along).to_dict("records")))
macros = serving_report.macros(summary, settings, families)
latex.write_macros(out.macros, macros, "Training-mode serving with live running statistics")
serving_report.write_table(out.table, summary, families[serving.CHANGE])
log.info("macros: %d", len(macros))
