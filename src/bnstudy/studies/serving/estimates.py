"""The serving study's summary over networks and stream replicates, without the serving loop's
compiled code: crossed intervals (networks and streams both random), the summary by training batch
size and stream, and the mean accuracy along the stream. :mod:`.science` serves and re-exports
these; the summary rule loads only this, so editing a kernel does not re-run it.

The comparisons the text reads are members of families declared in the config
(:mod:`bnstudy.evaluation.families`), each over the training batch sizes served:

- :data:`ORDER` (``serving_order``): class-sorted minus random traffic, the training-mode accuracy of
  the served rows (``sorted_minus_random.stream_accuracy``);
- :data:`CHANGE` (``serving_change``): the held-out inference-mode accuracy after a stream minus
  before it (``inference_change``), one family for each kind of stream (random, class-sorted, and
  the control's training rows where served), all declared alike;
- :data:`ADAPTATION` (``serving_adaptation``, where the control is served): the random stream's
  accuracy after minus the control's (``random_minus_training_rows``).

Their intervals are formed at the family's level (:meth:`bnstudy.evaluation.families.Family.level`);
every other interval of the summary, which the text does not quote, at ``confidence``.
"""

from __future__ import annotations

import math

import numpy as np

from bnstudy.base.designs import SERVING_STREAMS as STREAMS
from bnstudy.evaluation.families import declared

MEASURES = ("stream_accuracy", "inference_before", "inference_after", "mean_shift", "var_change")
CONTROL = "training_rows"  # bnstudy.studies.serving.science.CONTROL: the random stream's control
ORDER = "serving_order"  # the config's families.serving_order: class-sorted minus random traffic
CHANGE = "serving_change"  # families.serving_change: each kind of stream's change, after minus before
ADAPTATION = "serving_adaptation"  # families.serving_adaptation: the random stream minus the control


def crossed_interval(table, confidence: float) -> dict:
    """Mean and interval of a networks x streams table (``(M, R)``, every network served every
    stream replicate), both factors random.

    The grand mean is a ``math.fsum``; its variance ``sigma_net^2 / M + sigma_stream^2 / R +
    sigma_residual^2 / (M R)`` is estimated from the two-way mean squares as ``(MS_net +
    MS_stream - MS_residual) / (M R)``, Satterthwaite's degrees of freedom, and a Student-t
    interval. Where that estimate falls to or below ``max(MS_net, MS_stream) / (M R)`` (each
    factor's own lower bound on the variance) that bound is used with its own degrees of
    freedom: :func:`bnstudy.base.stats.crossed_mean_variance`, the rule the companions' crossed
    components use too. With one replicate (``R = 1``) it is the Student-t interval over networks; with
    one network, over streams. ``sd_networks``/``sd_streams``: the components' standard
    deviations (negative estimates as 0).
    """
    from bnstudy.base.stats import crossed_mean_variance, t_quantile

    t = np.asarray(table, np.float64)
    m, r = t.shape
    grand = math.fsum(t.ravel().tolist()) / (m * r)
    out = {"mean": grand, "networks": int(m), "streams": int(r), "seeds": int(m)}
    nan = float("nan")
    if m * r < 2 or (m < 2 and r < 2):
        return out | {"sd": nan, "sd_networks": nan, "sd_streams": nan, "ci": [nan, nan], "df": nan}
    rows = [math.fsum(t[i].tolist()) / r for i in range(m)]
    cols = [math.fsum(t[:, j].tolist()) / m for j in range(r)]
    ms_n = r * math.fsum((v - grand) * (v - grand) for v in rows) / (m - 1) if m > 1 else 0.0  # no libm pow
    ms_s = m * math.fsum((v - grand) * (v - grand) for v in cols) / (r - 1) if r > 1 else 0.0
    if m > 1 and r > 1:
        resid = [t[i, j] - rows[i] - cols[j] + grand for i in range(m) for j in range(r)]
        df_e = (m - 1) * (r - 1)
        ms_e = math.fsum(e * e for e in resid) / df_e
        combined, df = crossed_mean_variance(ms_n, m - 1, ms_s, r - 1, ms_e, df_e)
        var = combined / (m * r)
        sd_n = math.sqrt(max(ms_n - ms_e, 0.0) / r)
        sd_s = math.sqrt(max(ms_s - ms_e, 0.0) / m)
    elif m > 1:  # one stream replicate: over networks
        var, df, sd_n, sd_s = ms_n / m, float(m - 1), math.sqrt(ms_n), nan
    else:  # one network: over streams
        var, df, sd_n, sd_s = ms_s / r, float(r - 1), nan, math.sqrt(ms_s)
    half = t_quantile(0.5 + confidence / 2, df) * math.sqrt(var)
    sd = math.sqrt(var * m * r)
    return out | {"sd": sd, "sd_networks": sd_n, "sd_streams": sd_s, "ci": [grand - half, grand + half], "df": df}


