"""Rule summarise_conv: the convolutional network's cells, paired differences and flip rates
beside the MLP's (bnstudy.studies.conv.report): tables, JSON, macros, the LaTeX table."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
import pandas as pd

from bnstudy.base import io, normalisers
from bnstudy.paper import latex, network_prose
from bnstudy.studies.conv import report as conv_report

inp, out, p = snakemake.input, snakemake.output, snakemake.params
runs = pd.concat([io.read_table(f) for f in inp.runs], ignore_index=True)
rates = io.read_table(inp.rates)
probes = io.read_table(inp.probes)
sizes = sorted(int(b) for b in runs.batch_size.unique())
mlp = conv_report.mlp_rows(io.read_json(inp.mlp), io.read_table(inp.mlp_flips), sorted(runs.normaliser.unique()), sizes)
exact = probes[probes.design == "exact"]
# the network as the config gives it: conv.channels, or conv.layers
network = {"layers": [dict(layer) for layer in p.layers]} if p.layers else {"channels": [int(c) for c in p.channels]}
design = network | {
    "groups": int(p.groups),
    "epochs": int(p.epochs),
    "lr": float(p.lr),
    "draws": int(p.draws),
    "exact_per_class": int(p.exact_per_class),
    "exact_examples": int(exact.example.nunique()),
    "examples": int(probes.example.nunique()),
    "pairs": int(probes[(probes.batch_size == sizes[0]) & (probes.seed == probes.seed.min())].batches.sum()),
    "mlp_seeds": int(p.mlp_seeds),
}
if p.exact_companions is not None:
    design["exact_companions"] = int(p.exact_companions)
side = network_prose.square_side(io.read_array(inp.x_test).shape[1])  # the images' side, from the data
result = conv_report.report(runs, rates, mlp, p.confidence, normalisers.labels(), design, side)
io.write_table(out.side, result["side"])
io.write_table(out.paired, result["paired"])
io.write_json(out.summary, result["summary"])
latex.write_macros(out.macros, result["macros"], "Convolutional networks")
latex.write_table(out.table, *result["table"])
log.info("paired %s", result["paired"].to_dict("records"))
