"""Rule runtimes: per-rule wall time and memory from the benchmark files."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.pipeline import provenance

table = provenance.runtimes(snakemake.input.benchmarks)
io.write_table(snakemake.output.runtimes, table.round(3))
log.info("\n%s", table.to_string(index=False))
