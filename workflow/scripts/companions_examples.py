"""Rule companion_examples: the seeded, stratified test examples of the companion study."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
import pandas as pd

from bnstudy.base import io
from bnstudy.studies.companions import draws

inp, p = snakemake.input, snakemake.params
y = io.read_array(inp.y_test)
split = io.read_table(inp.indices)
digits_row = split.loc[split["half"] == "test", "row"].to_numpy()  # test half, in test-row order
examples = draws.choose_examples(y, p.examples_per_class, p.seed)
io.write_table(
    snakemake.output.examples,
    pd.DataFrame(
        {
            "example": examples,
            "label": y[examples],
            "digits_row": digits_row[examples],
        }
    ),
)
log.info("%d examples: %s", len(examples), examples.tolist())
