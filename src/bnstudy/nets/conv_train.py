"""The convolutional network: its weights, its compiled training loop, its logits.

A list of layers as data (:class:`ConvSpec`: channels, strides, residual connections):
layer ``l`` is ``Conv2d(C_{l-1}, C_l, 3, stride, padding=1)``, ``Norm(C_l)``, then, if it
has one, the addition of layer ``skip``'s output (same shape), then ReLU; then
``AdaptiveAvgPool2d(1)``, ``Flatten`` and ``Linear(C_L, 10)``, on square images of one
channel (the standardised pixels, row-major; the side is read off the data: 8 for the
digits, 28 for Fashion-MNIST). The default, ``(8, 16)`` with stride 1 and no residual
connection, is the study's small network: ``nn.Sequential(Conv2d(1, C1, 3, padding=1),
Norm(C1), ReLU, Conv2d(C1, C2, 3, padding=1), Norm(C2), ReLU, AdaptiveAvgPool2d(1),
Flatten, Linear(C2, 10))``, whose state-dict keys every network's keys follow (layer
``l``'s convolution ``3l``, its normaliser ``3l + 1``, the linear map ``3L + 2``).
``Norm`` is ``BatchNorm2d``, batch renorm 2d (the MLP's batch renorm with statistics per
channel over examples x positions; its limits ramp by the recipe's schedule, as the MLP's),
ghost batch norm 2d (``BatchNorm2d`` within virtual batches of ``virtual_batch`` examples),
``GroupNorm(groups, C)``, ``GroupNorm(1, C)`` (layer norm over channels x positions) or
nothing. :mod:`bnstudy.compiled.conv` states the
arithmetic; :mod:`bnstudy.nets.conv_torch` builds the same network in PyTorch (the
tests' reference).

Initial weights follow PyTorch's defaults (convolution and linear weights and
biases uniform on ``[-1/sqrt(fan_in), 1/sqrt(fan_in)]``, ``fan_in = in channels x
9`` for a convolution; gamma 1, beta 0, running mean 0, running variance 1) drawn
as :mod:`bnstudy.nets.model` draws the MLP's: PCG64 seeded from ``(seed,
STREAM_INIT)``, ``(2u - 1) / sqrt(fan_in)`` in float64 rounded to float32, layer
by layer, weight before bias. Batches are :func:`bnstudy.nets.batching.epoch_rows`
from the seed's order stream (the MLP grid's order for the same seed). It trains in
the MLP's compiled loop (:func:`bnstudy.compiled.backprop.train_run`, the network as data:
:func:`bnstudy.compiled.backprop.conv_arch`). One training step is: forward in training mode
(the running statistics moved with PyTorch's rule, once per step; ghost batch norm once per
virtual batch; batch renorm with the step's limits, :func:`bnstudy.nets.train.step_limits`),
:func:`bnstudy.compiled.gradients.loss_and_grad`, backward layer by layer,
:func:`bnstudy.compiled.optimisers.step_adam` over the flat parameter vector (:func:`layout`;
without a normaliser gamma and beta stay 1 and 0).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from bnstudy.base import normalisers
from bnstudy.base.runtime import STREAM_INIT, derive_seed
from bnstudy.compiled import backprop
from bnstudy.compiled.kernels import Hidden, Net
from bnstudy.compiled.normkernels import Params, settings
from bnstudy.nets.recipe import renorm_schedule

CLASSES = 10
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8


@dataclass(frozen=True)
class ConvSpec:
    """One convolutional network: normaliser, output channels of each convolution, group norm's
    groups (layer norm: 1), eps and PyTorch momentum of the batch-statistics kinds; each
    convolution's stride (``strides``, 1 or 2; empty: all 1) and the earlier layer whose output it
    adds before its ReLU (``skips``, -1: none; empty: none anywhere); ghost batch norm's examples per
    virtual batch (``virtual_batch``, a setting only that kind reads: the registry's
    ``own_settings``). Batch renorm's limits come with the recipe (:func:`step_limits`)."""

    normaliser: str
    channels: tuple[int, ...] = (8, 16)
    groups: int = 4
    eps: float = 1e-5
    momentum: float = 0.1
    strides: tuple[int, ...] = ()
    skips: tuple[int, ...] = ()
    virtual_batch: int = 16

    @classmethod
    def from_params(cls, normaliser: str, p: dict) -> ConvSpec:
        """The spec of a config's ``network`` section (``kind: conv``) as the rules pass it:
        ``groups``, ``eps``, ``momentum``, either ``channels`` or ``layers`` (each ``{channels,
        stride, skip}``) and the kind's own settings if it has any (ghost batch norm's
        ``virtual_batch``)."""
        common = {"groups": int(p["groups"]), "eps": float(p["eps"]), "momentum": float(p["momentum"])}
        common |= {k: int(p[k]) for k in normalisers.get(normaliser).own_settings}
        if not p.get("layers"):
            return cls(normaliser, tuple(int(c) for c in p["channels"]), **common)
        layers = list(p["layers"])
        return cls(
            normaliser,
            tuple(int(layer["channels"]) for layer in layers),
            strides=tuple(int(layer.get("stride", 1)) for layer in layers),
            skips=tuple(int(layer.get("skip", -1)) for layer in layers),
            **common,
        )

    def meta(self) -> dict[str, str]:
        """The spec as text for a weights file's metadata (the layers' strides and skips only when
        set; of the kinds' own settings only its kind's)."""
        own = normalisers.get(self.normaliser).own_settings
        others = {k for n in normalisers.REGISTRY for k in n.own_settings} - set(own)
        return {k: str(v) for k, v in vars(self).items() if (k not in ("strides", "skips") or v) and k not in others}

    def stride(self, layer: int) -> int:
        return int(self.strides[layer]) if self.strides else 1

    def skip(self, layer: int) -> int:
        return int(self.skips[layer]) if self.skips else -1

    def arch(self, side: int) -> backprop.Arch:
        """The network as the compiled loop takes it, on ``side x side`` images."""
        layers = range(len(self.channels))
        strides, skips = [self.stride(i) for i in layers], [self.skip(i) for i in layers]
        return backprop.conv_arch(self.channels, CLASSES, side, strides, skips)

    def setting(self) -> int:
        """The integer the kernels receive with the kind: its registered ``setting`` field
        (group norm's groups, which must divide both convolutions' channels; ghost batch norm's
        examples per virtual batch, at least 2), else 1."""
        field = normalisers.get(self.normaliser).setting
        if not field:
            return 1
        value = int(getattr(self, field))
        if field == "groups" and any(c % value for c in self.channels):
            raise ValueError(f"{value} groups do not divide the channels {self.channels}")
        if field == "virtual_batch" and value < 2:
            raise ValueError(f"ghost batch norm needs virtual batches of at least 2 examples, got {value}")
        return value

    def kind(self) -> int:
        return normalisers.get(self.normaliser).kernel


