"""The convolutional network: its spec (a :class:`bnstudy.nets.spec.Network`), weights, logits.

A list of blocks as data (:class:`ConvSpec`: channels, strides, residual connections; its
:meth:`ConvSpec.blocks`, :mod:`bnstudy.base.convlayers`):
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
the MLP's compiled loop (:func:`bnstudy.nets.train.train_models`, the one training entry of both
networks; :func:`bnstudy.compiled.backprop.train_run`, the network as data:
:func:`bnstudy.compiled.backprop.conv_arch` of its blocks). One training step is: forward in training mode
(the running statistics moved with PyTorch's rule, once per step; ghost batch norm once per
virtual batch; batch renorm with the step's limits, :func:`bnstudy.nets.train.step_limits`),
:func:`bnstudy.compiled.gradients.loss_and_grad`, backward layer by layer,
:func:`bnstudy.compiled.optimisers.step_adam` over the flat parameter vector (:func:`layout`;
without a normaliser gamma and beta stay 1 and 0).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from bnstudy.base import convlayers, normalisers
from bnstudy.base.runtime import STREAM_INIT, derive_seed
from bnstudy.compiled import backprop
from bnstudy.compiled.kernels import Hidden, Net
from bnstudy.compiled.normkernels import Params
from bnstudy.nets.conv_probes import ConvLabeller
from bnstudy.nets.recipe import renorm_schedule
from bnstudy.nets.spec import CLASSES, Labeller, Network, batch_starts


@dataclass(frozen=True)
class ConvSpec(Network):
    """One convolutional network (a :class:`bnstudy.nets.spec.Network`): normaliser, output channels
    of each convolution, group norm's groups (layer norm: 1), eps and PyTorch momentum of the
    batch-statistics kinds; each convolution's stride (``strides``, 1 or 2; empty: all 1) and the
    earlier layer whose output it adds before its ReLU (``skips``, -1: none; empty: none anywhere);
    ghost batch norm's examples per virtual batch (``virtual_batch``, a setting only that kind
    reads: the registry's ``own_settings``). Batch renorm's limits come with the recipe
    (:func:`bnstudy.nets.train.step_limits`). Its layers as blocks: :meth:`blocks`."""

    normaliser: str
    channels: tuple[int, ...] = (8, 16)
    groups: int = 4
    eps: float = 1e-5
    momentum: float = 0.1
    strides: tuple[int, ...] = ()
    skips: tuple[int, ...] = ()
    virtual_batch: int = 16

    family = "conv"

    @classmethod
    def from_params(cls, normaliser: str, p: dict) -> ConvSpec:
        """The spec of a config's ``network`` section (``kind: conv``) as the rules pass it:
        ``groups``, ``eps``, ``momentum``, either ``channels`` or ``layers`` (each ``{channels,
        stride, skip}``, read by :func:`bnstudy.base.convlayers.parse`) and the kind's own settings
        if it has any (ghost batch norm's ``virtual_batch``)."""
        common = {"groups": int(p["groups"]), "eps": float(p["eps"]), "momentum": float(p["momentum"])}
        common |= {k: int(p[k]) for k in normalisers.get(normaliser).own_settings}
        blocks = convlayers.parse(p)
        if not convlayers.given_layers(p):  # channels only: no strides or skips recorded
            return cls(normaliser, tuple(b.channels for b in blocks), **common)
        return cls(
            normaliser,
            tuple(b.channels for b in blocks),
            strides=tuple(b.stride for b in blocks),
            skips=tuple(b.skip for b in blocks),
            **common,
        )

    def meta(self) -> dict[str, str]:
        """The spec as text for a weights file's metadata (the layers' strides and skips only when
        set; of the kinds' own settings only its kind's)."""
        own = normalisers.get(self.normaliser).own_settings
        others = {k for n in normalisers.REGISTRY for k in n.own_settings} - set(own)
        return {k: str(v) for k, v in vars(self).items() if (k not in ("strides", "skips") or v) and k not in others}

    def metadata(self) -> dict[str, str]:
        """``kind: conv`` and :meth:`meta` (the MLP's files name no kind)."""
        return {"kind": self.family} | self.meta()

    @classmethod
    def from_metadata(cls, meta: dict[str, str]) -> ConvSpec:
        parse = {tuple: _ints, int: int, float: float, str: str}
        given = {}
        for f in fields(cls):  # each field recorded, read back as the type of its default
            if f.name in meta and f.name != "normaliser":
                given[f.name] = parse[type(f.default)](meta[f.name])
        return cls(meta["normaliser"], **given)

    def stride(self, layer: int) -> int:
        return int(self.strides[layer]) if self.strides else 1

    def skip(self, layer: int) -> int:
        return int(self.skips[layer]) if self.skips else -1

    def blocks(self, side: int = 0) -> tuple[convlayers.Block, ...]:
        """The network's convolutions as blocks (:class:`bnstudy.base.convlayers.Block`), placed on
        ``side x side`` images when ``side`` is given."""
        return convlayers.chain(self.channels, self.strides, self.skips, side)

    def arch_on(self, side: int) -> backprop.Arch:
        """The network as the compiled loop takes it, on ``side x side`` images (its blocks')."""
        return backprop.conv_arch(self.blocks(side), CLASSES)

    def arch(self, inputs: int) -> backprop.Arch:
        """:meth:`arch_on` the square images of ``inputs`` pixels."""
        return self.arch_on(convlayers.square_side(inputs))

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

    def layout(self) -> list[tuple[str, tuple[int, ...]]]:
        return layout(self)

    def norm_layers(self) -> list[str]:
        return norm_keys(self)

    def norm_features(self) -> list[int]:
        return [int(c) for c in self.channels]

    def initial_state(self, seed: int) -> dict[str, np.ndarray]:
        return initial_state(self, seed)

    def build_module(self, seed: int | None = None):
        """:func:`bnstudy.nets.conv_torch.build_module` (imports PyTorch)."""
        from bnstudy.nets import conv_torch

        return conv_torch.build_module(self, seed)

    def logits(self, stacked: dict, x: np.ndarray, *, train: bool = False, batch: int = 0, limits=(1.0, 0.0)):
        return logits(stacked, self, x, train=train, batch=batch, limits=limits)

    def labeller(self, stacked: dict, x: np.ndarray, limits=(1.0, 0.0)) -> Labeller:
        nets = [model_arrays(stacked, self, i) for i in range(int(next(iter(stacked.values())).shape[0]))]
        return ConvLabeller(stacked, self, x, self.arch_on(image_side(x)).geometry, nets, limits)

    def training_layer_inputs(self, stacked: dict, x: np.ndarray, batches):
        """A layer's rows are one per example x output position as :mod:`bnstudy.compiled.conv` lays
        them out (``N * P_l`` rows, ``F`` its channels), batch by batch, within a batch example by
        example, each batch of images through :func:`bnstudy.compiled.conv.layer_input` and
        :func:`~bnstudy.compiled.conv.layer_output` in training mode (batch statistics over the batch's
        examples x positions, residual connections and strides as ``forward_model``); ``starts`` is
        ``{layer: row starts}``, batch ``j`` of layer ``l`` at rows ``P_l * s[j] .. P_l * s[j + 1] - 1``
        (``s`` the batches' first images)."""
        from bnstudy.compiled import conv

        starts = batch_starts(batches)
        m, geo, ns, x = _conv_net(stacked, self, x)
        rows = np.concatenate([np.asarray(b, np.int64) for b in batches])
        positions = [int(p) for p in geo.layers[:, conv.P_OUT]]
        pres = [np.empty((m, len(rows) * p, int(c)), np.float32) for p, c in zip(positions, self.channels)]
        for i in range(m):
            net = model_arrays(stacked, self, i)
            for s, e in zip(starts[:-1].tolist(), starts[1:].tolist()):
                images = np.ascontiguousarray(x[rows[s:e]].reshape(-1, 1))
                views = [pre[i, p * s : p * e] for pre, p in zip(pres, positions)]
                _conv_layers(net, geo, ns, images, e - s, True, views)
        layers = self.norm_layers()
        return dict(zip(layers, pres)), {layer: starts * p for layer, p in zip(layers, positions)}

    def exact_statistics(self, stacked: dict, x: np.ndarray) -> dict:
        """Every image in one inference-mode pass, layer ``l``'s moments pooled over its ``N * P_l``
        rows (examples in order, within one the positions), then used as its running statistics for
        the layers above."""
        from bnstudy.compiled import conv

        m, geo, ns, x = _conv_net(stacked, self, x)
        n = x.shape[0]
        images = x.reshape(-1, 1)
        positions = [int(p) for p in geo.layers[:, conv.P_OUT]]
        stats = {
            layer: (np.empty((m, int(c)), np.float64), np.empty((m, int(c)), np.float64))
            for layer, c in zip(self.norm_layers(), self.channels)
        }
        for i in range(m):
            pres = [np.empty((n * p, int(c)), np.float32) for p, c in zip(positions, self.channels)]
            exact = [(mean[i], var[i]) for mean, var in stats.values()]
            _conv_layers(model_arrays(stacked, self, i), geo, ns, images, n, False, pres, exact)
        return {layer: (mean.astype(np.float32), var.astype(np.float32)) for layer, (mean, var) in stats.items()}


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.strip("()").split(",") if v.strip())


