"""The MLP's companion probes: its training-mode labels of batches of test rows (:class:`MlpLabeller`,
what :meth:`bnstudy.nets.model.NetSpec.labeller` returns), through the compiled
:class:`bnstudy.compiled.probes.Prober`. Apart from :mod:`bnstudy.nets.model`, which every MLP job loads,
so that only the jobs that probe depend on the probe kernels."""

from __future__ import annotations

import numpy as np

from bnstudy.compiled.probes import Prober
from bnstudy.nets.spec import Labeller


class MlpLabeller(Labeller):
    """The MLP's training-mode labels: the compiled :class:`bnstudy.compiled.probes.Prober`."""

    def __init__(self, stacked: dict, spec, x: np.ndarray, limits=(1.0, 0.0)):
        super().__init__(stacked, spec, x)
        self._prober = Prober(stacked, spec, x, limits)
        self.models = self._prober.models

    def labels(self, batches: np.ndarray) -> np.ndarray:
        return self._prober.labels(batches)
