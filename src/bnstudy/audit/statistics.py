"""The audit's check of the running statistics: each batch-norm layer against the data's exact statistics.

:func:`layer_rows` describes every normalisation layer (its updates, momentum, whether it was ever
updated); :func:`check_statistics` adds, per batch-statistics layer, the distance of its running
statistics from the exact statistics of the data (:func:`bnstudy.audit.engine.distance`), the band
that sampling noise alone gives that distance (:func:`noise_bands`) and whether the layer is stale
(:func:`stale_threshold`), and, with labels, the accuracy with the stored against the recomputed
statistics: the remedy the study measured.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from bnstudy.base.runtime import STREAM_BOOTSTRAP, derive_seed

from .engine import Engine, distance
from .findings import STALE
from .intervals import mean_share, seeded_interval
from .options import Options


def check_statistics(engine: Engine, norms, layers, data, opts: Options, notes: list) -> dict | None:
    """Running against exact statistics per layer (into ``layers``) and, with labels, the accuracy
    with the stored and the recomputed statistics; ``data`` is ``(inputs, statistics inputs,
    labels, inference labels)``."""
    xt, st, y, inference = data
    batch_layers = [n for n in norms if n.batch]
    if batch_layers and engine.scripted:
        notes.append("TorchScript model: exact statistics and the remedy need the eager module (module:factory)")
        return None
    if batch_layers:
        exact_stats = engine.exact_statistics(st)
        bands = noise_bands(engine, st, exact_stats, opts)
        _distances(engine, layers, exact_stats, bands, len(st), notes)
        return None if y is None else _recomputed_accuracy(engine, exact_stats, data, opts)
    if y is None:
        return None
    return {"running": mean_share((inference == y).astype(np.float64)), "recomputed": None}


def noise_bands(engine: Engine, st, exact_stats, opts: Options) -> dict[str, tuple[float, float]]:
    """Per batch-norm layer, ``(mean band, variance band)``: how far the exact statistics of
    ``len(st)`` rows lie from those of the population they were drawn from, by sampling noise alone,
    at the 95th percentile (the distances of :func:`bnstudy.audit.engine.distance`).

    Bootstrap: ``noise_resamples`` times, ``m = min(len(st), noise_rows)`` rows drawn with
    replacement, their exact statistics computed layer by layer as for the data (every earlier
    layer holding the resample's own, so the noise of earlier layers is carried forward), and each
    layer's distances from the data's exact statistics scaled by ``sqrt(m / len(st))`` (the noise of
    a mean or variance falls as one over the square root of the rows). The band is the 95th
    percentile of those distances (linear interpolation). Empty with no resamples.
    """
    n, reps = len(st), opts.noise_resamples
    if reps == 0:
        return {}
    m = min(n, opts.noise_rows)
    scale = math.sqrt(m / n)
    rng = np.random.default_rng(derive_seed(opts.seed, STREAM_BOOTSTRAP, 98, m))
    eps = {name: layer.eps for name, layer in engine._layers()}
    found: dict[str, list] = {name: [] for name in exact_stats}
    for _ in range(reps):
        rows = torch.as_tensor(rng.integers(0, n, size=m), device=st.device)
        again = engine.exact_statistics(st[rows])
        for name, (em, ev) in exact_stats.items():
            if name in again:
                md, vd = distance(again[name][0], again[name][1], em, ev, eps[name])
                found[name].append((md * scale, vd * scale))
    return {name: tuple(float(q) for q in np.quantile(np.asarray(d), 0.95, axis=0)) for name, d in found.items() if d}


def stale_threshold(band: float | None) -> float:
    """The distance above which a layer is called stale: :data:`STALE` and the noise band added in
    squares (a true offset and independent noise add so, channel by channel), or :data:`STALE`
    without a band."""
    return STALE if band is None else math.hypot(STALE, band)


def _distances(engine: Engine, layers, exact_stats, bands, rows: int, notes: list) -> None:
    """Each batch-statistics layer's distance of its running statistics from the exact ones, its
    noise band, and whether it is stale (beyond :func:`stale_threshold` on either distance)."""
    for r in layers:
        if r["name"] in exact_stats:
            em, ev = exact_stats[r["name"]]
            m = engine_layer(engine, r["name"])
            md, vd = distance(m.running_mean.cpu().numpy(), m.running_var.cpu().numpy(), em, ev, m.eps)
            mb, vb = bands.get(r["name"], (None, None))
            stale = md > stale_threshold(mb) or vd > stale_threshold(vb)
            r |= {"mean_distance": md, "var_distance": vd, "mean_noise": mb, "var_noise": vb, "stale": bool(stale)}
            r["statistics_rows"] = rows
        elif r["batch_statistics"]:
            r |= {"mean_distance": None, "var_distance": None, "mean_noise": None, "var_noise": None, "stale": None}
            notes.append(f"layer {r['name']}: not reached by a forward pass, no statistics")


def _recomputed_accuracy(engine: Engine, exact_stats, data, opts: Options) -> dict:
    """Accuracy with the running statistics against the recomputed ones, with the gain's interval."""
    xt, st, y, inference = data
    recomputed = engine.inference_labels_with(exact_stats, xt)
    hit_run = (inference == y).astype(np.float64)
    hit_new = (recomputed == y).astype(np.float64)
    lo, hi = seeded_interval(hit_new - hit_run, y, opts, 99, 0)
    return {
        "running": mean_share(hit_run),
        "recomputed": mean_share(hit_new),
        "gain": mean_share(hit_new - hit_run),
        "gain_ci_low": lo,
        "gain_ci_high": hi,
        "changed_labels": int((recomputed != inference).sum()),
        "statistics_rows": len(st),
        "statistics_data": "audited data" if opts.stats_x is None else "statistics data",
    }


def engine_layer(engine: Engine, name: str):
    return dict(engine._layers())[name]


def layer_rows(engine: Engine, norms) -> list[dict]:
    rows = []
    for n in norms:
        r = {"name": n.name, "kind": n.kind, "batch_statistics": n.batch}
        m = n.module
        if n.batch:
            tracked = getattr(m, "num_batches_tracked", None)
            updates = None if tracked is None else int(tracked)
            mean, var = m.running_mean.detach(), m.running_var.detach()
            initial = bool((mean == 0).all() and (var == 1).all())
            r |= {
                "channels": int(mean.numel()),
                "updates": updates,
                "momentum": getattr(m, "momentum", None),
                "never_updated": updates == 0 or initial,
            }
        rows.append(r)
    return rows
