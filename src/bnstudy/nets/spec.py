"""What a network kind is: the interface a study calls, whichever network it measures.

A network is described by its *spec*, an object of one of the kinds: :class:`bnstudy.nets.model.NetSpec`
(the MLP, features-hidden-hidden-10) or :class:`bnstudy.nets.conv_train.ConvSpec` (the convolutional
network: a list of blocks, :mod:`bnstudy.base.convlayers`). Both derive from :class:`Network`, which
names what every kind provides and holds what they share:

- its layout: the compiled loop's flat parameter vector (:meth:`Network.layout`), its normaliser
  layers' state-dict prefixes and features (:meth:`~Network.norm_layers`, :meth:`~Network.norm_widths`),
  the network as the compiled loop takes it (:meth:`~Network.arch`);
- its normaliser as the kernels take it (:meth:`~Network.setting`, :meth:`~Network.norm_settings`);
- its initial weights (:meth:`~Network.initial_state`) and its PyTorch module (:meth:`~Network.build_module`);
- its weights file's metadata and back (:meth:`~Network.metadata`, :meth:`~Network.from_metadata`);
- its forward pass on a stack (:meth:`~Network.logits`, :meth:`~Network.predict`, the probes'
  :meth:`~Network.labeller`, and the normalisers' inputs layer by layer that the remedies recompute
  statistics from: :meth:`~Network.training_layer_inputs`, :meth:`~Network.exact_statistics`);
- its training (:meth:`~Network.train_models`), by the one loop both kinds share
  (:mod:`bnstudy.nets.train`).

A study holds a spec and calls its methods; nothing outside the kinds tells them apart. Which kind
a config or a weights file names is :mod:`bnstudy.nets.network`'s.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

CLASSES = 10  # the labels of every data set (the convolutional network's linear map's outputs)


def labels_of(z: np.ndarray) -> np.ndarray:
    """Each row's label, ``(M, N)`` int64: the index of its first largest logit."""
    from bnstudy.compiled.kernels import argmax_rows

    out = np.empty(z.shape[:2], np.int64)
    for i in range(z.shape[0]):
        argmax_rows(np.ascontiguousarray(z[i]), out[i])
    return out


def batch_starts(batches) -> np.ndarray:
    """The first row of each of ``batches`` (lists of row indices) laid end to end, and the end:
    ``(len(batches) + 1,)`` int64; each batch must have two rows or more."""
    sizes = [len(b) for b in batches]
    if not sizes or min(sizes) < 2:
        raise ValueError("a training-mode pass needs batches of at least 2 rows")
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


