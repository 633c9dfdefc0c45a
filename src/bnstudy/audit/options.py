"""The audit's options: every keyword of :func:`bnstudy.audit.audit`, its default, and its checks.

:class:`Options` holds them (the batch sizes, probes, exact sample, statistics data, bootstrap,
noise band, seed, device, chunking, progress, designs); :func:`check_options` refuses a bad one in
one line before any work. The command (:mod:`bnstudy.audit.cli`) checks its arguments with the same
function, and the report names the probe designs with :data:`DESIGN_WORDS`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .engine import AuditError
from .intervals import TAIL_RESAMPLES, min_resamples

DEFAULT_SIZES = (2, 4, 16, 64)
DESIGN_WORDS = {
    "random": "random companions",
    "label": "companions of the same label",
    "group": "companions of the same group",
    "exact": "every companion once",
}
DESIGNS = tuple(DESIGN_WORDS)
NAMES = {"x": "inputs", "y": "labels", "groups": "groups", "stats_x": "statistics inputs"}


@dataclass(frozen=True)
class Options:
    """How :func:`audit` probes: every keyword argument of :func:`audit`, with its default.

    ``batch_sizes`` (and ``serving_batch``, added to them): the probe batch sizes;
    ``probes``: training-mode predictions per example at each size and design;
    ``exact_sample``: examples enumerated exactly at ``b = 2`` (fewer if the pairs would
    exceed ``exact_budget`` rows), or ``exact_examples``, their row indices; ``stats_x``: the
    data the statistics are recomputed on (default ``x``); ``resamples`` and ``confidence``:
    the bootstrap intervals (at least :func:`bnstudy.audit.intervals.min_resamples`);
    ``noise_resamples`` and ``noise_rows``: the band of sampling noise of the exact statistics
    (:func:`bnstudy.audit.statistics.noise_bands`; 0 resamples: none, a fixed threshold); ``seed``: every random draw;
    ``device``: where the model runs; ``chunk_rows``: rows per forward pass; ``progress``: a
    progress bar; ``designs_wanted``: the probe designs; ``names``: what errors call ``x``,
    ``y``, ``groups`` and ``stats_x`` (the command gives the files' names).
    """

    batch_sizes: tuple = DEFAULT_SIZES
    serving_batch: int | None = None
    probes: int = 20
    exact_sample: int = 50
    exact_budget: int = 200_000
    exact_examples: object = None
    stats_x: object = None
    resamples: int = 1000
    confidence: float = 0.95
    noise_resamples: int = 10
    noise_rows: int = 256
    seed: int = 0
    device: str = "cpu"
    chunk_rows: int = 1024
    progress: bool = False
    designs_wanted: tuple = DESIGNS
    names: object = None

    def name(self, key: str) -> str:
        return (self.names or {}).get(key, NAMES[key])


def _whole(value, what: str, least: int) -> int:
    """``value`` as an int of at least ``least``; refused in one line otherwise (bool and 2.5 too)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise AuditError(f"{what} must be a whole number of at least {least}, got {value!r}")
    return int(value)


def check_options(opts: Options) -> list[int]:
    """Every option checked before any work, each refused in one line; returns the probe batch sizes
    (the listed ones and the serving batch, sorted)."""
    if isinstance(opts.batch_sizes, (int, np.integer)) or not len(tuple(opts.batch_sizes)):
        raise AuditError(f"batch sizes must be a list of sizes of at least 2, got {opts.batch_sizes!r}")
    sizes = {_whole(b, "every batch size", 2) for b in opts.batch_sizes}
    if opts.serving_batch is not None:
        sizes.add(_whole(opts.serving_batch, "the serving batch", 2))
    _whole(opts.probes, "probes per example", 1)
    _whole(opts.exact_sample, "the exact sample", 0)
    _whole(opts.exact_budget, "the exact budget", 0)
    _whole(opts.seed, "the seed", 0)
    _whole(opts.chunk_rows, "rows per forward pass (chunk)", 1)
    _whole(opts.noise_resamples, "the noise band's resamples", 0)
    _whole(opts.noise_rows, "the noise band's rows", 2)
    if not isinstance(opts.confidence, (float, int)) or not 0 < opts.confidence < 1:
        raise AuditError(f"the confidence must lie strictly between 0 and 1, got {opts.confidence!r}")
    least = min_resamples(opts.confidence)
    if isinstance(opts.resamples, bool) or not isinstance(opts.resamples, (int, np.integer)) or opts.resamples < least:
        raise AuditError(
            f"resamples must be at least {least} for a {100 * opts.confidence:g}% interval (each tail "
            f"{TAIL_RESAMPLES} resamples), got {opts.resamples!r}"
        )
    unknown = set(opts.designs_wanted) - set(DESIGNS)
    if unknown or not opts.designs_wanted:
        raise AuditError(f"designs must be among {', '.join(DESIGNS)}, got {list(opts.designs_wanted)}")
    try:
        device = torch.device(opts.device)
    except (RuntimeError, TypeError):
        raise AuditError(f"device {opts.device}: the audit runs on cpu or cuda (cuda:N for one GPU)") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise AuditError(f"device {opts.device}: torch sees no GPU")
    if device.type not in ("cpu", "cuda"):
        raise AuditError(f"device {opts.device}: the audit runs on cpu or cuda (cuda:N for one GPU)")
    return sorted(sizes)