def _table(g, measure) -> np.ndarray:
    """The ``(networks, replicates)`` table of one measure (rows sorted by seed, columns by replicate)."""
    wide = g.pivot(index="seed", columns="replicate", values=measure).sort_index().sort_index(axis=1)
    if wide.isna().any().any():
        raise ValueError(f"serving: {measure}: not every network served every stream replicate")
    return wide.to_numpy(np.float64)


def summarise(networks, confidence: float, families: dict) -> dict:
    """``{train_batch_size: {stream: {measure: interval}, "sorted_minus_random": ...}}`` over networks
    and stream replicates (:func:`crossed_interval`).

    ``inference_change`` is the paired after - before difference per network and
    replicate; ``sorted_minus_random`` the paired (same network, same replicate number)
    sorted - random difference of the stream accuracy and of the inference accuracy after
    the stream. Rows without a ``replicate`` are replicate 0.

    Where the rows hold the random stream's control (stream :data:`CONTROL`, training rows served):
    its entry as a stream's, and ``random_minus_training_rows``, the paired (same network, same
    replicate number) difference of the inference accuracy after the random stream and after the
    control: the part of the random stream's change that needs the test rows.

    ``families``: the config's ``families`` section (its declarations of :data:`ORDER`, :data:`CHANGE`
    and, with the control, :data:`ADAPTATION`); each member's interval is at its family's level over
    the training batch sizes (module docstring), every other at ``confidence``.
    """
    import pandas as pd

    df = pd.DataFrame(networks)
    if "replicate" not in df:
        df["replicate"] = 0
    df = df.sort_values(["train_batch_size", "stream", "seed", "replicate"])
    sizes = int(df["train_batch_size"].nunique())
    order = declared(families, ORDER).level(confidence, sizes)
    change_level = declared(families, CHANGE).level(confidence, sizes)
    out: dict = {}

    def stream_entry(g) -> dict:
        e = {m: crossed_interval(_table(g, m), confidence) for m in MEASURES}
        change = _table(g, "inference_after") - _table(g, "inference_before")
        return e | {"inference_change": crossed_interval(change, change_level)}

    for b, cell in df.groupby("train_batch_size", sort=True):
        by = {s: g for s, g in cell.groupby("stream")}
        entry: dict = {stream: stream_entry(by[stream]) for stream in STREAMS}
        entry["sorted_minus_random"] = {
            m: crossed_interval(_table(by["sorted"], m) - _table(by["random"], m), level)
            for m, level in (("stream_accuracy", order), ("inference_after", confidence))
        }
        if CONTROL in by:
            entry[CONTROL] = stream_entry(by[CONTROL])
            level = declared(families, ADAPTATION).level(confidence, sizes)
            adaptation = _table(by["random"], "inference_after") - _table(by[CONTROL], "inference_after")
            entry["random_minus_training_rows"] = {"inference_after": crossed_interval(adaptation, level)}
        out[str(int(b))] = entry
    return out


def family_records(summary: dict, confidence: float, families: dict) -> dict:
    """What the summary applied to each family of the study the config declares (``families``: the
    study's declarations, :data:`ORDER`, :data:`CHANGE` and, where the config runs the control,
    :data:`ADAPTATION`), for the summary's ``families`` key (:meth:`Family.record`): each family's
    members are the training batch sizes; :data:`ADAPTATION` has none where no control was served."""
    sizes = len(summary)
    control = all("random_minus_training_rows" in cell for cell in summary.values())
    members = {ORDER: sizes, CHANGE: sizes, ADAPTATION: sizes if control else 0}
    return {name: declared(families, name).record(confidence, members[name]) for name in members if name in families}


def along_means(along) -> list[dict]:
    """Mean over seeds of each served batch's accuracy: rows ``train_batch_size, stream, position, accuracy``.

    The seeds' accuracies (multiples of ``1 / b``) summed with ``math.fsum``.
    """
    groups: dict = {}
    for r in along:
        groups.setdefault((int(r["train_batch_size"]), r["stream"], int(r["position"])), []).append(r["accuracy"])
    return [
        {"train_batch_size": b, "stream": s, "position": p, "accuracy": math.fsum(v) / len(v)}
        for (b, s, p), v in sorted(groups.items(), key=lambda kv: (kv[0][0], STREAMS.index(kv[0][1]), kv[0][2]))
    ]
