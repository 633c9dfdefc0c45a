"""The audit of one network: the study's measurements on any PyTorch module.

:func:`audit` measures, on data the user supplies (inputs, optional labels, optional
group ids such as source, customer or day):

- *companion dependence*: the share of training-mode predictions (batch statistics)
  whose label differs from the inference-mode one (running statistics), in random
  batches at each listed size, in one-group batches (by label; by group id), and
  exactly at ``b = 2`` for a sample of examples (:mod:`bnstudy.audit.designs`; each
  example's share over its probes, averaged over examples; percentile bootstrap
  interval over examples, stratified by label when labels are given and every label
  holds enough examples: :mod:`bnstudy.audit.intervals`, the study's estimator and interval);
- per batch-norm layer, the distance of its running statistics from the exact
  statistics of the data (the study's remedy (d) and its distances,
  :func:`bnstudy.audit.engine.distance`), the band of that distance that the sampling
  noise of the data's own rows gives (:func:`noise_bands`), and the updates they carry;
- with labels, accuracy with the stored running statistics against statistics
  recomputed on the data (or on ``stats_x``): the remedy the study measured.

Only normalisation layers change mode: the rest of the network stays in evaluation
mode (dropout off), so every flip is one that batch statistics cause.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from bnstudy.base.runtime import STREAM_BOOTSTRAP, derive_seed

from . import designs
from .engine import AuditError, Engine, distance
from .intervals import MIN_STRATUM, TAIL_RESAMPLES, bootstrap_examples, min_resamples, strata_or_none
from .progress import Progress
from .report import STALE

DEFAULT_SIZES = (2, 4, 16, 64)
DESIGN_WORDS = {
    "random": "random companions",
    "label": "companions of the same label",
    "group": "companions of the same group",
    "exact": "every companion once",
}
DESIGNS = tuple(DESIGN_WORDS)
NAMES = {"x": "inputs", "y": "labels", "groups": "groups", "stats_x": "statistics inputs"}


@dataclass
class AuditResult:
    """What :func:`audit` measured. ``flips``: one dict per design and batch size; ``layers``: one per
    normalisation layer; ``accuracy``: running against recomputed statistics (``None`` without labels);
    ``per_example``: probes and flips of every probed example, design and size."""

    settings: dict
    normalisers: list[dict]
    flips: list[dict]
    layers: list[dict]
    accuracy: dict | None
    per_example: list[dict] = field(repr=False)
    timing: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def batch_free(self) -> bool:
        return not any(n["batch_statistics"] for n in self.normalisers)

    def flip(self, b: int, design: str = "random") -> dict | None:
        """The row of ``design`` at batch size ``b``, or ``None`` if it was not measured."""
        for r in self.flips:
            if r["design"] == design and r["batch_size"] == int(b):
                return r
        return None

    def flip_rate(self, b: int, design: str = "random") -> float:
        r = self.flip(b, design)
        if r is None:
            raise KeyError(f"no {design} flip rate at batch size {b}")
        return r["flip_rate"]

    def gate_design(self) -> str:
        """The design a threshold is held to: one-group batches when group ids were given (the
        batches a server of grouped traffic sees), random companions otherwise."""
        return "group" if self.settings.get("groups") else "random"

    def headline(self, b: int | None = None) -> dict | None:
        """The row a threshold is held to at ``b`` (default: the serving batch): :meth:`gate_design`'s."""
        b = self.settings.get("serving_batch") if b is None else b
        return None if b is None else self.flip(b, self.gate_design())

    def worst_examples(self, b: int, design: str = "random", count: int = 5) -> list[dict]:
        """The ``count`` examples of ``design`` at ``b`` whose share of flipped probes is largest
        (ties by row), each ``{"example", "probes", "flips"}``."""
        rows = [p for p in self.per_example if p["design"] == design and p["batch_size"] == int(b) and p["flips"]]
        rows.sort(key=lambda p: (-p["flips"] / p["probes"], p["example"]))
        return [{k: p[k] for k in ("example", "probes", "flips")} for p in rows[:count]]

    def findings(self) -> list[dict]:
        from .report import findings

        return findings(self)

    def summary(self) -> str:
        from .report import summary

        return summary(self)

    def to_dict(self) -> dict:
        from .report import to_dict

        return to_dict(self)


