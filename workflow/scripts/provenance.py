"""Rule provenance: digest of every analysis output and versions (hashed); the machine (not hashed).

The macros and table the paper includes hold only what is the same on every
machine for one config: package versions, the config digest, the digest of the
analysis outputs. What describes the machine (CPU, the kernels each library
selects, threads) goes into the build record ``results/provenance/machine.csv``,
beside the runtimes, kept out of the hash manifest: written here, not declared
as an output of the rule (every declared output is registered and hashed),
unless the rule names it as its log ``machine``.
"""

import sys
from pathlib import Path

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.paper import latex
from bnstudy.pipeline import manifest, provenance

out, p = snakemake.output, snakemake.params
table = manifest.build([tuple(e) for e in p.entries])
manifest.write(out.analysis_manifest, table)
digest = manifest.sha256(out.analysis_manifest)
config = dict(p.config)
versions = provenance.package_versions()


def tt(text):
    return "\\texttt{" + latex.escape(text) + "}"


macros = {
    "configDigest": tt(provenance.config_digest(config)[:16]),
    "analysisManifestDigest": tt(digest[:16]),
    "analysisFiles": latex.fmt(len(table)),
    "torchVersion": tt(versions["torch"]),
}
latex.write_macros(out.macros, macros, "Provenance of this build")
rows = [[latex.escape(k), tt(v)] for k, v in versions.items()]
rows += [[latex.escape("compute threads (config)"), tt(str(config["compute_threads"]))]]
latex.write_table(out.table, ["software / setting", "version / value"], rows, "ll", "Provenance")
log.info("analysis manifest %s: %d files", digest, len(table))

# The build record: this machine, not hashed.
machine = provenance.machine_description(config["compute_threads"], torch=False)
record = getattr(snakemake.log, "machine", None) or Path(out.analysis_manifest).parent / "machine.csv"
io.write_table(record, [{"setting": k, "value": v} for k, v in machine.items()])
log.info("machine (build record %s):\n%s", record, "\n".join(f"  {k}: {v}" for k, v in machine.items()))
