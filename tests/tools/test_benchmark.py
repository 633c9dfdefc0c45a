"""The benchmark's operation counts (bnstudy.tools.benchmark, bnstudy.tools.convbench): the
GFLOP/s it prints are counted products over CPU time, so the counts are checked by hand here."""

import numpy as np

from bnstudy.nets.model import NetSpec
from bnstudy.nets.recipe import Recipe
from bnstudy.tools import benchmark, convbench


def small(normaliser="batchnorm", **settings):
    return NetSpec(normaliser, widths=(4, 3, 2, 5), **settings)


def test_mlp_training_counts_forward_weight_and_input_gradients_but_the_inputs():
    # products 4x3, 3x2, 2x5 = 12, 6, 10: forward 28, weight gradients 28, input gradients 6 + 10
    assert benchmark.mlp_training_flops(small()) == 2 * (28 + 28 + 16)


def test_rows_per_run_follow_the_epochs_cut():
    assert benchmark.rows_per_run(10, Recipe(batch_size=4, epochs=3)) == 3 * 8  # drop: 2 left over
    assert benchmark.rows_per_run(10, Recipe(batch_size=4, epochs=3, last_batch="keep")) == 3 * 10
    assert benchmark.rows_per_run(9, Recipe(batch_size=4, epochs=1, last_batch="keep")) == 8  # 1 row: dropped


def test_probe_counts_are_the_products_each_side_performs():
    batches = np.array([[0, 1, 2], [3, 0, 1]], np.int64)  # two batches of 3
    plans = [("random b=3", batches), ("random b=2", np.array([[5, 6]], np.int64))]
    loop, compiled = benchmark.probe_flops(small(), rows=7, plans=plans, models=2)
    # the loop: every row of every batch through 12 + 6 + 10 products
    assert loop == 2 * 2 * (6 + 2) * 28
    # compiled: the first layer once per test row; the second on every row of a batch; the last on row 0
    assert compiled == 2 * 2 * (7 * 12 + (6 + 2) * 6 + 3 * 10)
    # a normaliser without batch statistics: each distinct row 0 once (0, 3, 5), after the first layer
    _, rowwise = benchmark.probe_flops(small("layernorm"), rows=7, plans=plans, models=2)
    assert rowwise == 2 * 2 * (7 * 12 + 3 * (6 + 10))


def test_the_convolutional_rows_describe_the_fashion_configs_network():
    import yaml

    layers = yaml.safe_load(convbench.STUDY_CONFIG.read_text())["network"]["layers"]
    spec = convbench.study_network()
    assert spec.channels == tuple(layer["channels"] for layer in layers)
    text = convbench.describe(spec)
    assert text.startswith("channels " + "-".join(str(layer["channels"]) for layer in layers))
    skips = [f"layer {i + 1} adds layer {layer['skip'] + 1}" for i, layer in enumerate(layers) if "skip" in layer]
    assert skips and all(s in text for s in skips)
