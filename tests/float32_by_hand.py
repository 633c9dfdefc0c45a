"""NumPy float32 arithmetic written out in a fixed order, for the bit-for-bit tests of the
exact-statistics pass (tests/studies/test_values_edges.py, tests/studies/test_values_gaps.py)."""

from __future__ import annotations

import numpy as np

from bnstudy.nets import model as mlp


def linear32(a, w, bias):
    """``bias + sum_k a[:, k] * W[:, k]`` in float32: the bias, then ``k = 0, 1, ...``."""
    a, w = np.asarray(a, np.float32), np.asarray(w, np.float32)
    out = np.broadcast_to(np.asarray(bias, np.float32), (a.shape[0], w.shape[0])).copy()
    for k in range(a.shape[1]):
        out = out + a[:, k : k + 1] * w[:, k]
    return out


def moments64(h):
    """Mean and biased variance per feature in float64, rows added in order 0, 1, ..."""
    s = np.zeros(h.shape[1], np.float64)
    for r in range(h.shape[0]):
        s = s + h[r].astype(np.float64)
    mean = s / h.shape[0]
    s = np.zeros(h.shape[1], np.float64)
    for r in range(h.shape[0]):
        d = h[r].astype(np.float64) - mean
        s = s + d * d
    return mean, s / h.shape[0]


def exact_by_hand(stacked, x, eps):
    """Layer 1 in float32, its statistics in float64 rounded to float32, layer 1 in inference
    mode with them (float32), layer 2's input in float32, its statistics in float64."""
    x32, eps = np.asarray(x).astype(np.float32), np.float32(eps)
    out = {layer: ([], []) for layer in mlp.NORMS}
    for i in range(stacked["0.weight"].shape[0]):
        pre1 = linear32(x32, stacked["0.weight"][i], stacked["0.bias"][i])
        mean1, var1 = moments64(pre1)
        mean32, var32 = mean1.astype(np.float32), var1.astype(np.float32)
        invstd = np.float32(1) / np.sqrt(var32 + eps)
        y = ((pre1 - mean32) * invstd) * stacked["1.weight"][i] + stacked["1.bias"][i]
        out1 = np.where(y > 0, y, np.float32(0)).astype(np.float32)
        pre2 = linear32(out1, stacked["3.weight"][i], stacked["3.bias"][i])
        mean2, var2 = moments64(pre2)
        for layer, (mean, var) in zip(mlp.NORMS, ((mean1, var1), (mean2, var2))):
            out[layer][0].append(mean.astype(np.float32))
            out[layer][1].append(var.astype(np.float32))
    return {layer: (np.stack(a), np.stack(b)) for layer, (a, b) in out.items()}
