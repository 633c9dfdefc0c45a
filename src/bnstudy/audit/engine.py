"""Forward passes of the audited network: inference-mode labels, training-mode labels in
probe batches (every row of every batch), and the exact statistics of its batch-norm layers.

An eager module is probed through :func:`bnstudy.audit.layers.probe_copy`: many probe
batches in one forward pass. A TorchScript module cannot have its layers replaced: its
batch-statistics layers are put in training mode one batch at a time, and the buffers
that training mode moves are restored after every batch.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch

from .layers import find_normalisers, probe_copy, set_group


class AuditError(ValueError):
    """A problem with the audit's inputs, said in one line."""


def labels_of(out) -> torch.Tensor:
    """Predicted labels of a network's output: the first largest logit of ``(N, C)``; ``(N,)``
    or ``(N, 1)`` is one logit per row, label ``logit > 0``."""
    if isinstance(out, (tuple, list)):
        out = out[0]
    if not isinstance(out, torch.Tensor):
        raise AuditError(f"the model returns {type(out).__name__}, not a tensor of logits")
    if out.dim() == 1 or (out.dim() == 2 and out.shape[1] == 1):
        return (out.reshape(-1) > 0).long()
    if out.dim() != 2:
        raise AuditError(f"the model's output has shape {tuple(out.shape)}; expected (rows, classes) logits")
    return out.argmax(-1)


class _Stop(Exception):
    pass