def _tensor(x, name: str) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        t = x.detach()
    else:
        a = np.asarray(x)
        if a.dtype.kind not in "biuf":
            raise AuditError(f"{name}: values of dtype {a.dtype} are not numbers")
        t = torch.as_tensor(a)
    if t.dim() < 1 or len(t) < 2:
        raise AuditError(f"{name}: need at least 2 rows, got shape {tuple(t.shape)}")
    if t.is_floating_point() or t.is_complex():
        bad = ~torch.isfinite(t.reshape(len(t), -1)).all(dim=1)
        if bad.any():
            raise AuditError(f"{name}: NaN or infinite values (first at row {int(bad.nonzero()[0, 0])})")
    return t


def _ids(v, n: int, name: str) -> np.ndarray | None:
    if v is None:
        return None
    a = np.asarray(v.detach().cpu() if isinstance(v, torch.Tensor) else v)
    if a.ndim != 1 or len(a) != n:
        raise AuditError(f"{name}: {len(a) if a.ndim else 0} values of shape {a.shape} for {n} input rows")
    if a.dtype.kind == "f":
        if not np.isfinite(a).all() or (a != np.round(a)).any():
            raise AuditError(f"{name}: values must be whole numbers (ids), found {a[a != np.round(a)][:1]}")
        a = a.astype(np.int64)
    return a


def _model_dtype(model) -> torch.dtype:
    for p in list(model.parameters()) + list(model.buffers()):
        if p.is_floating_point():
            return p.dtype
    return torch.float32


def _share(values) -> float:
    v = [float(x) for x in values]
    return math.fsum(v) / len(v) if v else float("nan")


def _interval(values, strata, opts, code, b, unstratified: list | None = None, what: str = ""):
    """The bootstrap interval of the mean of ``values``: NaN for fewer than 2 values; resampled within
    ``strata`` only where every stratum holds :data:`MIN_STRATUM` values (else ``what`` goes to
    ``unstratified``)."""
    if len(values) < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(derive_seed(opts.seed, STREAM_BOOTSTRAP, code, int(b)))
    usable = strata_or_none(strata)
    if strata is not None and usable is None and unstratified is not None:
        unstratified.append(what)
    return bootstrap_examples(np.asarray(values, np.float64), opts.resamples, opts.confidence, rng, strata=usable)


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
    (:func:`noise_bands`; 0 resamples: none, a fixed threshold); ``seed``: every random draw;
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


def audit(model: torch.nn.Module, x, y=None, groups=None, **options) -> AuditResult:
    """Audit ``model`` on inputs ``x`` (rows first), labels ``y`` and group ids ``groups`` (both optional).

    ``options``: the keywords of :class:`Options` (batch sizes, probes, the exact sample,
    the statistics data, the bootstrap, seed, device, chunking, progress, designs).
    Every option and input is checked before the first probe. Returns an :class:`AuditResult`.
    """
    started = time.perf_counter()
    try:
        opts = Options(**options)
    except TypeError as e:
        raise AuditError(f"audit(): {e}") from None
    sizes = check_options(opts)
    norms = _normalisers(model)
    xt, y, groups, st = _inputs(model, x, y, groups, opts)
    if opts.serving_batch is not None and opts.serving_batch > len(xt):
        raise AuditError(
            f"{opts.name('x')}: the serving batch of {opts.serving_batch} is larger than its {len(xt)} rows"
        )
    engine = Engine(model, xt, chunk_rows=opts.chunk_rows, device=opts.device)
    notes = []
    inference, st = _inference_labels(engine, st, y, opts, notes)
    xt = engine.x
    plans, exact = _plans(len(xt), sizes, y, groups, opts, notes)
    flips_rows, per_example, timing = _probe_all(engine, plans, inference, y, opts, notes)
    layers = _layer_rows(engine, norms)
    accuracy = _statistics(engine, norms, layers, (xt, st, y, inference), opts, notes)
    settings = _settings(xt, sizes, (y, groups, exact), engine, opts)
    timing = {"seconds": time.perf_counter() - started} | timing
    norm_rows = [{"name": x_.name, "kind": x_.kind, "batch_statistics": x_.batch} for x_ in norms]
    return AuditResult(settings, norm_rows, flips_rows, layers, accuracy, per_example, timing, notes)


