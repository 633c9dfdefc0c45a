"""Rule summarise_compare: this build's headline numbers beside other builds', read from their macro
files after checking them against their manifests; JSON, macros, table, the verdicts across builds and
(append_papers) the other builds' papers, each checked likewise (bnstudy.studies.compare.report)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.paper import latex
from bnstudy.pipeline.pinned import macro_definitions
from bnstudy.studies.compare import report

inp, out, p = snakemake.input, snakemake.output, snakemake.params
ours = {}
for path in inp.ours:
    ours |= macro_definitions(path)
builds, sources, files = [ours], [{"directory": ".", "expected": None, "files": len(inp.ours)}], 0
for build in p.builds:
    theirs, n = report.verified_macros(build["directory"], build["expected"])
    builds.append(theirs)
    sources.append({"directory": build["directory"], "expected": build["expected"], "files": n})
    files += n
macros = report.macros(builds, files) | report.findings_macros(builds)
if p.append_papers:
    for build, target in zip(p.builds, out.parts, strict=True):
        report.copy_verified(build["directory"], build["expected"], "paper/main.pdf", target)
    # the paper build copies each part to generated/parts/ under its own name
    names = [f"generated/parts/{target.rsplit('/', 1)[-1]}" for target in out.parts]
    io.write_text(out.parts_tex, report.parts_tex(sources, builds, names))
    macros["compareAppended"] = "1"
io.write_json(out.summary, report.summary_json(builds, sources))
latex.write_macros(out.macros, macros, "Side by side: other builds' headline numbers")
io.write_text(out.table, report.tabular(*report.table(builds)))
log.info("%d other build(s), %d of their macro files checked", len(p.builds), files)
