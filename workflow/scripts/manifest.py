"""Rule manifest: sha256 and size of every registered output."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.pipeline import manifest

table = manifest.build([tuple(e) for e in snakemake.params.entries])
manifest.write(snakemake.output.manifest, table)
log.info("%d files, %d bytes", len(table), int(table["bytes"].sum()))
