"""What the studies share, below them: trained networks scored, statistics recomputed, seeds paired.

Every study that evaluates trained networks reads these modules; none reads another study's
(``tests/architecture/test_study_imports.py``). Nothing is imported here, so a rule that loads one module of the
package (a report's :mod:`.paired`) does not load the compiled ones (``bnstudy.pipeline.codedeps``).

- :mod:`.accuracy`   accuracy in inference and in training mode, seeded test batches, trained cells
- :mod:`.recompute`  a frozen network's batch-norm statistics recomputed from its training rows
- :mod:`.distance`   how far running statistics are from exact ones
- :mod:`.paired`     seed-paired comparisons: the t interval of the differences, McNemar's exact test
- :mod:`.means`      the mean of values added in order (no network code: the summaries load it)
"""
