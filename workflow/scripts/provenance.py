"""Rule provenance: digest of every analysis output, versions, machine, threads."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # noqa: F821
from _setup import start  # noqa: E402

log = start(snakemake)  # noqa: F821
from bnstudy import latex, manifest, provenance  # noqa: E402

out, p = snakemake.output, snakemake.params  # noqa: F821
table = manifest.build([tuple(e) for e in p.entries])
manifest.write(out.analysis_manifest, table)
digest = manifest.sha256(out.analysis_manifest)
config = dict(p.config)
versions = provenance.package_versions()
settings = provenance.compute_settings(config["compute_threads"])


def tt(text):
    return "\\texttt{" + latex.escape(text) + "}"


macros = {
    "configDigest": tt(provenance.config_digest(config)[:16]),
    "analysisManifestDigest": tt(digest[:16]),
    "analysisFiles": latex.fmt(len(table)),
    "cpuModel": latex.escape(provenance.cpu_model()),
    "torchVersion": tt(versions["torch"]),
    "torchCpuKernels": tt(settings["torch CPU kernels"]),
    "numericsFingerprint": tt(settings["numerics fingerprint"]),
}
latex.write_macros(out.macros, macros, "Provenance of this build")
rows = [[latex.escape(k), tt(v)] for k, v in versions.items()]
rows += [[latex.escape(k), tt(v)] for k, v in settings.items()]
latex.write_table(out.table, ["software / setting", "version / value"], rows, "ll", "Provenance")
log.info("analysis manifest %s: %d files", digest, len(table))