def image_side(x: np.ndarray) -> int:
    """The side of the square one-channel images whose pixels are the columns of ``x``
    (:func:`bnstudy.base.convlayers.square_side`)."""
    return convlayers.square_side(np.asarray(x).shape[1])


def norm_keys(spec: ConvSpec) -> list[str]:
    """The state-dict prefix of each convolution's normaliser: ``3l + 1``."""
    return [str(3 * i + 1) for i in range(len(spec.channels))]


def layout(spec: ConvSpec) -> list[tuple[str, tuple[int, ...]]]:
    """The flat parameter vector's parts: ``(state-dict key, shape)`` in order (per convolution its
    weight, bias, and its normaliser's gamma and beta; then the linear map's weight and bias)."""
    parts, blocks = [], spec.blocks()
    for i, b in enumerate(blocks):
        c = b.channels
        parts += [(f"{3 * i}.weight", (c, b.in_channels, 3, 3)), (f"{3 * i}.bias", (c,))]
        parts += [(f"{3 * i + 1}.weight", (c,)), (f"{3 * i + 1}.bias", (c,))]
    last = 3 * len(blocks) + 2
    return [*parts, (f"{last}.weight", (CLASSES, blocks[-1].channels)), (f"{last}.bias", (CLASSES,))]


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


# ---- stacks (Python) ---------------------------------------------------------------


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

    geo = spec.arch_on(image_side(x)).geometry
    n = len(x)
    x = np.ascontiguousarray(np.asarray(x, np.float32).reshape(-1, 1))
    if train and (batch < 2 or n % batch):
        raise ValueError(f"training mode needs batches of >= 2 images that tile the {n} images; got {batch}")
    m = next(iter(stacked.values())).shape[0]
    out = np.empty((m, n, CLASSES), np.float32)
    ns = spec.norm_settings(limits)
    for i in range(m):
        forward_model(model_arrays(stacked, spec, i), geo, ns, x, n, batch if train else 1, train, out[i])
    return out


