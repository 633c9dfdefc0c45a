"""Rule evaluate_precise_rows: batch norm's inference accuracy with statistics recomputed from a
budget of training rows (bnstudy.studies.precise_rows.science)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.nets import weights
from bnstudy.studies.precise_rows import science

inp, p = snakemake.input, snakemake.params
stacked, spec, metas = weights.read(inp.weights)
b = int(snakemake.wildcards.batch_size)
data = {k: io.read_array(inp[k]) for k in ("x_train", "y_train", "x_test", "y_test")}
rows = science.evaluate(
    stacked, spec, [int(m["seed"]) for m in metas], data, b, p.settings | {"last_batch": p.last_batch}
)
io.write_table(snakemake.output.rows, [{"batch_size": b} | r for r in rows])
log.info("rows %s", rows)
