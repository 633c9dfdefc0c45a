"""Serving's rule in the cost model (bnstudy.pipeline.plan): served batches of each network."""

from __future__ import annotations

import math

from bnstudy.pipeline.plan import Work, network_family, row_multiply_adds, test_rows


def _serving(p, wc, config):
    batches = math.ceil(test_rows(config) / p["batch_size"])
    return (
        len(p["train_batch_sizes"])
        * len(config["grid"]["seeds"])
        * (3 if p.get("training_rows") else 2)  # the random and sorted streams, and the control (counted as a stream)
        * p["passes"]
        * batches
        * row_multiply_adds(config)
    )


WORK = {
    "serve_stream": Work(
        "served batches x M multiply-adds per row (networks x 2 streams x passes x batches x network)",
        _serving,
        ("serving.passes", "serving.train_batch_sizes", "grid.seeds"),
        variant=network_family,
    ),
}
