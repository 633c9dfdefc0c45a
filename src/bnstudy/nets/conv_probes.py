"""The convolutional network's companion probes: its training-mode labels of batches of test rows
(:class:`ConvLabeller`, what :meth:`bnstudy.nets.conv_train.ConvSpec.labeller` returns), apart from
the network's definition so that neither module is over the package's 400 lines."""

from __future__ import annotations

import numpy as np

from bnstudy.base.normalisers import BATCH_NAMES
from bnstudy.nets.spec import Labeller


class ConvLabeller(Labeller):
    """The convolutional network's training-mode labels: :func:`bnstudy.compiled.conv.batch_labels`
    (model by model; batch renorm with ``limits``).

    A normaliser without batch statistics (none, layer, group, RMS norm) normalises each image by
    itself, so row 0's label cannot depend on its companions: it is computed once per distinct row 0,
    in a batch of that row twice. The kernel sums every output in one fixed order whatever else is in
    the batch, so this is the label of row 0 in each of its batches bit for bit
    (``tests/compiled/test_shared_probes.py``), at a cost that no longer grows with the batches."""

    def __init__(self, stacked: dict, spec, x: np.ndarray, geometry, nets, limits=(1.0, 0.0)):
        super().__init__(stacked, spec, x)
        self._row_wise = spec.normaliser not in BATCH_NAMES
        self.models = len(nets)
        self._pixels = np.ascontiguousarray(np.asarray(x, np.float32).reshape(-1, 1))
        self._geo = geometry
        self._settings = spec.norm_settings(limits)
        self._nets = nets

    def labels(self, batches: np.ndarray) -> np.ndarray:
        from bnstudy.compiled.conv import batch_labels

        batches = np.ascontiguousarray(batches, dtype=np.int64)
        if batches.ndim != 2 or batches.shape[1] < 2:
            raise ValueError(f"batches must be (K, b) with b >= 2, got {batches.shape}")
        if batches.size and (batches.min() < 0 or batches.max() >= len(self._x)):
            raise ValueError(f"row indices must lie in [0, {len(self._x)})")
        out = np.empty((self.models, len(batches)), np.int64)
        if self._row_wise:  # row 0 alone decides its label: once per distinct row 0
            firsts, where = np.unique(batches[:, 0], return_inverse=True)
            alone = np.ascontiguousarray(np.stack([firsts, firsts], axis=1))
            once = np.empty(len(firsts), np.int64)
            for i, net in enumerate(self._nets):
                batch_labels(net, self._geo, self._settings, self._pixels, alone, once)
                out[i] = once[where]
            return out
        for i, net in enumerate(self._nets):
            batch_labels(net, self._geo, self._settings, self._pixels, batches, out[i])
        return out
