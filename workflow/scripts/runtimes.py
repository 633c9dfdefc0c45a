"""Rule runtimes: per-rule wall time and memory from the benchmark files."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # noqa: F821
from _setup import start  # noqa: E402

log = start(snakemake, torch=False)  # noqa: F821
from bnstudy import io, provenance  # noqa: E402

table = provenance.runtimes(snakemake.input.benchmarks)  # noqa: F821
io.write_table(snakemake.output.runtimes, table.round(3))  # noqa: F821
log.info("\n%s", table.to_string(index=False))
