"""Rule summarise_companions: estimates with bootstrap intervals, over networks, JSON summary, macros, tables."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
import pandas as pd
import yaml

from bnstudy.base import io
from bnstudy.paper import latex
from bnstudy.studies.companions import summary as companions_summary

inp, out, p = snakemake.input, snakemake.output, snakemake.params
probes = pd.concat([io.read_table(f) for f in [inp.dependence, inp.dependence_keep, *inp.cells]], ignore_index=True)
result = companions_summary.summarise_all(probes, yaml.safe_load(open(inp.published))["companions"], dict(p))
for name in ("summary_table", "grid_table", "networks_table"):
    io.write_table(out[name], result[name])
io.write_json(out.summary, result["summary"])
latex.write_macros(out.macros, result["macros"], "Study 1: companion dependence")
for name, (header, rows, align, comment) in result["tables"].items():
    latex.write_table(out[name], header, rows, align, comment)
log.info("first dependence network: %s", {k: v for k, v in result["summary"].items() if k != "networks"})