def image_side(x: np.ndarray) -> int:
    """The side of the square one-channel images whose pixels are the columns of ``x``."""
    pixels = int(np.asarray(x).shape[1])
    side = int(np.sqrt(pixels) + 0.5)
    if side * side != pixels:
        raise ValueError(f"{pixels} pixels are not a square image")
    return side


def norm_keys(spec: ConvSpec) -> list[str]:
    """The state-dict prefix of each convolution's normaliser: ``3l + 1``."""
    return [str(3 * i + 1) for i in range(len(spec.channels))]


def layout(spec: ConvSpec) -> list[tuple[str, tuple[int, ...]]]:
    """The flat parameter vector's parts: ``(state-dict key, shape)`` in order (per convolution its
    weight, bias, and its normaliser's gamma and beta; then the linear map's weight and bias)."""
    parts, c_in = [], 1
    for i, c in enumerate(int(v) for v in spec.channels):
        parts += [(f"{3 * i}.weight", (c, c_in, 3, 3)), (f"{3 * i}.bias", (c,))]
        parts += [(f"{3 * i + 1}.weight", (c,)), (f"{3 * i + 1}.bias", (c,))]
        c_in = c
    last = 3 * len(spec.channels) + 2
    return [*parts, (f"{last}.weight", (CLASSES, c_in)), (f"{last}.bias", (CLASSES,))]


def initial_state(spec: ConvSpec, seed: int) -> dict[str, np.ndarray]:
    """The initial weights of one network for ``seed`` (keys of the module's ``state_dict``)."""
    rng = np.random.default_rng(derive_seed(seed, STREAM_INIT))
    info = normalisers.get(spec.normaliser)
    state: dict[str, np.ndarray] = {}
    chans = [1, *(int(v) for v in spec.channels)]
    weights = [(str(3 * i), 9 * chans[i], (chans[i + 1], chans[i], 3, 3)) for i in range(len(chans) - 1)]
    weights.append((str(3 * len(spec.channels) + 2), chans[-1], (CLASSES, chans[-1])))
    for layer, fan_in, shape in weights:
        bound = 1.0 / np.sqrt(np.float64(fan_in))
        for name, sh in (("weight", shape), ("bias", shape[:1])):
            state[f"{layer}.{name}"] = ((2.0 * rng.random(sh) - 1.0) * bound).astype(np.float32)
        norm = str(int(layer) + 1) if len(shape) == 4 else None
        if norm and info.affine:
            for name in info.parameters:  # gamma ones, beta zeros
                state[f"{norm}.{name}"] = np.full(shape[0], 1.0 if name == "weight" else 0.0, np.float32)
            if info.batch_statistics:
                state[f"{norm}.running_mean"] = np.zeros(shape[0], np.float32)
                state[f"{norm}.running_var"] = np.ones(shape[0], np.float32)
                state[f"{norm}.num_batches_tracked"] = np.zeros((), np.int64)
    order = ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")
    return {k: state[k] for k in sorted(state, key=lambda k: (int(k.split(".")[0]), order.index(k.split(".")[1])))}


