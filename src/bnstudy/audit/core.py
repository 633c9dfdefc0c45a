"""The audit of one network: the study's measurements on any PyTorch module.

:func:`audit` measures, on data the user supplies (inputs, optional labels, optional
group ids such as source, customer or day):

- *companion dependence*: the share of training-mode predictions (batch statistics)
  whose label differs from the inference-mode one (running statistics), in random
  batches at each listed size, in one-group batches (by label; by group id), and
  exactly at ``b = 2`` for a sample of examples (:mod:`bnstudy.audit.designs`; each
  example's share over its probes, averaged over examples; percentile bootstrap
  interval over examples, stratified by label when labels are given:
  :func:`bnstudy.base.stats.bootstrap_examples`, the study's estimator and interval);
- per batch-norm layer, the distance of its running statistics from the exact
  statistics of the data (the study's remedy (d) and its distances,
  :func:`bnstudy.audit.engine.distance`), and the updates they carry;
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
from bnstudy.base.stats import bootstrap_examples

from . import designs
from .engine import AuditError, Engine, distance
from .progress import Progress
from .report import STALE

DEFAULT_SIZES = (2, 4, 16, 64)
DESIGN_WORDS = {
    "random": "random companions",
    "label": "companions of the same label",
    "group": "companions of the same group",
    "exact": "every companion once",
}


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
    t = torch.as_tensor(np.asarray(x)) if not isinstance(x, torch.Tensor) else x.detach()
    if t.dim() < 1 or len(t) < 2:
        raise AuditError(f"{name}: need at least 2 rows, got shape {tuple(t.shape)}")
    if t.is_floating_point() or t.is_complex():
        bad = ~torch.isfinite(t.reshape(len(t), -1)).all(dim=1)
        if bad.any():
            raise AuditError(f"{name}: inputs hold NaN or infinite values (first at row {int(bad.nonzero()[0, 0])})")
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


def _interval(values, strata, resamples, confidence, seed, code, b):
    if len(values) < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(derive_seed(seed, STREAM_BOOTSTRAP, code, int(b)))
    if strata is not None and np.unique(strata, return_counts=True)[1].min() < 1:
        strata = None
    return bootstrap_examples(np.asarray(values, np.float64), resamples, confidence, rng, strata=strata)


@dataclass(frozen=True)
class Options:
    """How :func:`audit` probes: every keyword argument of :func:`audit`, with its default.

    ``batch_sizes`` (and ``serving_batch``, added to them): the probe batch sizes;
    ``probes``: training-mode predictions per example at each size and design;
    ``exact_sample``: examples enumerated exactly at ``b = 2`` (fewer if the pairs would
    exceed ``exact_budget`` rows), or ``exact_examples``, their row indices; ``stats_x``: the
    data the statistics are recomputed on (default ``x``); ``resamples`` and ``confidence``:
    the bootstrap intervals; ``seed``: every random draw; ``device``: where the model runs;
    ``chunk_rows``: rows per forward pass; ``progress``: a progress bar; ``designs_wanted``:
    the probe designs.
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
    seed: int = 0
    device: str = "cpu"
    chunk_rows: int = 1024
    progress: bool = False
    designs_wanted: tuple = ("random", "label", "group", "exact")


def audit(model: torch.nn.Module, x, y=None, groups=None, **options) -> AuditResult:
    """Audit ``model`` on inputs ``x`` (rows first), labels ``y`` and group ids ``groups`` (both optional).

    ``options``: the keywords of :class:`Options` (batch sizes, probes, the exact sample,
    the statistics data, the bootstrap, seed, device, chunking, progress, designs).
    Returns an :class:`AuditResult`.
    """
    started = time.perf_counter()
    opts = Options(**options)
    norms = _normalisers(model, opts.device)
    sizes = _sizes(opts)
    xt, y, groups, st = _inputs(model, x, y, groups, opts)
    engine = Engine(model, xt, chunk_rows=opts.chunk_rows, device=opts.device)
    inference = _inference_labels(engine, xt, y)
    notes = []
    plans, exact = _plans(len(xt), sizes, y, groups, opts, notes)
    flips_rows, per_example, timing = _probe_all(engine, plans, inference, y, opts)
    layers = _layer_rows(engine, norms)
    accuracy = _statistics(engine, norms, layers, (xt, st, y, inference), opts, notes)
    settings = _settings(xt, sizes, (y, groups, exact), engine, opts)
    timing = {"seconds": time.perf_counter() - started} | timing
    norm_rows = [{"name": x_.name, "kind": x_.kind, "batch_statistics": x_.batch} for x_ in norms]
    return AuditResult(settings, norm_rows, flips_rows, layers, accuracy, per_example, timing, notes)


def _normalisers(model, device):
    """The model's normalisation layers; refused if it is no module, has none, or keeps no
    running statistics where it has batch statistics, or the device is a GPU torch cannot see."""
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
    if device != "cpu" and str(device).startswith("cuda") and not torch.cuda.is_available():
        raise AuditError(f"device {device}: torch sees no GPU")
    return norms


def _sizes(opts: Options) -> list[int]:
    """The probe batch sizes, the serving batch among them; checked with the probes per example."""
    serving = {int(opts.serving_batch)} if opts.serving_batch else set()
    sizes = sorted({int(b) for b in opts.batch_sizes} | serving)
    if not sizes or sizes[0] < 2:
        raise AuditError(f"batch sizes must be at least 2, got {sizes}")
    if opts.probes < 1:
        raise AuditError(f"probes per example must be at least 1, got {opts.probes}")
    return sizes


