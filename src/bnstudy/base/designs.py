"""The studies' design constants: names and sizes that the compiled science, its reports
and its figures share.

Pure Python, importing nothing: a report or a figure that needs a study's stream
names takes them from here, never from the study's compiled module
(``serving``, ``finetune``, ``conv``), so that editing a kernel re-runs only the
rules that compute with it, not those that print or draw its results (each rule's
code inputs are the modules its script can import: :mod:`bnstudy.pipeline.codedeps`).
"""

# Live serving (bnstudy.studies.serving.science): the two orders of the test stream.
SERVING_STREAMS = ("random", "sorted")

# Fine-tuning (bnstudy.studies.finetune.science): its streams are the training batch orders of
# bnstudy.nets.batching.ORDERS (a test keeps the two equal), each in two modes.
FINETUNE_STREAMS = ("shuffle", "class_sorted")
FINETUNE_MODES = ("live", "frozen")
FINETUNE_STREAM_WORDS = {"shuffle": "random batches", "class_sorted": "one-class batches"}

# Gradient accumulation (bnstudy.studies.accumulation.report): the five training configurations.
ACCUMULATION_CONFIGS = ("large", "accumulate", "ghost", "small", "scaled")
