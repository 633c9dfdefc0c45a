"""Rule split: stratified, standardised halves of the digits."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
import pandas as pd

from bnstudy import data, io

out, p = snakemake.output, snakemake.params
split = data.split_digits(p.seed, p.test_size)
io.write_array(out.x_train, split.x_train)
io.write_array(out.y_train, split.y_train)
io.write_array(out.x_test, split.x_test)
io.write_array(out.y_test, split.y_test)
io.write_table(
    out.indices,
    pd.DataFrame(
        {
            "row": list(split.train_index) + list(split.test_index),
            "half": ["train"] * len(split.train_index) + ["test"] * len(split.test_index),
        }
    ),
)
io.write_table(
    out.standardisation,
    pd.DataFrame(
        {
            "feature": range(len(split.mean)),
            "mean": split.mean,
            "scale": split.scale,
        }
    ),
)
log.info("train %d rows, test %d rows", len(split.y_train), len(split.y_test))
