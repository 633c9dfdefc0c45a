"""Study 1: how a training-mode prediction depends on its batch companions.

A *probe* of test example ``e`` at batch size ``b`` is one training-mode forward
pass of a batch of ``b`` test rows whose first row is ``e`` and whose other ``b - 1``
rows (its *companions*) are drawn without replacement from the rest of the test
half; the probe's result is the label the network gives ``e`` in that batch. It
*flips* when that label differs from the label ``e`` gets in inference mode.

Companion designs, per example and size (all seeded from ``(seed, STREAM_PROBE,
test index of e, b, design)``, so every network sees the same batches):

- ``random``: ``K`` batches, companions uniform over the other test rows;
- ``exact`` (``b = 2``): every one of the ``n - 1`` other test rows once as the
  single companion -- the flip rate is then exact for that example, not an estimate;
- ``own_class`` / ``other_class``: ``K`` batches whose ``b - 1`` companions all come
  from one class, the example's own, or for each batch a class drawn uniformly from
  the nine others.

Estimators, per network, design and size, over the ``E`` chosen examples, each with
the same number of probes ``K``:

- flip rate ``= (1/E) sum_e flips_e / K`` (the mean of per-example flip shares);
- training-mode accuracy ``= (1/E) sum_e correct_e / K``;
- ever flipped ``= (1/E) sum_e [flips_e > 0]``;

each with a percentile interval from a bootstrap that resamples *examples* (the
probes of one example share that example and are not independent).

Probing never moves running statistics: the vectorised path's batch normaliser
(:func:`bnstudy.kernels.batch_norm`) reads them and never writes; the
reference loop works on copies whose buffers are restored before every batch.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
import torch.nn.functional as F

from . import model as mlp
from .model import NetSpec
from .kernels import batch_norm
from .norms import BATCH_NORMALISERS, NORMALISERS
from .runtime import STREAM_BOOTSTRAP, STREAM_PROBE, derive_seed
from .stats import bootstrap_examples

DESIGNS = ("random", "exact", "own_class", "other_class")
_DESIGN_CODE = {d: i for i, d in enumerate(DESIGNS)}
PROBE_ROWS = 1024  # rows per model evaluated together (see probe_labels)


# ---- which examples, which batches ---------------------------------------------

def choose_examples(y: np.ndarray, per_class: int, seed: int) -> np.ndarray:
    """Test-set row indices of ``per_class`` examples of every class, sorted.

    Within each class the rows are a uniform draw without replacement from a
    generator seeded from ``(seed, STREAM_PROBE)``.
    """
    rng = np.random.default_rng(derive_seed(seed, STREAM_PROBE))
    chosen = []
    for c in np.unique(y):
        rows = np.flatnonzero(y == c)
        if len(rows) < per_class:
            raise ValueError(f"class {c} has {len(rows)} test rows, fewer than {per_class}")
        chosen.append(rng.choice(rows, size=per_class, replace=False))
    return np.sort(np.concatenate(chosen))


def _generator(seed: int, example: int, b: int, design: str) -> torch.Generator:
    return torch.Generator().manual_seed(
        derive_seed(seed, STREAM_PROBE, int(example), int(b), _DESIGN_CODE[design]))


def _draw_from(pool: torch.Tensor, k: int, m: int, g: torch.Generator) -> torch.Tensor:
    """``k`` rows of ``m`` distinct elements of ``pool`` each (uniform, without replacement)."""
    if m > len(pool):
        raise ValueError(f"cannot draw {m} companions from {len(pool)} rows")
    # the m smallest of uniform keys: a uniform m-subset, in key order (a partial
    # sort; the same rows as argsort(keys)[:, :m], several times faster)
    order = torch.topk(torch.rand(k, len(pool), generator=g), m, dim=1, largest=False).indices
    return pool[order]


def random_batches(n: int, example: int, b: int, k: int, seed: int) -> torch.Tensor:
    """``(k, b)`` row indices: column 0 is ``example``, then ``b - 1`` random other rows."""
    g = _generator(seed, example, b, "random")
    others = torch.cat([torch.arange(example), torch.arange(example + 1, n)])
    companions = _draw_from(others, k, b - 1, g)
    return torch.cat([torch.full((k, 1), example, dtype=torch.long), companions], dim=1)


def exact_pairs(n: int, example: int) -> torch.Tensor:
    """``(n - 1, 2)``: ``example`` with each other test row once, in row order."""
    others = torch.cat([torch.arange(example), torch.arange(example + 1, n)])
    return torch.stack([torch.full_like(others, example), others], dim=1)


def one_class_batches(y: torch.Tensor, example: int, b: int, k: int, seed: int, own: bool) -> torch.Tensor:
    """``(k, b)``: ``example`` and ``b - 1`` companions all of one class.

    ``own``: the example's class (never the example itself); otherwise each batch's
    class is drawn uniformly from the other classes.
    """
    design = "own_class" if own else "other_class"
    g = _generator(seed, example, b, design)
    label = int(y[example])
    rows = torch.arange(len(y))
    if own:
        pool = rows[(y == label) & (rows != example)]
        companions = _draw_from(pool, k, b - 1, g)
    else:
        classes = [c for c in torch.unique(y).tolist() if c != label]
        pick = torch.randint(len(classes), (k,), generator=g)
        companions = torch.empty(k, b - 1, dtype=torch.long)
        for i, c in enumerate(classes):  # one vectorised draw per class, not per batch
            where = (pick == i).nonzero().squeeze(1)
            if len(where):
                companions[where] = _draw_from(rows[y == c], len(where), b - 1, g)
    return torch.cat([torch.full((k, 1), example, dtype=torch.long), companions], dim=1)


# ---- evaluating probes -----------------------------------------------------------

def normalise_batches_(
    kind: str,
    h: torch.Tensor,
    p: dict,
    *,
    eps: float = 1e-5,
    groups: int = 1,
    limits: tuple[float, float] = (1.0, 0.0),
    first_row: bool = False,
) -> torch.Tensor:
    """Training-mode ``kind`` on many batches at once, for evaluation only; overwrites ``h``.

    ``h`` is ``(M, K, B, F)``: ``K`` batches of ``B`` rows for each of ``M`` models.
    The function is :func:`bnstudy.norms.normalise` with ``train=True,
    update=False``, without autograd: batch norm and renorm by the compiled kernel
    :func:`bnstudy.kernels.batch_norm` (in place; running statistics are read, never
    written), layer and group norm with PyTorch's fused kernels. With ``first_row``
    only row 0 of every batch is returned, ``(M, K, 1, F)``; batch statistics still
    come from all ``B`` rows. ``h`` must be contiguous.
    """
    shape = (h.shape[0], 1, 1, h.shape[-1])  # (M, F) parameters against h
    if kind == "none":
        return h[:, :, :1] if first_row else h
    if kind in BATCH_NORMALISERS:
        m, k, b, features = h.shape
        out = torch.empty(m, k, 1, features) if first_row else h
        batch_norm(h.view(m, k * b, features), torch.arange(k * b).view(k, b), p, out.view(m, -1, features),
                   eps=eps, renorm=kind == "batchrenorm", limits=limits, relu=False)
        return out
    weight, bias = p["weight"].view(shape), p["bias"].view(shape)
    rows = h[:, :, :1] if first_row else h
    features = h.shape[-1]
    if kind == "layernorm":
        y = F.layer_norm(rows, (features,), eps=eps)
    elif kind == "groupnorm":
        y = F.group_norm(rows.reshape(-1, features), groups, eps=eps).view(rows.shape)
    else:
        raise ValueError(f"unknown normaliser {kind!r}; expected one of {NORMALISERS}")
    return y.mul_(weight).add_(bias)


def first_layer(stacked, x: torch.Tensor) -> torch.Tensor:
    """Pre-normalisation activation of the first hidden layer, ``(M, N, F)``.

    It depends on the row alone, not on the batch, so it is computed once per
    test row and gathered into every batch.
    """
    m = stacked["0.weight"].shape[0]
    with torch.no_grad():
        return mlp.linear(x.expand(m, -1, -1), stacked["0.weight"], stacked["0.bias"])


def probe_labels(stacked, spec: NetSpec, pre: torch.Tensor, batches: torch.Tensor,
                 limits=(1.0, 0.0), rows: int = PROBE_ROWS, workspace: dict | None = None) -> torch.Tensor:
    """Training-mode labels ``(M, K)`` of row 0 of each batch, from :func:`first_layer`'s ``pre``.

    The ``K`` batches of every model go through together, ``k`` batches at a time so
    that about ``rows`` rows per model are in flight (bounded memory, cache-sized
    intermediates, buffers reused from chunk to chunk). Both hidden layers are
    computed for every row of every batch; the second normaliser's statistics come
    from all rows, but only row 0 is normalised and goes through the output layer,
    as no other row's value is needed. Batch norm and renorm run in the compiled
    kernel :func:`bnstudy.kernels.batch_norm`, which gathers the first layer's rows
    itself; running statistics are read (batch renorm), never written. ``workspace``
    (a dict, empty at first) keeps the scratch buffers between calls.
    """
    k_all, b = batches.shape
    m, _, features = pre.shape
    step = max(1, rows // b)
    norm1, norm2 = (mlp.norm_params(stacked, layer) for layer in mlp.NORMS)
    w2, b2 = stacked["3.weight"].transpose(1, 2), stacked["3.bias"].unsqueeze(1)
    w3, b3 = stacked["6.weight"].transpose(1, 2), stacked["6.bias"].unsqueeze(1)
    workspace = {} if workspace is None else workspace
    for name, n in (("first", step * b), ("second", step * b), ("top", step)):
        if len(workspace.get(name, ())) < m * n * features:
            workspace[name] = torch.empty(m * n * features)

    def buffer(name: str, n: int) -> torch.Tensor:  # contiguous (M, n, F) at the buffer's start
        return workspace[name][:m * n * features].view(m, n, features)

    batch_kind = spec.normaliser in BATCH_NORMALISERS
    settings = {"eps": spec.eps, "limits": limits}
    if batch_kind:
        settings["renorm"] = spec.normaliser == "batchrenorm"
        in_order = torch.arange(step * b).view(step, b)  # the second layer's rows, batch by batch
    out = torch.empty(m, k_all, dtype=torch.long)
    with torch.no_grad():
        for start in range(0, k_all, step):
            chunk = batches[start:start + step]
            k = len(chunk)
            a1, h2, a2 = buffer("first", k * b), buffer("second", k * b), buffer("top", k)
            if batch_kind:
                batch_norm(pre, chunk, norm1, a1, **settings)
            else:
                torch.index_select(pre, 1, chunk.reshape(-1), out=a1)
                a1 = normalise_batches_(spec.normaliser, a1.view(m, k, b, features), norm1, eps=spec.eps,
                                        groups=spec.groups).relu_().view(m, k * b, features)
            torch.baddbmm(b2, a1, w2, out=h2)
            if batch_kind:
                batch_norm(h2, in_order[:k], norm2, a2, **settings)
            else:
                a2 = normalise_batches_(spec.normaliser, h2.view(m, k, b, features), norm2, eps=spec.eps,
                                        groups=spec.groups, first_row=True).relu_().view(m, k, features)
            logits = torch.baddbmm(b3, a2, w3)
            out[:, start:start + k] = logits.argmax(-1)
    return out


def batch_predictions(stacked, spec: NetSpec, x: torch.Tensor, batches: torch.Tensor,
                      limits=(1.0, 0.0)) -> torch.Tensor:
    """Training-mode labels of the probed rows, vectorised over batches and models.

    ``batches`` is a LongTensor ``(K, b)`` of row indices of ``x`` whose column 0 is
    the probed example; returns ``(M, K)``.
    """
    return probe_labels(stacked, spec, first_layer(stacked, x), batches, limits)


def batch_predictions_loop(stacked, spec: NetSpec, x: torch.Tensor, batches: torch.Tensor,
                           limits=(1.0, 0.0)) -> torch.Tensor:
    """The straightforward reference for :func:`batch_predictions`: one batch at a time.

    For each model, a plain ``nn.Sequential`` (:func:`bnstudy.model.build_module`)
    loaded with its weights, deep-copied and put in training mode; before every
    batch its buffers are restored from the saved state, so the updates PyTorch
    makes in training mode neither leak into later batches (batch renorm reads
    them) nor reach the caller's tensors.
    """
    out = torch.empty(len(mlp.unstack(stacked)), len(batches), dtype=torch.long)
    for i, state in enumerate(mlp.unstack(stacked)):
        net = mlp.build_module(spec)
        net.load_state_dict(state)
        net = copy.deepcopy(net).train()
        buffers = {k: v.clone() for k, v in net.named_buffers()}
        live = dict(net.named_buffers())
        for layer in mlp.NORMS:
            if spec.normaliser == "batchrenorm":
                net[int(layer)].rmax, net[int(layer)].dmax = limits
        with torch.no_grad():
            for j, batch in enumerate(batches):
                for k, v in buffers.items():
                    live[k].copy_(v)
                out[i, j] = net(x[batch])[0].argmax()
    return out


# ---- one network: every example, design and size ---------------------------------

def example_plans(y: torch.Tensor, example: int, batch_sizes, batches_per_example: int,
                  one_class_batch_size: int, seed: int) -> list[tuple[str, int, torch.Tensor]]:
    """Every probe batch of one example, as ``(design, b, batches)``, in probing order.

    Random companions at each size in ``batch_sizes``, every pair when 2 is among
    them, and own- and other-class companions at ``one_class_batch_size``.
    """
    n, k, b1 = len(y), batches_per_example, one_class_batch_size
    plans = [("random", b, random_batches(n, example, b, k, seed)) for b in batch_sizes]
    if 2 in batch_sizes:
        plans.append(("exact", 2, exact_pairs(n, example)))
    plans.append(("own_class", b1, one_class_batches(y, example, b1, k, seed, own=True)))
    plans.append(("other_class", b1, one_class_batches(y, example, b1, k, seed, own=False)))
    return plans


def probe_network(stacked, spec: NetSpec, x: torch.Tensor, y: torch.Tensor, examples, *,
                  batch_sizes, batches_per_example: int, one_class_batch_size: int, seed: int,
                  limits=(1.0, 0.0)) -> list[dict]:
    """Per-example probe counts of every model of ``stacked``.

    One dict per (model, example, design, batch size) with ``batches`` (probes),
    ``flips`` (label differs from inference mode), ``correct`` (label is the true
    one), plus the example's true and inference-mode labels. ``model`` is the index
    into the stack.
    """
    pre = first_layer(stacked, x)
    inference = mlp.predict(stacked, spec, x[torch.tensor([int(e) for e in examples])])  # (M, E)
    m = pre.shape[0]
    rows, workspace = [], {}
    for j, e in enumerate(int(e) for e in examples):
        for design, b, batches in example_plans(y, e, batch_sizes, batches_per_example, one_class_batch_size, seed):
            labels = probe_labels(stacked, spec, pre, batches, limits, workspace=workspace)  # (M, K)
            flips = (labels != inference[:, j : j + 1]).sum(1)
            correct = (labels == y[e]).sum(1)
            for i in range(m):
                rows.append({"model": i, "example": e, "label": int(y[e]),
                             "inference_label": int(inference[i, j]), "design": design,
                             "batch_size": b, "batches": len(batches),
                             "flips": int(flips[i]), "correct": int(correct[i])})
    return rows


# ---- summaries -------------------------------------------------------------------

def summarise(per_example, resamples: int, confidence: float, seed: int) -> list[dict]:
    """Flip rate, training-mode accuracy and ever-flipped share per (network, seed, design, b).

    ``per_example`` is a DataFrame of :func:`probe_network` rows plus ``network``
    and ``seed`` columns. Each estimate (see the module docstring) comes with a
    percentile bootstrap interval over examples; the bootstrap generator is seeded
    from ``(seed, STREAM_BOOTSTRAP, design, b)``, so every network is resampled with
    the same example draws. ``inference_accuracy`` is over the same examples.
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
        row = dict(cell, examples=len(g), batches_per_example=int(g["batches"].iloc[0]),
                   inference_accuracy=float((g["inference_label"] == g["label"]).mean()))
        for name, values in measures.items():
            rng = np.random.default_rng(derive_seed(seed, STREAM_BOOTSTRAP, _DESIGN_CODE[cell["design"]],
                                                    int(cell["batch_size"])))
            lo, hi = bootstrap_examples(values, resamples, confidence, rng)
            row |= {name: float(values.mean()), f"{name}_ci_low": lo, f"{name}_ci_high": hi}
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
    return out
