"""The base every layer stands on: configuration checks, the registry of normalisers (every kind
declared once), the catalogue of studies (one line each, from which the workflow is derived),
the data sets' files and their hashes, the convolutional network's layers as blocks
(``convlayers``), byte-stable I/O, statistics with machine-independent arithmetic, and the build
record (manifest, pins, provenance, plan, determinism check, kernel cache). Nothing here imports a study."""
