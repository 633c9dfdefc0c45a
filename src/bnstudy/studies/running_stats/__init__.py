"""Studies 3 and 5: the running statistics of one batch-norm layer, and what tests can see."""
