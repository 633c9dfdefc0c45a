"""Rule summarise_running_stats: JSON summary, macros and LaTeX tables of studies 3 and 5."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
import pandas as pd
import yaml

from bnstudy.base import io
from bnstudy.paper import latex
from bnstudy.studies.running_stats import report as running_stats_report

inp, out, p = snakemake.input, snakemake.output, snakemake.params
with open(inp.published) as f:
    published = yaml.safe_load(f)["running_stats"]
result = running_stats_report.summarise(
    io.read_table(inp.passes),
    io.read_table(inp.checks),
    io.read_array(inp.population),
    pd.concat([io.read_table(f) for f in inp.sorted_cells], ignore_index=True),
    io.read_table(inp.shuffles),
    published,
    dict(p),
)
io.write_json(out.summary, result["summary"])
io.write_table(out.sorted_training, result["sorted_training"])
io.write_table(out.shuffle_summary, result["shuffle_summary"])
latex.write_macros(out.macros, result["macros"], "Studies 3 and 5: running statistics and what tests can see")
for name in ("table_errors", "table_selfchecks", "table_remedies", "table_sorted", "table_shuffles"):
    header, rows, align, comment = result[name]
    latex.write_table(out[name], header, rows, align, comment)
log.info("macros: %d", len(result["macros"]))
