"""Rule probe_conv: study 1 at batches of two on the batch-norm convolutional networks
(bnstudy.studies.conv.science: companion_pairs, probe, flip_rates)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.nets import conv_train
from bnstudy.studies.conv import science as conv_study

inp, out, p = snakemake.input, snakemake.output, snakemake.params
spec = conv_train.ConvSpec.from_params("batchnorm", p.spec)
x_test, y_test = io.read_array(inp.x_test), io.read_array(inp.y_test)
examples = io.read_table(inp.examples)
exact = conv_study.exact_subset(
    examples["example"].to_numpy(), examples["label"].to_numpy(), int(p.exact_per_class), int(p.seed)
)
pool = conv_study.exact_pool(len(y_test), p.exact_companions, int(p.seed))
pairs = conv_study.companion_pairs(examples["example"].to_numpy(), y_test, int(p.draws), exact, int(p.seed), pool)
weights = io.read_weights(inp.weights[0])
probes = conv_study.probe(
    weights, spec, [int(b) for b in p.batch_sizes], [int(s) for s in p.seeds], x_test, y_test, pairs
)
rates = conv_study.flip_rates(probes)
io.write_table(out.probes, probes)
io.write_table(out.rates, rates)
log.info("%d batches per network; rates %s", len(pairs), rates.to_dict("records"))
