"""Batch normalisation at training versus inference time: the science of the study.

Modules, one idea each:

- ``runtime``     deterministic compute settings (threads, algorithms, seeds)
- ``data``        the digits split and the enumerated synthetic population
- ``norms``       normalisers as stacked functional layers (and batch renormalisation)
- ``model``       the MLP, as plain PyTorch modules and as a stack of models
- ``train``       the per-model loop and the lockstep trainer
- ``companions``  companion dependence of training-mode predictions
- ``kernels``     the probes' compiled batch-norm kernel (Numba)
- ``batch_size``  accuracy by training batch size, and running-statistics remedies
- ``running_stats`` the enumerated running-statistics study
- ``reference``   an independent NumPy BatchNorm1d
- ``stats``       bootstrap and seed intervals
- ``io``          byte-stable, atomic file writing
- ``manifest``    content hashes of pipeline outputs
- ``codedeps``    the package modules each rule script can load (its code inputs)
"""

__version__ = "0.1.0"
