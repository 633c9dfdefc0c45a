"""Study 1's estimates from the probes' rows, without the probes' compiled code: the designs, the flip
rate, training-mode accuracy and ever-flipped share per (network, seed, design, b) with stratified
bootstrap intervals over examples (:mod:`bnstudy.base.stats`), the summary JSON of one network and the
any-class rate the one-class designs predict. :mod:`.science` draws and probes, and re-exports these;
the summary rule loads only this, so editing a kernel does not re-run it."""

from __future__ import annotations

import numpy as np

from bnstudy.base.runtime import STREAM_BOOTSTRAP, derive_seed
from bnstudy.base.stats import bootstrap_examples, mean_sd

DESIGNS = ("random", "exact", "own_class", "other_class", "any_class")
MEASURES = ("flip_rate", "train_mode_accuracy", "ever_flipped")  # each summary row's estimates
_DESIGN_CODE = {d: i for i, d in enumerate(DESIGNS)}


def summarise(per_example, resamples: int, confidence: float, seed: int) -> list[dict]:
    """Flip rate, training-mode accuracy and ever-flipped share per (network, seed, design, b).

    ``per_example`` is a DataFrame of :func:`probe_network` rows plus ``network``
    and ``seed`` columns. Each estimate (see the module docstring) comes with a
    percentile bootstrap interval over examples, stratified by the examples' class
    (``label``); the bootstrap generator is seeded from ``(seed, STREAM_BOOTSTRAP,
    design, b)``, so every network is resampled with the same example draws.
    ``inference_accuracy`` is over the same examples.
    """
    out = []
    keys = ["network", "normaliser", "train_batch_size", "seed", "design", "batch_size"]
    for key, g in per_example.groupby(keys, sort=True):
        g = g.sort_values("example")
        cell = dict(zip(keys, key))
        measures = {
            "flip_rate": (g["flips"] / g["batches"]).to_numpy(),
            "train_mode_accuracy": (g["correct"] / g["batches"]).to_numpy(),
            "ever_flipped": (g["flips"] > 0).to_numpy(dtype=np.float64),
        }
        row = dict(
            cell,
            examples=len(g),
            batches_per_example=int(g["batches"].iloc[0]),
            inference_accuracy=int((g["inference_label"] == g["label"]).sum()) / len(g),
        )
        for name, values in measures.items():
            rng = np.random.default_rng(
                derive_seed(seed, STREAM_BOOTSTRAP, _DESIGN_CODE[cell["design"]], int(cell["batch_size"]))
            )
            lo, hi = bootstrap_examples(values, resamples, confidence, rng, strata=g["label"].to_numpy())
            row |= {name: mean_sd(values)[0], f"{name}_ci_low": lo, f"{name}_ci_high": hi}
        out.append(row)
    return out


def dependence_json(summary) -> dict:
    """``results/summary/companions.json`` for one network from its :func:`summarise` rows."""
    s = summary.set_index(["design", "batch_size"])
    out = {}
    for b in sorted(int(b) for b in summary.loc[summary["design"] == "random", "batch_size"]):
        r = s.loc[("random", b)]
        out[str(b)] = {
            "flip_rate": float(r["flip_rate"]),
            "flip_ci": [float(r["flip_rate_ci_low"]), float(r["flip_rate_ci_high"])],
            "train_mode_accuracy": float(r["train_mode_accuracy"]),
            "ever_flipped": float(r["ever_flipped"]),
        }
    exact = s.loc[("exact", 2)] if ("exact", 2) in s.index else None
    out["exact_flip_rate_b2"] = None if exact is None else float(exact["flip_rate"])
    out["inference_accuracy"] = float(summary["inference_accuracy"].iloc[0])
    own = summary[summary["design"] == "own_class"].iloc[0]
    other = summary[summary["design"] == "other_class"].iloc[0]
    out["one_class_same_flip"] = float(own["flip_rate"])
    out["one_class_other_flip"] = float(other["flip_rate"])
    if (summary["design"] == "any_class").any():
        out["one_class_any_flip"] = float(summary[summary["design"] == "any_class"].iloc[0]["flip_rate"])
    return out


def mixture_flip_rate(own: float, other: float, classes: int) -> float:
    """The any-class flip rate that the own- and other-class designs predict: the class is
    the example's own with probability ``1/classes``, another with ``(classes - 1)/classes``."""
    return own / classes + other * (classes - 1) / classes
