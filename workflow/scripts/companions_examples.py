"""Rule companion_examples: the seeded, stratified test examples of the companion study."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # noqa: F821
from _setup import start  # noqa: E402

log = start(snakemake, torch=False)  # noqa: F821
import pandas as pd  # noqa: E402

from bnstudy import companions, io  # noqa: E402

inp, p = snakemake.input, snakemake.params  # noqa: F821
y = io.read_array(inp.y_test)
split = io.read_table(inp.indices)
digits_row = split.loc[split["half"] == "test", "row"].to_numpy()  # test half, in test-row order
examples = companions.choose_examples(y, p.examples_per_class, p.seed)
io.write_table(snakemake.output.examples, pd.DataFrame({  # noqa: F821
    "example": examples, "label": y[examples], "digits_row": digits_row[examples],
}))
log.info("%d examples: %s", len(examples), examples.tolist())
