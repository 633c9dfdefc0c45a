"""The compiled arithmetic: Numba kernels in one fixed order, the same bits on every CPU.

Linear blocks and reductions, every normaliser's arithmetic (``normkernels``), the MLP's and the
convolutional network's forward passes, gradients, optimisers, the training loop (``backprop``),
the companion probes, and one batch-norm layer for the running-statistics study."""
