"""The base every layer stands on: configuration checks, byte-stable I/O, statistics with
machine-independent arithmetic, and the build record (manifest, pins, provenance, plan,
determinism check, kernel cache, benchmark). Nothing here knows a study."""
