"""The compiled arithmetic: Numba kernels in one fixed order, the same bits on every CPU.

Linear blocks and reductions, every normaliser's arithmetic (``normkernels``, its kinds' sections
``batchstats`` and ``examplenorms``), the MLP's and the convolutional network's forward passes (the
convolutions' register-tiled kernels ``convgemm``, ``convgrads`` on the registers of ``lanes``),
gradients, optimisers, the training loop (``backprop``; its passes ``passes`` and ``convsteps``),
the companion probes, and one batch-norm layer for the running-statistics study."""