def _normalisers(model):
    """The model's normalisation layers; refused if it is no module, has none, or keeps no
    running statistics where it has batch statistics."""
    if not isinstance(model, torch.nn.Module):
        raise AuditError(f"the model is a {type(model).__name__}, not a torch.nn.Module")
    from .layers import find_normalisers

    norms = find_normalisers(model)
    if not norms:
        raise AuditError(
            "the model has no normalisation layer (batch, group, layer or instance norm): nothing to audit"
        )
    for n in norms:
        if n.batch and not n.tracks:
            raise AuditError(
                f"layer {n.name} ({n.kind}) keeps no running statistics (track_running_stats=False): "
                "it uses batch statistics in inference mode too"
            )
    return norms


def _inputs(model, x, y, groups, opts: Options):
    """``(inputs, labels, groups, statistics inputs)`` as the engine takes them, checked."""
    dtype = _model_dtype(model)
    xt = _tensor(x, opts.name("x"))
    n = len(xt)
    if xt.is_floating_point():
        xt = xt.to(dtype)
    xt = xt.to(opts.device)
    y = _ids(y, n, opts.name("y"))
    groups = _ids(groups, n, opts.name("groups"))
    st = xt if opts.stats_x is None else _tensor(opts.stats_x, opts.name("stats_x"))
    if st.is_floating_point():
        st = st.to(dtype)
    st = st.to(opts.device)
    if opts.stats_x is not None and tuple(st.shape[1:]) != tuple(xt.shape[1:]):
        raise AuditError(
            f"{opts.name('stats_x')}: statistics inputs have rows of shape {tuple(st.shape[1:])}, "
            f"inputs {tuple(xt.shape[1:])}"
        )
    return xt, y, groups, st


def _first_line(e: BaseException) -> str:
    from .files import one_line

    return one_line(e)


def _inference_labels(engine: Engine, st, y, opts: Options, notes: list):
    """Every row's inference-mode label, and the statistics inputs as the model takes them.

    Integer or boolean inputs (e.g. uint8 images) go to the model as they are; if it refuses them,
    as its floating dtype (values unchanged, not rescaled), and a note says so. Refused in one
    line if the model rejects the inputs or the labels do not fit its classes."""
    xt = engine.x
    try:
        inference = engine.inference_labels()
    except AuditError:
        raise
    except Exception as e:  # the model rejects the inputs: cast integers, or say so in one line
        if xt.is_floating_point() or xt.is_complex():
            raise AuditError(
                f"{opts.name('x')}: the model does not accept inputs of shape {tuple(xt.shape)}: {_first_line(e)}"
            ) from None
        dtype = _model_dtype(engine.net)
        engine.x = xt.to(dtype)
        try:
            inference = engine.inference_labels()
        except Exception:
            raise AuditError(
                f"{opts.name('x')}: the model does not accept inputs of shape {tuple(xt.shape)} and dtype "
                f"{str(xt.dtype).removeprefix('torch.')}, nor as {str(dtype).removeprefix('torch.')}: {_first_line(e)}"
            ) from None
        notes.append(
            f"{opts.name('x')}: {str(xt.dtype).removeprefix('torch.')} values given to the model as "
            f"{str(dtype).removeprefix('torch.')} (as they are, not rescaled: scale them as the model was trained)"
        )
        if not st.is_floating_point():
            st = st.to(dtype)
    if y is not None:
        classes = _classes(engine, engine.x)
        if y.min() < 0 or y.max() >= classes:
            raise AuditError(f"{opts.name('y')}: range {y.min()}..{y.max()} does not fit the model's {classes} classes")
    return inference, st