# ---- the normalisers' inputs layer by layer (the remedies' recomputed statistics) -----------


def _conv_net(stacked, spec: ConvSpec, x):
    """``(models, geometry, settings, images)`` of a convolutional stack on the images ``x``: the
    number of models, :class:`bnstudy.compiled.conv.Geometry`, normaliser settings, and ``x`` as
    ``(N, side * side)`` float32."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    geo = spec.arch_on(image_side(x)).geometry
    m = np.asarray(stacked[f"{spec.norm_layers()[0]}.running_mean"]).shape[0]
    return m, geo, spec.norm_settings(), x


def _conv_layers(net, geo, ns, x, n_ex, train, pres, exact=None) -> None:
    """``n_ex`` images ``x`` (``(n_ex * P, 1)``) through model ``net``'s convolutions as
    :func:`bnstudy.compiled.conv.forward_model` (training mode: one batch of the ``n_ex`` images),
    each layer's normaliser input into ``pres[l]``. With ``exact`` (float64 ``(mean, var)`` per
    layer) each layer's pooled moments (:func:`bnstudy.compiled.reductions.pooled_moments`) go there
    first, and the layer is normalised with them, rounded to float32, as its running statistics
    (inference mode)."""
    from bnstudy.compiled import conv
    from bnstudy.compiled.reductions import pooled_moments

    a, acts = x, []
    for layer, (hid, pre) in enumerate(zip(net.hidden, pres)):
        conv.layer_input(hid, geo, layer, a, n_ex, pre)
        lp = hid.norm
        if exact is not None:
            mean, var = exact[layer]
            pooled_moments(pre, mean, var)
            lp = Params(lp.gamma, lp.beta, mean.astype(np.float32), var.astype(np.float32))
        if layer == len(pres) - 1:
            break
        out = np.empty_like(pre)
        skip = int(geo.layers[layer, conv.SKIP])
        conv.layer_output(ns, lp, geo, layer, pre, acts[skip] if skip >= 0 else out, n_ex, n_ex, train, out)
        acts.append(out)
        a = out