def _inputs(model, x, y, groups, opts: Options):
    """``(inputs, labels, groups, statistics inputs)`` as the engine takes them, checked."""
    dtype = _model_dtype(model)
    xt = _tensor(x, "inputs")
    n = len(xt)
    if xt.is_floating_point():
        xt = xt.to(dtype)
    xt = xt.to(opts.device)
    y = _ids(y, n, "labels")
    groups = _ids(groups, n, "groups")
    st = xt if opts.stats_x is None else _tensor(opts.stats_x, "statistics inputs")
    if st.is_floating_point():
        st = st.to(dtype)
    st = st.to(opts.device)
    if opts.stats_x is not None and tuple(st.shape[1:]) != tuple(xt.shape[1:]):
        raise AuditError(f"statistics inputs have rows of shape {tuple(st.shape[1:])}, inputs {tuple(xt.shape[1:])}")
    return xt, y, groups, st


def _inference_labels(engine: Engine, xt, y):
    """Every row's inference-mode label; refused if the model rejects the inputs or the labels
    do not fit its classes."""
    try:
        inference = engine.inference_labels()
    except AuditError:
        raise
    except Exception as e:  # the model rejects the inputs: say so in one line
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise AuditError(f"the model does not accept inputs of shape {tuple(xt.shape)}: {msg}") from None
    if y is not None:
        classes = _classes(engine, xt)
        if y.min() < 0 or y.max() >= classes:
            raise AuditError(f"labels: range {y.min()}..{y.max()} does not fit the model's {classes} classes")
    return inference


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
    """The examples enumerated exactly at ``b = 2``: the given ones, or a stratified sample that
    fits the budget (None: no exact design)."""
    if opts.exact_examples is not None:
        exact = np.unique(np.asarray(opts.exact_examples, np.int64))
        if len(exact) == 0 or exact[0] < 0 or exact[-1] >= n:
            raise AuditError(f"exact examples must be row indices in [0, {n}), got {len(exact)} values")
        return exact
    if "exact" not in opts.designs_wanted or opts.exact_sample <= 0:
        return None
    budget, sample = opts.exact_budget, opts.exact_sample
    fit = max(0, min(int(sample), budget // (2 * (n - 1))))
    if fit < 1:
        notes.append(f"exact b = 2: {n - 1} pairs per example exceed the budget of {budget} rows")
        return None
    if fit < sample:
        notes.append(f"exact b = 2: {fit} examples (not {sample}) fit the budget of {budget} rows")
    return designs.stratified_sample(n, fit, y, opts.seed)


def _probe_all(engine: Engine, plans, inference, y, opts: Options):
    """Every plan probed: ``(flip rows, per-example rows, timing)``."""
    total = sum(p[2].size for p in plans)
    bar = Progress(total, "rows", enabled=opts.progress)
    per_example, flips_rows = [], []
    counted_total = 0
    probe_start = time.perf_counter()
    for design, b, batches, counted in plans:
        labels = engine.train_labels(batches, progress=bar)
        flips_rows.append(_probe_plan((design, b, batches, counted), labels, inference, y, opts, per_example))
        counted_total += int(counted.sum())
    bar.close()
    probe_seconds = time.perf_counter() - probe_start
    timing = {
        "probe_seconds": probe_seconds,
        "probes": counted_total,
        "rows_forwarded": int(total),
        "probes_per_second": counted_total / probe_seconds if probe_seconds > 0 else float("nan"),
    }
    return flips_rows, per_example, timing


def _probe_plan(plan, labels, inference, y, opts: Options, per_example: list) -> dict:
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
    lo, hi = _interval(share, strata, opts.resamples, opts.confidence, opts.seed, code, b)
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
        _distances(engine, layers, exact_stats, notes)
        return None if y is None else _recomputed_accuracy(engine, exact_stats, data, opts)
    if y is None:
        return None
    return {"running": _share((inference == y).astype(np.float64)), "recomputed": None}


def _distances(engine: Engine, layers, exact_stats, notes: list) -> None:
    """Each batch-statistics layer's distance of its running statistics from the exact ones."""
    for r in layers:
        if r["name"] in exact_stats:
            em, ev = exact_stats[r["name"]]
            m = engine_layer(engine, r["name"])
            md, vd = distance(m.running_mean.cpu().numpy(), m.running_var.cpu().numpy(), em, ev, m.eps)
            r |= {"mean_distance": md, "var_distance": vd, "stale": bool(md > STALE or vd > STALE)}
        elif r["batch_statistics"]:
            r |= {"mean_distance": None, "var_distance": None, "stale": None}
            notes.append(f"layer {r['name']}: not reached by a forward pass, no statistics")


def _recomputed_accuracy(engine: Engine, exact_stats, data, opts: Options) -> dict:
    """Accuracy with the running statistics against the recomputed ones, with the gain's interval."""
    xt, st, y, inference = data
    recomputed = engine.inference_labels_with(exact_stats, xt)
    hit_run = (inference == y).astype(np.float64)
    hit_new = (recomputed == y).astype(np.float64)
    lo, hi = _interval(hit_new - hit_run, y, opts.resamples, opts.confidence, opts.seed, 99, 0)
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
