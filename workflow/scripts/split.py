"""Rule split: the data set's standardised training and test parts (and validation split)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
import pandas as pd

from bnstudy.base import io
from bnstudy.nets import data

out, p = snakemake.output, snakemake.params
config = {"split": {"seed": p.seed}}
if "data" in p.keys():
    config["data"] = dict(p.data)
else:
    config["split"]["test_size"] = p.test_size
split = data.split(config)
io.write_array(out.x_train, split.x_train)
io.write_array(out.y_train, split.y_train)
io.write_array(out.x_test, split.x_test)
io.write_array(out.y_test, split.y_test)
parts = [("train", split.train_index), ("test", split.test_index)]
if split.validation_index is not None:
    io.write_array(out.x_validation, split.x_validation)
    io.write_array(out.y_validation, split.y_validation)
    parts.insert(1, ("validation", split.validation_index))
# `row`: the row in the data set (the digits: of its 1,797; Fashion-MNIST: of its training
# file for train and validation, of its test file for test)
io.write_table(
    out.indices,
    pd.DataFrame(
        {
            "row": [int(i) for _, index in parts for i in index],
            "half": [name for name, index in parts for _ in index],
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
if split.validation_index is not None:
    log.info("validation %d rows", len(split.y_validation))