# ---- whole runs and stacks (Python) -------------------------------------------------


def train_one(spec: ConvSpec, recipe, seed: int, x: np.ndarray, y: np.ndarray, first_grad=None, validation=None):
    """Train the network of ``seed``: :func:`bnstudy.nets.train.train_one`, the loop both networks
    share (the recipe's optimiser, batch order, micro-batches and batch renorm's limits); returns its
    state dict and one log row per epoch (``first_grad``: an array of the flat vector's size that
    receives the first step's gradient, laid out as :func:`layout`)."""
    from bnstudy.nets import train

    return train.train_one(spec, recipe, seed, x, y, first_grad, validation)


def train_models(spec: ConvSpec, recipe, seeds, x, y, threads: int = 1, validation=None):
    """One network per seed: ``(stack, log)`` (model axis in the order of ``seeds``; ``validation``
    as :func:`bnstudy.nets.train.train_models`)."""
    seeds = [int(s) for s in seeds]
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        results = list(pool.map(lambda s: train_one(spec, recipe, s, x, y, validation=validation), seeds))
    log = sorted((row for _, rows in results for row in rows), key=lambda r: (r["epoch"], seeds.index(r["seed"])))
    stacked = {k: np.stack([state[k] for state, _ in results]) for k in results[0][0]}
    return stacked, log


def model_arrays(stacked: dict, spec: ConvSpec, i: int) -> Net:
    """Model ``i`` as :func:`bnstudy.compiled.conv.forward_model` takes it: a :class:`bnstudy.compiled.kernels.Net`
    (``W^T`` for every layer)."""

    def get(key, fill, size):
        if key in stacked:
            return np.ascontiguousarray(stacked[key][i], dtype=np.float32)
        return np.full(size, fill, np.float32)

    def norm(layer, c):
        return Params(
            *(
                get(f"{layer}.{n}", f, c)
                for n, f in (("weight", 1), ("bias", 0), ("running_mean", 0), ("running_var", 1))
            )
        )

    t = lambda key, rows: np.ascontiguousarray(np.asarray(stacked[key][i], np.float32).reshape(rows, -1).T)  # noqa: E731
    hidden = tuple(
        Hidden(t(f"{3 * layer}.weight", c), get(f"{3 * layer}.bias", 0, c), norm(str(3 * layer + 1), c))
        for layer, c in enumerate(int(v) for v in spec.channels)
    )
    last = 3 * len(spec.channels) + 2
    return Net(hidden, t(f"{last}.weight", CLASSES), get(f"{last}.bias", 0, CLASSES))


def norm_settings(spec: ConvSpec, limits=(1.0, 0.0)):
    """The network's normaliser as the kernels take it (:class:`bnstudy.compiled.normkernels.Settings`;
    ``limits``: batch renorm's ``(rmax, dmax)``, which only that kind reads)."""
    return settings(spec.kind(), spec.eps, spec.setting(), spec.momentum, *limits)


def final_limits(spec: ConvSpec, recipe, n: int) -> tuple[float, float]:
    """Batch renorm's ``(rmax, dmax)`` at the end of a run of ``recipe`` over ``n`` training images
    (:func:`bnstudy.nets.recipe.renorm_schedule`, as the MLP's); ``(1, 0)`` for every other kind."""
    schedule = renorm_schedule(spec.normaliser, recipe, n)
    return (1.0, 0.0) if schedule is None else schedule.final


def logits(stacked: dict, spec: ConvSpec, x: np.ndarray, *, train=False, batch=0, limits=(1.0, 0.0)) -> np.ndarray:
    """Logits ``(M, N, 10)`` of every model for the images ``x`` (``(N, side * side)``): inference
    mode, or training mode on consecutive batches of ``batch`` images (running statistics never
    written; batch renorm with ``limits``, its run's :func:`final_limits`)."""
    from bnstudy.compiled.conv import forward_model

    geo = spec.arch(image_side(x)).geometry
    n = len(x)
    x = np.ascontiguousarray(np.asarray(x, np.float32).reshape(-1, 1))
    if train and (batch < 2 or n % batch):
        raise ValueError(f"training mode needs batches of >= 2 images that tile the {n} images; got {batch}")
    m = next(iter(stacked.values())).shape[0]
    out = np.empty((m, n, CLASSES), np.float32)
    ns = norm_settings(spec, limits)
    for i in range(m):
        forward_model(model_arrays(stacked, spec, i), geo, ns, x, n, batch if train else 1, train, out[i])
    return out