class Network:
    """A network kind's spec: the methods every kind implements (they raise here) and those the kinds
    share. Subclasses are frozen dataclasses whose fields are the network's settings."""

    family: ClassVar[str] = ""  # the kind's name in a config's network.kind and a weights file's metadata
    normaliser: str
    eps: float
    momentum: float | None

    # ---- what each kind implements ----------------------------------------------------

    def layout(self) -> list[tuple[str, tuple[int, ...]]]:
        """The compiled loop's flat parameter vector: ``(state-dict key, shape)`` of each part, in order."""
        raise NotImplementedError

    def norm_layers(self) -> list[str]:
        """The state-dict prefix of each normaliser layer, in the network's order."""
        raise NotImplementedError

    def norm_features(self) -> list[int]:
        """Each normaliser layer's features (channels), in order."""
        raise NotImplementedError

    def setting(self) -> int:
        """The integer the kernels receive with the kind (group norm's groups, ghost batch norm's
        virtual batch; else 1), checked against the network's widths."""
        raise NotImplementedError

    def initial_state(self, seed: int) -> dict[str, np.ndarray]:
        """The initial weights for ``seed`` (the module's state-dict keys)."""
        raise NotImplementedError

    def arch(self, inputs: int):
        """The network as the compiled loop takes it (:class:`bnstudy.compiled.backprop.Arch`), for rows
        of ``inputs`` features (the convolutional network: square images of ``inputs`` pixels)."""
        raise NotImplementedError

    def metadata(self) -> dict[str, str]:
        """The spec as a weights file's metadata (:meth:`from_metadata` reads it back)."""
        raise NotImplementedError

    @classmethod
    def from_metadata(cls, meta: dict[str, str]) -> Network:
        """The spec a weights file's metadata records (:meth:`metadata`)."""
        raise NotImplementedError

    def logits(self, stacked: dict, x: np.ndarray, *, train: bool = False, batch: int = 0, limits=(1.0, 0.0)):
        """Logits ``(M, N, classes)`` of every model for the rows ``x``: inference mode, or training mode
        on consecutive batches of ``batch`` rows (running statistics read, never written; ``limits``:
        batch renorm's ``(rmax, dmax)``)."""
        raise NotImplementedError

    def labeller(self, stacked: dict, x: np.ndarray, limits=(1.0, 0.0)) -> Labeller:
        """The stack ready to label rows of ``x`` (:class:`Labeller`; ``limits``: batch renorm's)."""
        raise NotImplementedError

    def build_module(self, seed: int | None = None):
        """The network as a PyTorch module (imports PyTorch); with ``seed``, holding its initial weights."""
        raise NotImplementedError

    def training_layer_inputs(self, stacked: dict, x: np.ndarray, batches) -> tuple[dict[str, np.ndarray], object]:
        """Pre-norm inputs of each normaliser layer over a training-mode pass over ``batches`` (lists of
        row indices of ``x``), batch statistics in every layer; ``({layer: (M, rows, F)}, starts)``
        (:func:`bnstudy.evaluation.recompute.training_mode_layer_inputs` states the rows)."""
        raise NotImplementedError

    def exact_statistics(self, stacked: dict, x: np.ndarray) -> dict:
        """Each normaliser layer's exact mean and variance over the rows ``x``, the layers above
        computed in inference mode with them (:func:`bnstudy.evaluation.recompute.exact_statistics`)."""
        raise NotImplementedError

    # ---- what the kinds share ---------------------------------------------------------

    def norm_widths(self) -> list[tuple[str, int]]:
        """Each normaliser layer's state-dict prefix and features (channels), in order."""
        return list(zip(self.norm_layers(), (int(f) for f in self.norm_features())))

    def norm_settings(self, limits=(1.0, 0.0), momentum=None):
        """The normaliser as the kernels take it (:class:`bnstudy.compiled.normkernels.Settings`): batch
        renorm's ``limits``; ``momentum`` replaces the network's own when given (-1: None)."""
        from bnstudy.compiled import kernels
        from bnstudy.compiled.normkernels import settings

        m = self.momentum if momentum is None else momentum
        m = -1.0 if m is None else m
        return settings(kernels.KIND[self.normaliser], self.eps, self.setting(), m, *limits)

    def predict(self, stacked: dict, x: np.ndarray) -> np.ndarray:
        """Inference-mode labels ``(M, N)`` of every model for the rows ``x``."""
        return labels_of(self.logits(stacked, x))

    def train_one(self, recipe, seed: int, x: np.ndarray, y: np.ndarray, first_grad=None, validation=None):
        """Train the network of ``seed``: :func:`bnstudy.nets.train.train_one`."""
        from bnstudy.nets import train

        return train.train_one(self, recipe, seed, x, y, first_grad, validation)

    def train_models(self, recipe, seeds, x: np.ndarray, y: np.ndarray, threads: int = 1, validation=None):
        """One network per seed: ``(stack, log)`` (:func:`bnstudy.nets.train.train_models`)."""
        from bnstudy.nets import train

        return train.train_models(self, recipe, seeds, x, y, threads, validation)


class Labeller:
    """A stack of one network ready to label rows of ``x``: ``models``, ``labels(batches)`` (training-mode
    labels ``(M, K)`` of row 0 of each of the ``(K, b)`` batches of row indices; each kind's) and
    ``inference(rows)`` (inference-mode labels ``(M, R)`` of the rows ``rows``: :meth:`Network.predict`)."""

    models: int

    def __init__(self, stacked: dict, spec: Network, x: np.ndarray):
        self._stacked, self._spec, self._x = stacked, spec, np.asarray(x)

    def inference(self, rows) -> np.ndarray:
        return self._spec.predict(self._stacked, self._x[rows])

    def labels(self, batches: np.ndarray) -> np.ndarray:
        raise NotImplementedError
