"""Study 2: accuracy by training batch size, in inference and in training mode."""

from __future__ import annotations

import numpy as np
import torch

from . import model as mlp
from . import remedies
from .model import NetSpec
from .runtime import STREAM_EVAL_BATCHES, derive_seed


def inference_accuracy(stacked, spec: NetSpec, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Share of rows labelled correctly in inference mode, per model: shape ``(M,)``."""
    return (mlp.predict(stacked, spec, x) == y).double().mean(1)


def test_batches(n: int, batch_size: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded random batches that score every one of ``n`` rows exactly once.

    Returns ``(batches, scored)``, both ``(K, batch_size)``: row indices and a mask
    of the rows scored in each batch. The rows are permuted and cut into batches;
    a last partial batch of ``r`` rows is completed with ``batch_size - r`` rows drawn
    from the others, which shape its statistics but are not scored again.
    """
    g = torch.Generator().manual_seed(derive_seed(seed, STREAM_EVAL_BATCHES, batch_size))
    perm = torch.randperm(n, generator=g)
    full, rest = divmod(n, batch_size)
    batches = [perm[: full * batch_size].view(full, batch_size)]
    scored = [torch.ones(full, batch_size, dtype=torch.bool)]
    if rest:
        tail = perm[full * batch_size:]
        others = perm[: full * batch_size]
        fill = others[torch.randperm(len(others), generator=g)[: batch_size - rest]]
        batches.append(torch.cat([tail, fill]).view(1, batch_size))
        scored.append((torch.arange(batch_size) < rest).view(1, batch_size))
    return torch.cat(batches), torch.cat(scored)


def train_mode_accuracy(stacked, spec: NetSpec, x, y, batch_size: int, seed: int,
                        limits=(1.0, 0.0)) -> torch.Tensor:
    """Training-mode accuracy per model on seeded test batches of ``batch_size``.

    Running statistics are read, never written (``update=False``).
    """
    batches, scored = test_batches(len(y), batch_size, seed)
    m = next(iter(stacked.values())).shape[0]
    with torch.no_grad():
        logits = mlp.forward(stacked, spec, x[batches].expand(m, -1, -1, -1), train=True,
                             update=False, limits=limits)
    correct = (logits.argmax(-1) == y[batches]) & scored
    return correct.double().sum((1, 2)) / scored.sum()


def remedy_rows(stacked, spec: NetSpec, seeds: list[int], x_train, y_train, x_test, y_test,
                batch_size: int, seed: int, last_batch: str = "drop") -> tuple[list[dict], list[dict]]:
    """Inference-mode accuracy of a batch-norm stack under each replacement statistic.

    Returns ``(accuracy, distance)`` rows: one accuracy row per model and remedy
    (``mode`` = the remedy's name, see :mod:`bnstudy.remedies`), and one distance
    row per model, statistic (the trained ``ema`` and each remedy) and layer, to the
    exact statistics (d). Each remedy is evaluated on a copy: ``stacked`` is not
    modified.
    """
    statistics = remedies.all_statistics(stacked, spec, x_train, y_train, batch_size, seed, last_batch)
    accuracy, distance = [], []
    for name, stats in statistics.items():
        if name != "ema":
            acc = inference_accuracy(remedies.with_statistics(stacked, stats), spec, x_test, y_test)
            accuracy += [{"seed": s, "mode": name, "accuracy": float(acc[i])} for i, s in enumerate(seeds)]
        for row in remedies.distances(stats, statistics["exact"], spec.eps):
            distance.append({"seed": seeds[row.pop("model")], "statistics": name} | row)
    return accuracy, distance


def gain_interval(with_norm, without, confidence: float = 0.95) -> tuple[float, float, float]:
    """Difference of seed means ``mean(with_norm) - mean(without)`` and its Welch interval.

    The two sets of networks are trained independently (different architectures),
    so the interval is Welch's unequal-variance Student-t interval for a difference
    of two means, with Welch-Satterthwaite degrees of freedom.
    """
    from scipy import stats  # here, not at the top: 0.8 s that most jobs do not need

    a, b = np.asarray(with_norm, dtype=np.float64), np.asarray(without, dtype=np.float64)
    diff = float(a.mean() - b.mean())
    if len(a) < 2 or len(b) < 2:
        return diff, float("nan"), float("nan")
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = float(np.sqrt(va + vb))
    if se == 0:
        return diff, diff, diff
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    half = float(stats.t.ppf(0.5 + confidence / 2, df)) * se
    return diff, diff - half, diff + half


def summary_json(summary) -> dict:
    """``{normaliser: {batch_size: {...}}}`` from the per-(normaliser, b, mode) summary."""
    out: dict = {}
    for row in summary.itertuples(index=False):
        cell = out.setdefault(row.normaliser, {}).setdefault(str(int(row.batch_size)), {})
        key = {"inference": "inference", "training": "train_mode"}.get(row.mode, row.mode)
        cell[f"{key}_accuracy"] = row.mean
        cell[f"{key}_sd"] = row.sd
        cell[f"{key}_ci"] = [row.ci_low, row.ci_high]
        cell["seeds"] = int(row.seeds)
    return out
