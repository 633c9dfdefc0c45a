"""Rule summarise_companions: estimates with bootstrap intervals, over networks, JSON summary, macros, tables."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
import pandas as pd
import yaml

from bnstudy.base import io
from bnstudy.evaluation.families import declared
from bnstudy.paper import latex
from bnstudy.studies.companions import summary as companions_summary

inp, out, p = snakemake.input, snakemake.output, snakemake.params
probes = pd.concat([io.read_table(f) for f in [inp.dependence, inp.dependence_keep, *inp.cells]], ignore_index=True)
published = yaml.safe_load(open(inp.published))["companions"]
families = {name: declared(dict(p.families), name) for name in p.families}  # the ones this config forms
protocol_probes = pd.concat([io.read_table(f) for f in [inp.dependence, *inp.kept]], ignore_index=True)
against = companions_summary.published_against(families, protocol_probes, published)  # as the protocols rule
params = {k: v for k, v in dict(p).items() if k != "families"}
result = companions_summary.summarise_all(probes, published, params, against)
for name in ("summary_table", "grid_table", "networks_table"):
    io.write_table(out[name], result[name])
io.write_json(out.summary, result["summary"])
latex.write_macros(out.macros, result["macros"], "Study 1: companion dependence")
for name, (header, rows, align, comment) in result["tables"].items():
    latex.write_table(out[name], header, rows, align, comment)
log.info("first dependence network: %s", {k: v for k, v in result["summary"].items() if k != "networks"})