def _plans(n: int, sizes, y, groups, opts: Options, notes: list) -> tuple[list, np.ndarray | None]:
    """The probe plans ``(design, b, batches, counted)`` and the exact examples (or None);
    what could not be probed goes to ``notes``."""
    plans = []
    all_rows = np.arange(n)
    for b in sizes:
        if "random" in opts.designs_wanted:
            if n >= b:
                rng = designs.generator(opts.seed, "random", b)
                plans.append(("random", b, *designs.rounds(all_rows, b, opts.probes, rng)))
            else:
                notes.append(f"random batches of {b}: only {n} rows")
        for design, ids in (("label", y), ("group", groups)):
            if ids is not None and design in opts.designs_wanted:
                plans += _one_group_plan(design, ids, b, opts, notes)
    exact = _exact_examples(n, y, opts, notes)
    if exact is not None:
        plans.append(("exact", 2, *designs.exact_pairs(exact, all_rows)))
    return plans, exact


def _one_group_plan(design: str, ids, b: int, opts: Options, notes: list) -> list:
    """Batches of ``b`` rows of one label or group id each (as a list of at most one plan)."""
    rng = designs.generator(opts.seed, design, b)
    parts, marks, small = [], [], 0
    for g in np.unique(ids):
        pool = np.flatnonzero(ids == g)
        if len(pool) < b:
            small += len(pool)
            continue
        bt, ct = designs.rounds(pool, b, opts.probes, rng)
        parts.append(bt)
        marks.append(ct)
    if small:
        notes.append(f"{design} batches of {b}: {small} rows in {design}s of fewer than {b} rows not probed")
    return [(design, b, np.concatenate(parts), np.concatenate(marks))] if parts else []


