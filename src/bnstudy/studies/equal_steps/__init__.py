"""Batch size at equal steps: the grid's smallest and largest batch sizes trained for each other's
number of optimiser steps, so that the batch size's effect is seen apart from the step count:
design (:mod:`.design`), science (:mod:`.science`), report (:mod:`.report`), config check
(:mod:`.checks`), cost (:mod:`.cost`)."""
