"""Stacks: a network's state dicts side by side, one leading model axis.

A *stack* is a dict of NumPy arrays with the keys of the network module's ``state_dict`` and a
leading model axis ``M`` (one trained network per seed): what the pipeline trains, evaluates and
saves, for either network. :func:`stack` builds one from state dicts (NumPy arrays or tensors),
:func:`unstack` splits it again.
"""

from __future__ import annotations

import numpy as np


def _array(v) -> np.ndarray:
    return v.detach().cpu().numpy() if hasattr(v, "detach") else np.asarray(v)


def stack(states: list[dict]) -> dict[str, np.ndarray]:
    """Stack state dicts (NumPy arrays or tensors) of identical networks along a new model axis."""
    return {k: np.stack([_array(s[k]) for s in states]) for k in states[0]}


def unstack(stacked: dict) -> list[dict[str, np.ndarray]]:
    """Split a stack back into per-model state dicts (contiguous copies)."""
    m = next(iter(stacked.values())).shape[0]
    return [{k: np.array(_array(v)[i], order="C", copy=True) for k, v in stacked.items()} for i in range(m)]
