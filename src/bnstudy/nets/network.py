"""The study's two networks behind one interface: what a study calls, whichever network it measures.

A network is described by its *spec*: :class:`bnstudy.nets.model.NetSpec` for the MLP
(features-hidden-hidden-10, :mod:`bnstudy.nets.model`) or :class:`bnstudy.nets.conv_train.ConvSpec`
for the convolutional network (a list of 3x3 convolutions with strides and residual connections,
global average pool, linear map: :mod:`bnstudy.nets.conv_train`). Both train in the one compiled
loop (:func:`bnstudy.compiled.backprop.train_run`, the network as data) and both keep their
weights as a *stack* (state-dict keys with a leading model axis). The functions here take a spec
and dispatch on its type in one place (:func:`_family`), so a study written against them runs on
either network: train, logits in inference or training mode, labels, the state-dict prefixes of the
normaliser layers, and the spec as a rule's parameters give it.

The MLP's path is exactly the functions it dispatches to (the same bits); the convolutional
network's computes with :mod:`bnstudy.compiled.conv`. What is defined for one network only raises
a ``ValueError`` naming the network and what it lacks.
"""

from __future__ import annotations

import numpy as np

KINDS = ("mlp", "conv")


def _family(spec):
    """The module that implements ``spec``'s network (:mod:`bnstudy.nets.model`'s MLP or
    :mod:`bnstudy.nets.conv_train`), and the name of its kind."""
    from bnstudy.nets import conv_train

    if isinstance(spec, conv_train.ConvSpec):
        return "conv"
    from bnstudy.nets.model import NetSpec

    if isinstance(spec, NetSpec):
        return "mlp"
    raise TypeError(f"not a network spec: {spec!r}")


def kind(spec) -> str:
    """``"mlp"`` or ``"conv"``."""
    return _family(spec)


def spec_from_params(net: dict, inputs: int):
    """The spec of a rule's network parameters: ``kind`` (``mlp`` when absent, as in every
    config before the convolutional network could be chosen), the normaliser and its settings.
    The MLP takes ``hidden`` and the data's ``inputs`` features; the convolutional network takes
    ``layers`` (each ``{channels, stride, skip}``) on square images of ``inputs`` pixels."""
    which = net.get("kind", "mlp")
    if which == "mlp":
        from bnstudy.nets.model import spec_from_params as mlp_spec

        return mlp_spec({k: v for k, v in net.items() if k != "kind"}, inputs)
    if which == "conv":
        from bnstudy.nets.conv_train import ConvSpec

        return ConvSpec.from_params(net["normaliser"], net)
    raise ValueError(f"network kind {which!r} is not one of {', '.join(KINDS)}")


def metadata(spec) -> dict[str, str]:
    """The spec as a weights file's metadata: the MLP's fields (:meth:`bnstudy.nets.model.NetSpec.metadata`,
    no kind: the files of every MLP are as they were), or ``kind: conv`` and the convolutional
    network's (:meth:`bnstudy.nets.conv_train.ConvSpec.meta`)."""
    if _family(spec) == "conv":
        return {"kind": "conv"} | spec.meta()
    return spec.metadata()


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.strip("()").split(",") if v.strip())


def spec_from_metadata(meta: dict[str, str]):
    """The spec a weights file's metadata records (:func:`metadata`)."""
    if meta.get("kind", "mlp") == "mlp":
        from bnstudy.nets.model import spec_from_metadata as mlp_spec

        return mlp_spec(meta)
    from dataclasses import fields

    from bnstudy.nets.conv_train import ConvSpec

    parse = {tuple: _ints, int: int, float: float, str: str}
    given = {}
    for f in fields(ConvSpec):  # each field recorded, read back as the type of its default
        if f.name in meta and f.name != "normaliser":
            given[f.name] = parse[type(f.default)](meta[f.name])
    return ConvSpec(meta["normaliser"], **given)


def norm_layers(spec) -> list[str]:
    """The state-dict prefix of each normaliser layer, in the network's order."""
    if _family(spec) == "conv":
        from bnstudy.nets.conv_train import norm_keys

        return norm_keys(spec)
    from bnstudy.nets.model import NORMS

    return list(NORMS)


