"""The training recipe: optimiser, batch size, epochs, batch order, the learning rate's decay, batch renorm's ramps.

A :class:`Recipe` is what a weights file records (its metadata) beside the
network's :class:`bnstudy.nets.model.NetSpec`; :class:`RenormSchedule` turns the
recipe's batch-renormalisation settings into the ``(rmax, dmax)`` limits of
every step.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields


@dataclass(frozen=True)
class Recipe:
    optimizer: str = "adam"  # "adam" or "sgd"
    lr: float = 1e-3
    sgd_momentum: float = 0.9
    batch_size: int = 64
    epochs: int = 20
    order: str = "shuffle"  # or "class_sorted"
    last_batch: str = "drop"  # or "keep" (a final batch of >= 2 rows)
    # batch renormalisation limits and ramp milestones (fractions of the run)
    renorm_rmax: float = 3.0
    renorm_dmax: float = 5.0
    renorm_warmup: float = 0.05
    renorm_rmax_full: float = 0.4
    renorm_dmax_full: float = 0.25
    # the milestones' unit: "fraction" of the run's steps, or "absolute" steps (Ioffe's own: 5,000, 40,000, 25,000)
    renorm_steps: str = "fraction"
    # gradient accumulation: micro-batches per optimiser step (batch_size rows split evenly)
    accumulate: int = 1
    # the learning rate over the epochs (lr_scales): "constant", lr throughout; "linear", lr (E - e) / E
    # in epoch e = 0 .. E - 1, a linear decay towards zero
    lr_schedule: str = "constant"

    @classmethod
    def from_params(cls, params: dict) -> Recipe:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in dict(params).items() if k in names})

    @classmethod
    def from_metadata(cls, meta: dict[str, str]) -> Recipe:
        """Inverse of :meth:`metadata` (weights files store strings)."""
        return cls(**{f.name: type(f.default)(meta[f.name]) for f in fields(cls) if f.name in meta})

    def metadata(self) -> dict[str, str]:
        """Every field as a string; ``accumulate`` only when it is not 1, ``lr_schedule`` only when it
        is not ``"none"`` and ``renorm_steps`` only when it is not ``"fraction"`` (weights files of runs
        without them are as they were before they existed)."""
        meta = {k: str(v) for k, v in asdict(self).items()}
        if self.renorm_steps == "fraction":
            del meta["renorm_steps"]
        if self.accumulate == 1:
            del meta["accumulate"]
        if self.lr_schedule == "constant":
            del meta["lr_schedule"]
        return meta


LR_SCHEDULES = ("constant", "linear")


def lr_scales(recipe: Recipe):
    """The learning rate's factor in each epoch, float64: 1 throughout (``lr_schedule: constant``), or
    ``(E - e) / E`` in epoch ``e`` of ``E`` (``linear``: the last epoch at ``lr / E``), one IEEE
    division each, the factor PyTorch's ``LambdaLR`` applies when stepped once per epoch."""
    import numpy as np

    epochs = recipe.epochs
    if recipe.lr_schedule == "constant":
        return np.ones(epochs, np.float64)
    if recipe.lr_schedule == "linear":
        return np.array([(epochs - e) / epochs for e in range(epochs)], np.float64)
    raise ValueError(f"unknown lr_schedule {recipe.lr_schedule!r}: one of {', '.join(LR_SCHEDULES)}")


def batch_sizes_per_epoch(n: int, batch_size: int, last_batch: str = "drop") -> list[int]:
    """Sizes of the batches of one epoch over ``n`` rows: full batches, then with
    ``"keep"`` the ``n mod batch_size`` leftover rows if there are two or more."""
    if last_batch not in ("drop", "keep"):
        raise ValueError(f"unknown last_batch {last_batch!r}")
    full, rest = divmod(n, batch_size)
    return [batch_size] * full + ([rest] if rest >= 2 and last_batch == "keep" else [])


def steps_per_epoch(n: int, batch_size: int, last_batch: str = "drop") -> int:
    return len(batch_sizes_per_epoch(n, batch_size, last_batch))


@dataclass(frozen=True)
class RenormSchedule:
    """Ioffe's rmax/dmax ramps, rescaled to a run of ``total_steps`` steps.

    Ioffe (2017) trains with plain batch norm (rmax 1, dmax 0) for the first 5k
    steps, then relaxes the limits linearly, reaching rmax 3 at 40k and dmax 5 at
    25k steps. Here each milestone is a fraction of the run's own steps; with ``absolute`` it is a
    number of steps, Ioffe's own form, compared with the count of steps taken including the current
    one (``step + 1``): a warm-up of 5,000 trains steps 1 to 5,000 as plain batch norm, a warm-up of 0
    none, and a milestone past the run's end leaves the ramp unfinished. A milestone at or before the
    warm-up's end sets its limit in full right after the warm-up (no ramp); the fractional schedules
    with a milestone after the warm-up, every config's, are computed as they were before ``absolute``.
    """

    total_steps: int
    rmax: float = 3.0
    dmax: float = 5.0
    warmup: float = 0.05
    rmax_full: float = 0.4
    dmax_full: float = 0.25
    absolute: bool = False

    def limits(self, step: int) -> tuple[float, float]:
        """(rmax, dmax) in force at 0-based ``step``."""
        t = float(step + 1) if self.absolute else step / max(self.total_steps, 1)

        def ramp(full: float) -> float:
            if t <= self.warmup:
                return 0.0
            if full <= self.warmup:
                return 1.0
            return min(1.0, (t - self.warmup) / (full - self.warmup))

        return 1.0 + (self.rmax - 1.0) * ramp(self.rmax_full), self.dmax * ramp(self.dmax_full)

    @property
    def final(self) -> tuple[float, float]:
        return self.limits(self.total_steps)

    @property
    def last(self) -> tuple[float, float]:
        """(rmax, dmax) in force at the run's last step."""
        return self.limits(max(self.total_steps - 1, 0))


RENORM_STEPS = ("fraction", "absolute")


def renorm_schedule(normaliser: str, recipe: Recipe, n: int) -> RenormSchedule | None:
    """The schedule of a batch-renorm run over ``n`` training rows (None for other normalisers)."""
    if normaliser != "batchrenorm":
        return None
    if recipe.renorm_steps not in RENORM_STEPS:
        raise ValueError(f"unknown renorm_steps {recipe.renorm_steps!r}: one of {', '.join(RENORM_STEPS)}")
    return RenormSchedule(
        total_steps=recipe.epochs * steps_per_epoch(n, recipe.batch_size, recipe.last_batch),
        rmax=recipe.renorm_rmax,
        dmax=recipe.renorm_dmax,
        warmup=recipe.renorm_warmup,
        rmax_full=recipe.renorm_rmax_full,
        dmax_full=recipe.renorm_dmax_full,
        absolute=recipe.renorm_steps == "absolute",
    )


def final_limits(meta: dict[str, str], n: int) -> tuple[float, float]:
    """Batch-renorm (rmax, dmax) at the end of the run recorded in weights ``meta``."""
    if meta.get("normaliser") != "batchrenorm":
        return (1.0, 0.0)
    return renorm_schedule("batchrenorm", Recipe.from_metadata(meta), n).final
