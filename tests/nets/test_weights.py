"""Weights files of seed blocks: blocks, round trip, metadata, the module for users."""

import numpy as np
import pytest

from bnstudy.base import io
from bnstudy.compiled import kernels
from bnstudy.nets import model, weights
from bnstudy.nets.model import NetSpec
from bnstudy.nets.recipe import Recipe


def test_blocks_group_seeds_by_fixed_ranges_whatever_their_order():
    assert weights.blocks([0, 1, 2, 3, 4], 5) == {"0-4": [0, 1, 2, 3, 4]}
    assert weights.blocks([5, 0, 4, 1], 2) == {"0-1": [0, 1], "4-5": [4, 5]}
    assert weights.blocks([7], 5) == {"5-9": [7]}
    assert weights.blocks([0, 1, 2], 1) == {"0-0": [0], "1-1": [1], "2-2": [2]}
    # a seed added in a new block leaves the existing blocks as they were
    before, after = weights.blocks(range(5), 5), weights.blocks(range(6), 5)
    assert {k: v for k, v in after.items() if k in before} == before and after["5-9"] == [5]
    with pytest.raises(ValueError):
        weights.block_of(3, 0)


def _states(spec, seeds):
    return [model.initial_state(spec, s) for s in seeds]


@pytest.mark.parametrize("kind", ["batchnorm", "batchrenorm"])
def test_write_then_read_gives_every_seed_in_order_with_its_metadata(tmp_path, kind):
    spec = NetSpec(kind, widths=(64, 12, 10, 10))
    recipe = Recipe(batch_size=4, epochs=2, renorm_rmax=2.5)
    a, b = tmp_path / "seeds2-3.safetensors", tmp_path / "seeds4-5.safetensors"
    weights.write(a, spec, recipe, [3, 2], _states(spec, [3, 2]))
    weights.write(b, spec, recipe, [4], _states(spec, [4]))
    stacked, read_spec, metas = weights.read([a, b])
    assert read_spec == spec
    assert [m["seed"] for m in metas] == ["3", "2", "4"]
    expected = model.stack(_states(spec, [3, 2, 4]))
    assert stacked.keys() == expected.keys()
    for key in expected:
        assert np.array_equal(stacked[key].reshape(3, -1), expected[key].reshape(3, -1)), key
    # batch renormalisation's settings are recorded only for a network that uses them
    assert ("renorm_rmax" in metas[0]) == (kind == "batchrenorm")
    if kind == "batchrenorm":
        assert Recipe.from_metadata(metas[0]).renorm_rmax == 2.5
    assert Recipe.from_metadata(metas[0]).batch_size == 4
    # one path is read like a list of one
    assert [m["seed"] for m in weights.read(b)[2]] == ["4"]


def test_the_same_networks_give_the_same_bytes(tmp_path):
    spec = NetSpec("groupnorm", widths=(64, 16, 16, 10))
    for name in ("a", "b"):
        weights.write(tmp_path / name, spec, Recipe(), [0, 1], _states(spec, [0, 1]))
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()


def test_write_refuses_a_seed_list_that_does_not_match_the_states(tmp_path):
    spec = NetSpec("none", widths=(64, 8, 8, 10))
    with pytest.raises(ValueError):
        weights.write(tmp_path / "w", spec, Recipe(), [0, 0], _states(spec, [0, 0]))
    with pytest.raises(ValueError):
        weights.write(tmp_path / "w", spec, Recipe(), [0, 1], _states(spec, [0]))


def test_files_of_different_networks_are_not_stacked(tmp_path):
    a, b = NetSpec("batchnorm", widths=(64, 8, 8, 10)), NetSpec("layernorm", widths=(64, 8, 8, 10))
    weights.write(tmp_path / "a", a, Recipe(), [0], _states(a, [0]))
    weights.write(tmp_path / "b", b, Recipe(), [1], _states(b, [1]))
    with pytest.raises(ValueError, match="different networks"):
        weights.read([tmp_path / "a", tmp_path / "b"])


def test_load_module_reads_a_convolutional_networks_file_agreeing_with_the_kernels(tmp_path):
    """A weights file of the convolutional network (``kind: conv``, the Fashion configs' networks)
    loads as its PyTorch module, which takes images and gives the kernels' inference-mode labels."""
    torch = pytest.importorskip("torch")
    from bnstudy.nets import conv_train
    from bnstudy.nets.conv_torch import images

    spec = conv_train.ConvSpec("batchnorm", (4, 8), 2, strides=(1, 2), skips=(-1, -1))
    x = (np.random.default_rng(1).random((24, 64)) * 2 - 1).astype(np.float32)
    y = (np.arange(24) % 10).astype(np.int64)
    stacked, _ = spec.train_models(Recipe(batch_size=4, epochs=1), [0, 3], x, y)
    path = tmp_path / "seeds0-3.safetensors"
    weights.write(path, spec, Recipe(batch_size=4, epochs=1), [0, 3], model.unstack(stacked))
    labels = spec.predict(stacked, x)
    for i, seed in enumerate([0, 3]):
        net = weights.load_module(path, seed=seed)
        assert not net.training and isinstance(net[0], torch.nn.Conv2d)
        with torch.no_grad():
            assert np.array_equal(net(images(x)).argmax(1).numpy(), labels[i])


def test_load_module_gives_the_chosen_seed_agreeing_with_the_kernels(tmp_path):
    torch = pytest.importorskip("torch")
    spec = NetSpec("batchnorm", widths=(64, 16, 16, 10))
    path = tmp_path / "seeds0-1.safetensors"
    weights.write(path, spec, Recipe(), [0, 1], _states(spec, [0, 1]))
    x = (np.random.default_rng(0).random((20, 64)) * 2 - 1).astype(np.float32)
    stacked, _, _ = weights.read(path)
    labels = kernels.predict(stacked, spec, x)
    for i, seed in enumerate([0, 1]):
        net = weights.load_module(path, seed=seed)
        assert not net.training
        with torch.no_grad():
            assert np.array_equal(net(torch.from_numpy(x)).argmax(1).numpy(), labels[i])
    with pytest.raises(ValueError, match="say which"):
        weights.load_module(path)
    with pytest.raises(ValueError, match="not 7"):
        weights.load_module(path, seed=7)
    assert io.read_metadata(path)["seeds"] == "0,1"