def initial_state(spec, seed: int) -> dict[str, np.ndarray]:
    """The initial weights of ``spec``'s network for ``seed`` (the module's state-dict keys)."""
    if _family(spec) == "conv":
        from bnstudy.nets import conv_train

        return conv_train.initial_state(spec, seed)
    from bnstudy.nets import model

    return model.initial_state(spec, seed)


def layout(spec) -> list[tuple[str, tuple[int, ...]]]:
    """The compiled loop's flat parameter vector: ``(state-dict key, shape)`` of each part, in order."""
    if _family(spec) == "conv":
        from bnstudy.nets import conv_train

        return conv_train.layout(spec)
    from bnstudy.compiled import optimisers

    return optimisers.layout(spec.widths)


def norm_widths(spec) -> list[tuple[str, int]]:
    """Each normaliser layer's state-dict prefix and features (channels), in order."""
    if _family(spec) == "conv":
        return list(zip(norm_layers(spec), (int(c) for c in spec.channels)))
    return list(zip(norm_layers(spec), (int(w) for w in spec.widths[1:-1])))


def arch(spec, inputs: int):
    """The network as the compiled loop takes it (:class:`bnstudy.compiled.backprop.Arch`), for
    rows of ``inputs`` features (the convolutional network: square images of ``inputs`` pixels)."""
    from bnstudy.compiled import backprop

    if _family(spec) == "conv":
        from bnstudy.nets.conv_train import image_side

        return spec.arch(image_side(np.empty((0, int(inputs)))))
    return backprop.mlp_arch(spec.widths)


def norm_settings(spec, limits=(1.0, 0.0), momentum=None):
    """``spec``'s normaliser as the kernels take it (:class:`bnstudy.compiled.normkernels.Settings`):
    batch renorm's ``limits``; ``momentum`` replaces the network's own when given (-1: None)."""
    from bnstudy.compiled import kernels
    from bnstudy.compiled.normkernels import settings

    m = getattr(spec, "momentum", None) if momentum is None else momentum
    m = -1.0 if m is None else m
    return settings(kernels.KIND[spec.normaliser], spec.eps, setting(spec), m, *limits)


def setting(spec) -> int:
    """The integer the kernels receive with the kind (group norm's groups, ghost batch norm's
    virtual batch; else 1), checked against the network's widths."""
    if _family(spec) == "conv":
        return spec.setting()
    from bnstudy.compiled import kernels

    return kernels.setting(spec)


def train_models(spec, recipe, seeds, x: np.ndarray, y: np.ndarray, threads: int = 1, validation=None):
    """One network per seed: ``(stack, log)`` (see :func:`bnstudy.nets.train.train_models`)."""
    if _family(spec) == "conv":
        from bnstudy.nets import conv_train

        return conv_train.train_models(spec, recipe, seeds, x, y, threads, validation)
    from bnstudy.nets import train

    return train.train_models(spec, recipe, seeds, x, y, threads, validation)


def logits(stacked: dict, spec, x: np.ndarray, *, train: bool = False, batch: int = 0, limits=(1.0, 0.0)):
    """Logits ``(M, N, classes)`` of every model for the rows ``x``: inference mode, or training
    mode on consecutive batches of ``batch`` rows (running statistics read, never written;
    ``limits``: batch renorm's ``(rmax, dmax)``)."""
    if _family(spec) == "conv":
        from bnstudy.nets import conv_train

        return conv_train.logits(stacked, spec, x, train=train, batch=batch, limits=limits)
    from bnstudy.compiled import kernels

    return kernels.logits(stacked, spec, x, train=train, batch=batch, limits=limits)


def labels_of(z: np.ndarray) -> np.ndarray:
    """Each row's label, ``(M, N)`` int64: the index of its first largest logit."""
    from bnstudy.compiled.kernels import argmax_rows

    out = np.empty(z.shape[:2], np.int64)
    for i in range(z.shape[0]):
        argmax_rows(np.ascontiguousarray(z[i]), out[i])
    return out


def predict(stacked: dict, spec, x: np.ndarray) -> np.ndarray:
    """Inference-mode labels ``(M, N)`` of every model for the rows ``x``."""
    if _family(spec) == "mlp":
        from bnstudy.compiled import kernels

        return kernels.predict(stacked, spec, x)
    return labels_of(logits(stacked, spec, x))
