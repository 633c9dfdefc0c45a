"""Rule evaluate_remedies: batch norm's inference accuracy under replacement running statistics."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.nets import recipe, weights
from bnstudy.studies.batch_size import evaluation

inp, out, p = snakemake.input, snakemake.output, snakemake.params
stacked, spec, metas = weights.read(inp.weights)
b = int(snakemake.wildcards.batch_size)
data = {k: io.read_array(inp[k]) for k in ("x_train", "y_train", "x_test", "y_test")}
seeds = [int(m["seed"]) for m in metas]
correct = []
accuracy, distances = evaluation.remedy_rows(
    stacked,
    spec,
    seeds,
    data["x_train"],
    data["y_train"],
    data["x_test"],
    data["y_test"],
    b,
    p.seed,
    recipe.Recipe.from_metadata(metas[0]).last_batch,
    correct=correct,
)
cell = {"normaliser": spec.normaliser, "batch_size": b}
tracked = stacked["1.num_batches_tracked"].reshape(len(metas), -1)[:, 0]  # one count per model
updates = {int(m["seed"]): int(tracked[i]) for i, m in enumerate(metas)}
io.write_table(out.accuracy, [cell | r | {"updates": updates[r["seed"]]} for r in accuracy])
io.write_table(out.distances, [cell | r for r in distances])
io.write_table(out.correct, [cell | r for r in correct])
log.info("accuracy %s", accuracy)
