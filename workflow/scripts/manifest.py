"""Rule manifest: sha256 and size of every registered output."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # noqa: F821
from _setup import start  # noqa: E402

log = start(snakemake, torch=False)  # noqa: F821
from bnstudy import manifest  # noqa: E402

table = manifest.build([tuple(e) for e in snakemake.params.entries])  # noqa: F821
manifest.write(snakemake.output.manifest, table)  # noqa: F821
log.info("%d files, %d bytes", len(table), int(table["bytes"].sum()))
