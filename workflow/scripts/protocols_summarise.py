"""Rule summarise_protocols: study 1's dependence networks with the leftover rows dropped and kept,
over networks and paired by seed, beside the published table (bnstudy.studies.companions.protocols)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
import pandas as pd
import yaml

from bnstudy.base import io
from bnstudy.evaluation.families import declared
from bnstudy.paper import latex
from bnstudy.studies.companions import protocols as protocols_report

inp, out, p = snakemake.input, snakemake.output, snakemake.params
probes = pd.concat([io.read_table(f) for f in [inp.dropped, *inp.kept]], ignore_index=True)
with open(inp.published) as f:
    published = yaml.safe_load(f)["companions"]
families = {name: declared(dict(p.families), name) for name in p.families}  # the ones this config forms
result = protocols_report.report(probes, published, p.confidence, families)
io.write_table(out.networks, result["networks"])
io.write_table(out.over_networks, result["over_networks"])
io.write_table(out.paired, result["paired"])
io.write_json(out.summary, result["summary"])
latex.write_macros(out.macros, result["macros"], "Study 1 under both protocols: leftover rows dropped and kept")
latex.write_table(out.latex_table, *result["latex_table"])
log.info("reproduces %s", result["summary"]["reproduces_flip_rate"])