class Engine:
    """The network ready for probing: ``x`` (a tensor on ``device``) and the copy to run."""

    def __init__(self, model: torch.nn.Module, x: torch.Tensor, chunk_rows: int = 1024, device="cpu"):
        self.device = torch.device(device)
        self.scripted = isinstance(model, torch.jit.ScriptModule)
        self.normalisers = find_normalisers(model)
        self.chunk_rows = int(chunk_rows)
        self.x = x
        if self.scripted:
            self.net = model.to(self.device).eval()
            self.batch_layers = [n.module for n in self.normalisers if n.batch]
            self.wrappers = []
        else:
            self.net, self.wrappers = probe_copy(model)
            self.net = self.net.to(self.device).eval()

    # ---- inference mode ----------------------------------------------------------
    def inference_labels(self, rows: np.ndarray | None = None) -> np.ndarray:
        """Inference-mode labels (running statistics) of ``rows`` of ``x`` (all rows if ``None``)."""
        n = len(self.x) if rows is None else len(rows)
        out = []
        with torch.inference_mode():
            set_group(self.wrappers, None)
            for s in range(0, n, self.chunk_rows):
                idx = slice(s, s + self.chunk_rows) if rows is None else torch.as_tensor(rows[s : s + self.chunk_rows])
                out.append(labels_of(self.net(self.x[idx])).cpu())
        return torch.cat(out).numpy() if out else np.empty(0, np.int64)

    # ---- training mode in probe batches -----------------------------------------
    def train_labels(self, batches: np.ndarray, progress=None) -> np.ndarray:
        """Training-mode labels ``(K, b)`` of every row of each of the ``(K, b)`` batches (row indices of ``x``)."""
        batches = np.ascontiguousarray(batches, dtype=np.int64)
        k, b = batches.shape
        out = np.empty((k, b), np.int64)
        if self.scripted:
            return self._train_labels_scripted(batches, out, progress)
        per = max(1, self.chunk_rows // b)
        with torch.inference_mode():
            set_group(self.wrappers, b)
            try:
                for s in range(0, k, per):
                    rows = torch.as_tensor(batches[s : s + per].reshape(-1), device=self.x.device)
                    out[s : s + per] = labels_of(self.net(self.x[rows])).cpu().numpy().reshape(-1, b)
                    if progress is not None:
                        progress.update(rows.numel())
            finally:
                set_group(self.wrappers, None)
        return out

    def _train_labels_scripted(self, batches, out, progress):
        saved = {k: v.clone() for k, v in self.net.named_buffers()}
        live = dict(self.net.named_buffers())
        try:
            for m in self.batch_layers:
                m.train()
            with torch.no_grad():
                for j, batch in enumerate(batches):
                    out[j] = labels_of(self.net(self.x[torch.as_tensor(batch)])).cpu().numpy()
                    for key, v in saved.items():
                        live[key].copy_(v)
                    if progress is not None:
                        progress.update(len(batch))
        finally:
            for m in self.batch_layers:
                m.eval()
            for key, v in saved.items():
                live[key].copy_(v)
        return out

    # ---- exact statistics --------------------------------------------------------
    def _layers(self):
        """The batch-statistics layers of the copy, as ``(name, layer)`` (the layer inside its wrapper)."""
        if self.scripted:
            return [(n.name, n.module) for n in self.normalisers if n.batch]
        names = [n.name for n in self.normalisers if n.batch]
        return [(name, w.layer) for name, w in zip(names, self.wrappers)]

    def execution_order(self, x: torch.Tensor) -> list[int]:
        """Indices (into :meth:`_layers`) of the batch-statistics layers in the order one forward
        pass of two rows reaches them; layers it never reaches are left out."""
        order, handles = [], []
        for i, (_, layer) in enumerate(self._layers()):
            handles.append(
                layer.register_forward_pre_hook(lambda m, a, i=i: order.append(i) if i not in order else None)
            )
        try:
            with torch.inference_mode():
                set_group(self.wrappers, None)
                self.net(x[:2])
        finally:
            for h in handles:
                h.remove()
        return order

    def exact_statistics(self, x: torch.Tensor) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Each batch-norm layer's exact input statistics over ``x``, layer by layer (the study's remedy (d)).

        In execution order, layer ``l``'s input is computed in inference mode with every
        earlier layer holding *its* exact statistics; its mean and variance (divisor ``N``)
        over the rows and positions of all of ``x`` are accumulated in float64, chunk by
        chunk (counts, means and centred sums of squares combined exactly as Chan et al.'s
        pairwise update), and rounded to the layer's dtype. The copy's own running
        statistics are restored afterwards. Returns ``{layer name: (mean, var)}``.
        """
        layers = self._layers()
        saved = {name: (layer.running_mean.clone(), layer.running_var.clone()) for name, layer in layers}
        out = {}
        try:
            for i in self.execution_order(x):
                name, layer = layers[i]
                acc = {"n": 0, "mean": None, "m2": None}

                def hook(module, args, acc=acc):
                    h = args[0].detach().to(torch.float64)
                    dims = [0, *range(2, h.dim())]
                    n = h.numel() // h.shape[1]
                    mean = h.mean(dim=dims)
                    m2 = ((h - mean.reshape(1, -1, *([1] * (h.dim() - 2)))) ** 2).sum(dim=dims)
                    if acc["n"] == 0:
                        acc.update(n=n, mean=mean, m2=m2)
                    else:
                        total = acc["n"] + n
                        delta = mean - acc["mean"]
                        acc["mean"] = acc["mean"] + delta * (n / total)
                        acc["m2"] = acc["m2"] + m2 + delta * delta * (acc["n"] * n / total)
                        acc["n"] = total
                    raise _Stop

                handle = layer.register_forward_pre_hook(hook)
                try:
                    with torch.inference_mode():
                        set_group(self.wrappers, None)
                        for s in range(0, len(x), self.chunk_rows):
                            try:
                                self.net(x[s : s + self.chunk_rows])
                            except _Stop:
                                pass
                finally:
                    handle.remove()
                mean = acc["mean"].to(layer.running_mean.dtype)
                var = (acc["m2"] / acc["n"]).to(layer.running_var.dtype)
                with torch.no_grad():
                    layer.running_mean.copy_(mean)
                    layer.running_var.copy_(var)
                out[name] = (mean.cpu().numpy(), var.cpu().numpy())
        finally:
            with torch.no_grad():
                for name, layer in layers:
                    layer.running_mean.copy_(saved[name][0])
                    layer.running_var.copy_(saved[name][1])
        return out

    def inference_labels_with(self, statistics: dict, x: torch.Tensor) -> np.ndarray:
        """Inference-mode labels of ``x`` with the running statistics replaced by ``statistics``."""
        layers = dict(self._layers())
        saved = {name: (layer.running_mean.clone(), layer.running_var.clone()) for name, layer in layers.items()}
        try:
            with torch.no_grad():
                for name, (mean, var) in statistics.items():
                    layers[name].running_mean.copy_(torch.as_tensor(mean))
                    layers[name].running_var.copy_(torch.as_tensor(var))
            keep = self.x
            self.x = x
            try:
                return self.inference_labels()
            finally:
                self.x = keep
        finally:
            with torch.no_grad():
                for name, layer in layers.items():
                    layer.running_mean.copy_(saved[name][0])
                    layer.running_var.copy_(saved[name][1])


def distance(mean, var, exact_mean, exact_var, eps: float) -> tuple[float, float]:
    """The study's distances of running statistics from exact ones
    (:func:`bnstudy.evaluation.distance.distances`, whose compiled
    arithmetic needs Numba, which the audit's install leaves out: hence this copy, with correctly
    rounded sums and NumPy's logarithm, the same to a few ulps):

    ``mean distance = sqrt(mean over channels of (mean - exact_mean)**2 / (exact_var + eps))``, the RMS
    shift of a normalised activation in exact standard deviations; ``variance distance = sqrt(mean over
    channels of log((var + eps) / (exact_var + eps))**2)``, the RMS log-ratio of the variances (0.1 is
    about a 10% error). Float64, channels summed in order.
    """
    m, v = np.asarray(mean, np.float64), np.asarray(var, np.float64)
    em, ev = np.asarray(exact_mean, np.float64), np.asarray(exact_var, np.float64)
    shift = math.fsum(((m - em) ** 2 / (ev + eps)).tolist()) / len(m)
    ratio = np.log((v + eps) / (ev + eps))
    return math.sqrt(shift), math.sqrt(math.fsum((ratio * ratio).tolist()) / len(m))


def naive_labels(model: torch.nn.Module, x: torch.Tensor, batches: np.ndarray, first_only: bool = True) -> np.ndarray:
    """The reference loop: one forward pass of the plain module per batch, its batch-statistics layers
    in training mode (everything else in evaluation mode), buffers restored after every batch.

    Returns row 0's label of each batch ``(K,)`` (``first_only``), or every row's ``(K, b)``. This is
    what one writes without the audit (one probe per forward pass); the tests and the benchmark use it.
    """
    from .layers import find_normalisers

    net = copy.deepcopy(model).eval()
    for n in find_normalisers(net):
        if n.batch:
            n.module.train()
    saved = {k: v.clone() for k, v in net.named_buffers()}
    live = dict(net.named_buffers())
    out = []
    with torch.no_grad():
        for batch in np.asarray(batches, np.int64):
            lab = labels_of(net(x[torch.as_tensor(batch)])).numpy()
            out.append(lab[0] if first_only else lab)
            for k, v in saved.items():
                live[k].copy_(v)
    return np.array(out)
