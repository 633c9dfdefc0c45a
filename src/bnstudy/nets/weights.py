"""Weights files: the networks one training job trains, one safetensors file.

A training job trains one block of seeds of one (normaliser, batch size) cell
(``grid.seed_block`` in the config): block ``k`` holds the configured seeds from
``k * B`` to ``k * B + B - 1``. Its file stores each seed's tensors under the name
``seed<seed>/<tensor>`` (the names of :func:`bnstudy.nets.model.build_module`'s state
dict), and one metadata block: the network (its spec's ``metadata``), the
recipe (:meth:`Recipe.metadata`, batch renormalisation's settings only for a
network that uses them) and ``seeds``, the seeds in the file in order.

The layout is :func:`bnstudy.base.io.write_weights`'s: sorted names, no pickle, no
timestamp, the same bytes on every machine. ``safetensors`` loads it, and
:func:`load_module` gives one seed's network as a PyTorch module.
"""

from __future__ import annotations

import numpy as np

from bnstudy.base.io import read_metadata, read_weights, write_weights


def block_of(seed: int, block_size: int) -> int:
    """The block of ``seed``: seeds ``k * block_size`` to ``k * block_size + block_size - 1`` form block ``k``."""
    if block_size < 1:
        raise ValueError(f"block size must be at least 1, got {block_size}")
    return int(seed) // int(block_size)


def blocks(seeds, block_size: int) -> dict[str, list[int]]:
    """The configured ``seeds`` by block, each block labelled by its seed range (``"0-4"``), in seed order."""
    out: dict[int, list[int]] = {}
    for s in sorted(int(s) for s in seeds):
        out.setdefault(block_of(s, block_size), []).append(s)
    return {f"{k * block_size}-{k * block_size + block_size - 1}": v for k, v in sorted(out.items())}


def recipe_metadata(recipe, normaliser: str) -> dict[str, str]:
    """The recipe as weights metadata; batch renormalisation's settings only where they apply."""
    from bnstudy.base.normalisers import RENORM, get

    meta = recipe.metadata()
    if get(normaliser).kernel != RENORM:
        meta = {k: v for k, v in meta.items() if not k.startswith("renorm_")}
    return meta


def write(path, spec, recipe, seeds, states) -> None:
    """Write the networks ``states`` (one state dict per seed of ``seeds``) to ``path``."""
    seeds = [int(s) for s in seeds]
    if len(seeds) != len(states) or len(set(seeds)) != len(seeds):
        raise ValueError(f"one state per distinct seed expected: seeds {seeds}, {len(states)} states")
    tensors = {f"seed{s}/{k}": v for s, state in zip(seeds, states) for k, v in state.items()}
    meta = spec.metadata() | recipe_metadata(recipe, spec.normaliser) | {"seeds": ",".join(map(str, seeds))}
    write_weights(path, tensors, meta)


def as_paths(paths) -> list:
    """One weights path, or several, as a list of paths."""
    return [paths] if isinstance(paths, (str, bytes)) or hasattr(paths, "__fspath__") else list(paths)


def _seeds(meta: dict[str, str]) -> list[int]:
    return [int(s) for s in meta["seeds"].split(",")]


def read(paths) -> tuple[dict[str, np.ndarray], object, list[dict[str, str]]]:
    """Stack every seed of the weights files ``paths`` (one path or a list; one network spec), in file then seed order.

    Returns the stacked tensors (:func:`bnstudy.nets.stacks.stack`), the spec and one
    metadata dict per model: the file's, with ``seed`` set to the model's seed.
    """
    from bnstudy.nets.network import spec_from_metadata
    from bnstudy.nets.stacks import stack

    states, metas = [], []
    for path in as_paths(paths):
        meta = read_metadata(path)
        tensors = read_weights(path)
        for s in _seeds(meta):
            prefix = f"seed{s}/"
            states.append({k[len(prefix) :]: v for k, v in tensors.items() if k.startswith(prefix)})
            metas.append({k: v for k, v in meta.items() if k != "seeds"} | {"seed": str(s)})
    specs = {spec_from_metadata(m) for m in metas}
    if len(specs) != 1:
        raise ValueError(f"weights of different networks cannot be stacked: {specs}")
    return stack(states), specs.pop(), metas


def load_module(path, seed: int | None = None):
    """Seed ``seed``'s network in ``path`` (the only one if ``None``) as a PyTorch module in eval
    mode (the spec's ``build_module``): the MLP's ``torch.nn.Sequential``, which takes rows of features,
    or the convolutional network's (``kind: conv`` in the metadata; :func:`bnstudy.nets.conv_torch.build_module`),
    which takes images ``(N, 1, side, side)`` (:func:`bnstudy.nets.conv_torch.images` makes them of rows)."""
    import torch

    from bnstudy.nets.network import spec_from_metadata

    meta = read_metadata(path)
    seeds = _seeds(meta)
    if seed is None:
        if len(seeds) != 1:
            raise ValueError(f"{path} holds seeds {seeds}: say which one")
        seed = seeds[0]
    if int(seed) not in seeds:
        raise ValueError(f"{path} holds seeds {seeds}, not {seed}")
    prefix = f"seed{int(seed)}/"
    state = {k[len(prefix) :]: torch.from_numpy(v) for k, v in read_weights(path).items() if k.startswith(prefix)}
    net = spec_from_metadata(meta).build_module()
    net.load_state_dict(state)
    return net.eval()
