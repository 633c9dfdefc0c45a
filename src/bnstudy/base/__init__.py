"""The base every layer stands on: configuration checks, the registry of normalisers (every kind
declared once), the catalogue of studies (one line each, from which the workflow is derived),
the data sets' files and their hashes, the convolutional network's layers as blocks
(``convlayers``), byte-stable I/O, statistics with machine-independent arithmetic, and each job's
seeds and thread settings (``runtime``). The pipeline's machinery (cost model, job server, build
record) is ``bnstudy.pipeline``, the layer after this one. Nothing here imports a later layer."""
