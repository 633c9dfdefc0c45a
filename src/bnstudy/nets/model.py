"""The study's MLP, features-128-128-10 with ReLU (features: the data set's, 64 for the digits,
784 for Fashion-MNIST), normaliser after each hidden Linear.

Two faces of one network:

- a *stack* is a dict of NumPy arrays with the keys of the module's
  ``state_dict`` and a leading model axis ``M``: what the pipeline trains,
  evaluates and saves (:mod:`bnstudy.compiled.kernels` computes with it);
- :func:`build_module` gives the plain ``torch.nn.Sequential`` (layers ``0``-``6``)
  users load weights into, and which the PyTorch reference loop trains
  (:mod:`bnstudy.nets.torchnet`).

Initial weights (:func:`initial_state`) follow PyTorch's default for ``Linear``
(weight and bias uniform on ``[-1/sqrt(in), 1/sqrt(in)]``; normalisers' gamma 1,
beta 0, running mean 0, running variance 1), drawn from a stream that is the
same on every machine: NumPy's PCG64 generator seeded from ``(seed,
STREAM_INIT)``, ``u = Generator.random()`` (53 random bits over ``2**53``), and
``(2u - 1) / sqrt(in)`` in float64, rounded to float32; layer by layer in
module order, weight (row by row) before bias. PyTorch is imported only by the
functions that build modules.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from bnstudy.base import normalisers
from bnstudy.base.runtime import STREAM_INIT, derive_seed
from bnstudy.nets.spec import Labeller, Network, batch_starts
from bnstudy.nets.stacks import stack, unstack  # noqa: F401 (the stacks of either network, named here as before)

LINEARS = ("0", "3", "6")
NORMS = ("1", "4")
BATCH_KINDS = normalisers.BATCH_NAMES
AFFINE_KINDS = normalisers.AFFINE_NAMES


@dataclass(frozen=True)
class NetSpec(Network):
    """One network: its normaliser and every setting of it (a :class:`bnstudy.nets.spec.Network`).

    ``widths`` are the layers' widths, inputs first (the data set's features; the
    default is the digits' 64) and classes last. ``virtual_batch`` is ghost batch norm's
    rows per virtual batch (a setting only that kind reads, see
    :mod:`bnstudy.base.normalisers`' ``own_settings``).
    """

    normaliser: str
    widths: tuple[int, ...] = (64, 128, 128, 10)
    groups: int = 8
    eps: float = 1e-5
    momentum: float | None = 0.1
    virtual_batch: int = 16

    def metadata(self) -> dict[str, str]:
        """Every field as a string, without the settings of other kinds (a weights file
        records the settings its network reads)."""
        others = {k for n in normalisers.REGISTRY for k in n.own_settings} - set(
            normalisers.get(self.normaliser).own_settings
        )
        return {k: str(v) for k, v in asdict(self).items() if k not in others}

    family = "mlp"

    @classmethod
    def from_metadata(cls, meta: dict[str, str]) -> NetSpec:
        return spec_from_metadata(meta)

    def layout(self) -> list[tuple[str, tuple[int, ...]]]:
        from bnstudy.compiled import optimisers

        return optimisers.layout(self.widths)

    def norm_layers(self) -> list[str]:
        return list(NORMS)

    def norm_features(self) -> list[int]:
        return [int(w) for w in self.widths[1:-1]]

    def setting(self) -> int:
        from bnstudy.compiled import kernels

        return kernels.setting(self)

    def initial_state(self, seed: int) -> dict[str, np.ndarray]:
        return initial_state(self, seed)

    def arch(self, inputs: int):
        """The MLP's linear maps (``inputs``: its widths' first, the data's features)."""
        from bnstudy.compiled import backprop

        return backprop.mlp_arch(self.widths)

    def build_module(self, seed: int | None = None):
        return build_module(self, seed)

    def logits(self, stacked: dict, x: np.ndarray, *, train: bool = False, batch: int = 0, limits=(1.0, 0.0)):
        """:func:`bnstudy.compiled.kernels.logits`."""
        from bnstudy.compiled import kernels

        return kernels.logits(stacked, self, x, train=train, batch=batch, limits=limits)

    def predict(self, stacked: dict, x: np.ndarray) -> np.ndarray:
        """:func:`bnstudy.compiled.kernels.predict`."""
        from bnstudy.compiled import kernels

        return kernels.predict(stacked, self, x)

    def labeller(self, stacked: dict, x: np.ndarray, limits=(1.0, 0.0)) -> Labeller:
        # imported by name: this module is loaded by every job that trains or scores an MLP, and the code
        # trigger follows every import written in a module (function-level ones too), so a written import
        # would make every such job re-run on an edit of the probe kernels; the probes' own modules import
        # bnstudy.nets.mlp_probes (companions.science), so their jobs do depend on them
        import importlib

        return importlib.import_module("bnstudy.nets.mlp_probes").MlpLabeller(stacked, self, x, limits)

    def training_layer_inputs(self, stacked: dict, x: np.ndarray, batches):
        """Each hidden layer's pre-norm rows ``(M, N, F)``, the batches' rows in pass order, the layer
        below normalised with each batch's own statistics (``kernels.norm_train``); ``starts`` maps every
        layer to the batches' first rows (:func:`bnstudy.nets.spec.batch_starts`)."""
        from bnstudy.compiled import kernels, normkernels

        starts = batch_starts(batches)
        rows = np.concatenate([np.asarray(b, np.int64) for b in batches])
        xp = np.ascontiguousarray(np.asarray(x)[rows], dtype=np.float32)
        hidden = kernels.stack_arrays(stacked).hidden
        m, n = hidden[0].wt.shape[0], len(rows)
        pres = [np.empty((m, n, layer.wt.shape[2]), np.float32) for layer in hidden]
        ns = normkernels.settings(kernels.BATCH, self.eps)
        for i in range(m):
            a = xp
            for layer, pre in zip(hidden, pres):
                kernels.linear_t(a, layer.wt[i], layer.bias[i], pre[i])  # row by row: the same bits as batch by batch
                if pre is pres[-1]:
                    break
                lp = normkernels.Params(*(v[i] for v in layer.norm))
                a = np.empty(pre.shape[1:], np.float32)
                for s, e in zip(starts[:-1].tolist(), starts[1:].tolist()):
                    kernels.norm_train(ns, lp, pre[i, s:e], e - s, True, a[s:e])
        return dict(zip(NORMS, pres)), {layer: starts for layer in NORMS}

    def exact_statistics(self, stacked: dict, x: np.ndarray) -> dict:
        """Layer by layer: the pre-norm rows of every row of ``x`` (``kernels.linear_t``), their
        pooled moments (:func:`bnstudy.compiled.reductions.pooled_moments`), the layer in inference
        mode with them rounded to float32 (``kernels.norm_inference``, then ReLU) for the next."""
        from bnstudy.compiled import kernels, normkernels
        from bnstudy.compiled.reductions import pooled_moments

        hidden = kernels.stack_arrays(stacked).hidden
        x = np.ascontiguousarray(x, dtype=np.float32)
        m, n = hidden[0].wt.shape[0], x.shape[0]
        stats = {}
        for name, layer in zip(NORMS, hidden):
            f = layer.wt.shape[2]
            stats[name] = (np.empty((m, f), np.float64), np.empty((m, f), np.float64))
        ns = normkernels.settings(kernels.BATCH, self.eps)
        for i in range(m):
            a = x
            for (mean, var), layer in zip(stats.values(), hidden):
                pre = np.empty((n, layer.wt.shape[2]), np.float32)
                kernels.linear_t(a, layer.wt[i], layer.bias[i], pre)
                pooled_moments(pre, mean[i], var[i])
                if layer is hidden[-1]:
                    break
                lp = normkernels.Params(
                    layer.norm.gamma[i], layer.norm.beta[i], mean[i].astype(np.float32), var[i].astype(np.float32)
                )
                a = np.empty_like(pre)
                kernels.norm_inference(ns, lp, pre, True, a)
        return {layer: (mean.astype(np.float32), var.astype(np.float32)) for layer, (mean, var) in stats.items()}


def initial_state(spec: NetSpec, seed: int) -> dict[str, np.ndarray]:
    """The initial weights of one network for ``seed`` (keys as the module's ``state_dict``)."""
    rng = np.random.default_rng(derive_seed(seed, STREAM_INIT))
    w = spec.widths
    state: dict[str, np.ndarray] = {}
    for i, layer in enumerate(LINEARS):
        fan_in, fan_out = w[i], w[i + 1]
        bound = 1.0 / np.sqrt(np.float64(fan_in))
        for name, shape in (("weight", (fan_out, fan_in)), ("bias", (fan_out,))):
            u = rng.random(shape)
            state[f"{layer}.{name}"] = ((2.0 * u - 1.0) * bound).astype(np.float32)
        if i < len(NORMS) and spec.normaliser in AFFINE_KINDS:
            norm = NORMS[i]
            for name in normalisers.get(spec.normaliser).parameters:  # gamma ones, beta zeros
                state[f"{norm}.{name}"] = np.full(fan_out, 1.0 if name == "weight" else 0.0, np.float32)
            if spec.normaliser in BATCH_KINDS:
                state[f"{norm}.running_mean"] = np.zeros(fan_out, np.float32)
                state[f"{norm}.running_var"] = np.ones(fan_out, np.float32)
                state[f"{norm}.num_batches_tracked"] = np.zeros((), np.int64)
    return {k: state[k] for k in sorted(state, key=_module_order)}


def _module_order(key: str):
    layer, name = key.split(".", 1)
    names = ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")
    return int(layer), names.index(name)


def _norm_module(spec: NetSpec, features: int):
    """The normaliser's ``torch.nn.Module`` (its registered factory; imports PyTorch)."""
    return normalisers.get(spec.normaliser).module_factory()(spec, features)


def build_module(spec: NetSpec, seed: int | None = None):
    """The network as ``torch.nn.Sequential``; with ``seed``, holding :func:`initial_state`."""
    import torch

    w = spec.widths
    net = torch.nn.Sequential(
        torch.nn.Linear(w[0], w[1]),
        _norm_module(spec, w[1]),
        torch.nn.ReLU(),
        torch.nn.Linear(w[1], w[2]),
        _norm_module(spec, w[2]),
        torch.nn.ReLU(),
        torch.nn.Linear(w[2], w[3]),
    )
    if seed is not None:
        net.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in initial_state(spec, seed).items()})
    return net


