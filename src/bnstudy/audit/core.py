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
  noise of the data's own rows gives (:func:`bnstudy.audit.statistics.noise_bands`), and the updates they carry;
- with labels, accuracy with the stored running statistics against statistics
  recomputed on the data (or on ``stats_x``): the remedy the study measured.

Only normalisation layers change mode: the rest of the network stays in evaluation
mode (dropout off), so every flip is one that batch statistics cause.

Here: the result (:class:`AuditResult`), the inputs checked and brought to the model, and
:func:`audit`, which runs the parts in order: the options (:mod:`bnstudy.audit.options`), the
probes (:mod:`bnstudy.audit.probing`), the running statistics (:mod:`bnstudy.audit.statistics`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from .engine import AuditError, Engine
from .options import Options, check_options
from .probing import probe_all, probe_plans
from .statistics import check_statistics, layer_rows


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
        from .findings import findings

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
    plans, exact = probe_plans(len(xt), sizes, y, groups, opts, notes)
    flips_rows, per_example, timing = probe_all(engine, plans, inference, y, opts, notes)
    layers = layer_rows(engine, norms)
    accuracy = check_statistics(engine, norms, layers, (xt, st, y, inference), opts, notes)
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
