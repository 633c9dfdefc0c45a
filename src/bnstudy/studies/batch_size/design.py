"""The batch-size study's fixed design: which normalisers its equivalence tests compare with none.

Kept apart from :mod:`bnstudy.studies.batch_size.equivalence`, which computes the tests: the config's
checks (:mod:`bnstudy.studies.batch_size.checks`, run whenever Snakemake reads the workflow) need
only these names, and the computation's imports (the statistics, and Numba through them) cost each
Snakemake start about 0.3 CPU s.
"""

# normalisers without batch statistics whose claim is "does as well as no normaliser": each gets two
# one-sided tests against the family's smallest effect of interest (their names as the paper writes them)
CONTROLS = {"layernorm": "layer normalisation", "groupnorm": "group normalisation", "rmsnorm": "RMS normalisation"}