def initial_stack(spec: NetSpec, seeds: list[int]) -> dict[str, np.ndarray]:
    return stack([initial_state(spec, s) for s in seeds])


def norm_params(stacked: dict, layer: str) -> dict:
    prefix = layer + "."
    return {k[len(prefix) :]: v for k, v in stacked.items() if k.startswith(prefix)}


def spec_from_metadata(meta: dict[str, str]) -> NetSpec:
    """The :class:`NetSpec` recorded in a weights file's metadata."""
    momentum = None if meta["momentum"] == "None" else float(meta["momentum"])
    widths = tuple(int(w) for w in meta["widths"].strip("()").split(","))
    own = {k: int(meta[k]) for k in normalisers.get(meta["normaliser"]).own_settings}
    return NetSpec(meta["normaliser"], widths, int(meta["groups"]), float(meta["eps"]), momentum, **own)


def spec_from_params(net: dict, inputs: int, classes: int = 10) -> NetSpec:
    """The :class:`NetSpec` of a rule's network parameters (values as given): ``normaliser``,
    ``hidden``, ``groups``, ``eps``, ``momentum`` and the normaliser's own settings
    (:func:`bnstudy.base.normalisers.spec_settings`), which it must carry; ``inputs``, the
    features of the data it trains on (its training array's columns), and ``classes``."""
    own = normalisers.get(net["normaliser"]).own_settings
    missing = [k for k in own if k not in net]
    if missing:
        raise ValueError(f"network parameters of {net['normaliser']} lack its settings {missing}")
    return NetSpec(
        normaliser=net["normaliser"],
        widths=(int(inputs), *net["hidden"], int(classes)),
        groups=net["groups"],
        eps=net["eps"],
        momentum=net["momentum"],
        **{k: net[k] for k in own},
    )