def _exact_examples(n: int, y, opts: Options, notes: list):
    """The examples enumerated exactly at ``b = 2``: the given ones, or a stratified sample of the
    asked size that fits the budget (None: no exact design)."""
    if opts.exact_examples is not None:
        exact = np.unique(np.asarray(opts.exact_examples, np.int64))
        if len(exact) == 0 or exact[0] < 0 or exact[-1] >= n:
            raise AuditError(f"exact examples must be row indices in [0, {n}), got {len(exact)} values")
        return exact
    if "exact" not in opts.designs_wanted or opts.exact_sample <= 0:
        return None
    budget, sample = opts.exact_budget, min(opts.exact_sample, n)
    fit = max(0, min(int(sample), budget // (2 * (n - 1))))
    if fit < 1:
        notes.append(f"exact b = 2: {n - 1} pairs per example exceed the budget of {budget} rows")
        return None
    if fit < sample:
        notes.append(f"exact b = 2: {fit} examples (not {sample}) fit the budget of {budget} rows")
    if opts.exact_sample > n:
        notes.append(f"exact b = 2: all {n} rows (fewer than the {opts.exact_sample} asked for)")
    return designs.stratified_sample(n, fit, y, opts.seed)


def _probe_all(engine: Engine, plans, inference, y, opts: Options, notes: list):
    """Every plan probed: ``(flip rows, per-example rows, timing)``."""
    total = sum(p[2].size for p in plans)
    bar = Progress(total, "rows", enabled=opts.progress)
    per_example, flips_rows, unstratified = [], [], []
    counted_total = 0
    probe_start = time.perf_counter()
    for design, b, batches, counted in plans:
        labels = engine.train_labels(batches, progress=bar)
        row = _probe_plan((design, b, batches, counted), labels, inference, y, opts, per_example, unstratified)
        flips_rows.append(row)
        counted_total += int(counted.sum())
    bar.close()
    if unstratified:
        notes.append(
            f"intervals resampled without strata where a label holds fewer than {MIN_STRATUM} of the examples "
            f"(one or two examples of a label cannot show its spread): {', '.join(unstratified)}"
        )
    probe_seconds = time.perf_counter() - probe_start
    timing = {
        "probe_seconds": probe_seconds,
        "probes": counted_total,
        "rows_forwarded": int(total),
        "probes_per_second": counted_total / probe_seconds if probe_seconds > 0 else float("nan"),
    }
    return flips_rows, per_example, timing


def _probe_plan(plan, labels, inference, y, opts: Options, per_example: list, unstratified: list) -> dict:
    """One plan's flip row from its training-mode ``labels``; its examples' rows go to ``per_example``."""
    design, b, batches, counted = plan
    n = len(inference)
    rows = batches[counted]
    flipped = (labels[counted] != inference[rows]).astype(np.int64)
    counts = np.bincount(rows, minlength=n)
    flips = np.bincount(rows, weights=flipped, minlength=n).astype(np.int64)
    correct = None if y is None else np.bincount(rows, weights=labels[counted] == y[rows], minlength=n)
    probed = np.flatnonzero(counts)
    share = flips[probed] / counts[probed]
    for e in probed:
        per_example.append(
            {"design": design, "batch_size": b, "example": int(e), "probes": int(counts[e]), "flips": int(flips[e])}
            | ({} if correct is None else {"correct": int(correct[e])})
        )
    strata = None if y is None else y[probed]
    code = designs.DESIGN_CODES[design]
    lo, hi = _interval(share, strata, opts, code, b, unstratified, f"{design} b={b}")
    ever = (flips[probed] > 0).astype(np.float64)
    row = {
        "design": design,
        "batch_size": int(b),
        "examples": len(probed),
        "probes": int(counts.sum()),
        "probes_per_example": int(counts[probed].max()) if len(probed) else 0,
        "flips": int(flips.sum()),
        "flip_rate": _share(share),
        "ci_low": lo,
        "ci_high": hi,
        "ci_stratified": strata_or_none(strata) is not None,
        "ever_flipped": _share(ever),
    }
    if correct is not None:
        row["train_mode_accuracy"] = _share(correct[probed] / counts[probed])
    return row


def _statistics(engine: Engine, norms, layers, data, opts: Options, notes: list) -> dict | None:
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
    return {"running": _share((inference == y).astype(np.float64)), "recomputed": None}


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
    lo, hi = _interval(hit_new - hit_run, y, opts, 99, 0)
    return {
        "running": _share(hit_run),
        "recomputed": _share(hit_new),
        "gain": _share(hit_new - hit_run),
        "gain_ci_low": lo,
        "gain_ci_high": hi,
        "changed_labels": int((recomputed != inference).sum()),
        "statistics_rows": len(st),
        "statistics_data": "audited data" if opts.stats_x is None else "statistics data",
    }


def _settings(xt, sizes, given, engine: Engine, opts: Options) -> dict:
    """The audit's settings as reported; ``given`` is ``(labels, groups, exact examples)``."""
    y, groups, exact = given
    n = len(xt)
    return {
        "rows": n,
        "input_shape": list(xt.shape[1:]),
        "batch_sizes": sizes,
        "serving_batch": int(opts.serving_batch) if opts.serving_batch else None,
        "probes_per_example": int(opts.probes),
        "exact_sample": 0 if exact is None else len(exact),
        "exact_pool": n,
        "labels": y is not None,
        "groups": groups is not None,
        "resamples": int(opts.resamples),
        "confidence": float(opts.confidence),
        "noise_resamples": int(opts.noise_resamples),
        "noise_rows": int(opts.noise_rows),
        "seed": int(opts.seed),
        "device": str(opts.device),
        "torchscript": engine.scripted,
        "threads": torch.get_num_threads(),
    }


def _classes(engine: Engine, x) -> int:
    with torch.inference_mode():
        out = engine.net(x[:2])
    out = out[0] if isinstance(out, (tuple, list)) else out
    return 2 if out.dim() == 1 or out.shape[1] == 1 else int(out.shape[1])


def engine_layer(engine: Engine, name: str):
    return dict(engine._layers())[name]


def _layer_rows(engine: Engine, norms) -> list[dict]:
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
