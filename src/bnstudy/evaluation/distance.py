"""How far running statistics are from exact ones: :func:`distances`, per model and layer.

The study's one definition, for every study that measures it (the remedies, PreciseBN on a budget,
fine-tuning). Float64 in a fixed order, the logarithm of :mod:`bnstudy.base.fixedmath`: the same
bits on every CPU.

The audit (:func:`bnstudy.audit.engine.distance`) states the same two distances for one layer of a
user's model but keeps its own arithmetic (correctly rounded sums, NumPy's logarithm): it is
installed with PyTorch and NumPy alone, and this module's compiled loops need Numba.
"""

from __future__ import annotations

import numba
import numpy as np

from bnstudy.base.fixedmath import JIT, log_array
from bnstudy.evaluation.recompute import Spec, norm_layers


@numba.njit(**JIT)
def _root_means(a, out):
    """``out[i] = sqrt((sum over j = 0, 1, ... of a[i, j]) / J)`` for every row ``i``."""
    m_, f_ = a.shape
    for i in range(m_):
        s = 0.0
        for f in range(f_):
            s += a[i, f]
        out[i] = np.sqrt(s / f_)


def distances(statistics, exact, eps: float = 1e-5, spec: Spec | None = None) -> list[dict]:
    """Per model and layer, how far ``statistics`` are from the ``exact`` ones.

    ``mean_distance`` = sqrt(mean over features of (mean - exact_mean)**2 / (exact_var + eps)):
    the RMS shift of a normalised activation, in exact standard deviations.
    ``var_distance`` = sqrt(mean over features of log((var + eps) / (exact_var + eps))**2):
    the RMS log-ratio of the variances (0.1 is about a 10% error).
    Float64 (float32 statistics widen exactly), each sum over features ``f = 0, 1, ...``,
    divided by ``F``, ``log`` from :func:`bnstudy.base.fixedmath.log`. Layers numbered from 1 in
    the order of :func:`norm_layers` of ``spec`` (the MLP's without one).
    """
    rows = []
    for number, layer in enumerate(norm_layers(spec), start=1):
        mean, var = (np.ascontiguousarray(t, dtype=np.float64) for t in statistics[layer])
        emean, evar = (np.ascontiguousarray(t, dtype=np.float64) for t in exact[layer])
        shift = mean - emean
        ratio = log_array((var + eps) / (evar + eps))
        md = np.empty(mean.shape[0], np.float64)
        vd = np.empty(mean.shape[0], np.float64)
        _root_means(shift * shift / (evar + eps), md)
        _root_means(ratio * ratio, vd)
        for i in range(mean.shape[0]):
            rows.append({"model": i, "layer": number, "mean_distance": float(md[i]), "var_distance": float(vd[i])})
    return rows
