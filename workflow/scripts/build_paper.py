"""Rule paper: assemble the LaTeX build from paper/ and results/, run latexmk."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from pathlib import Path

from bnstudy.paper import build as paper

pdf = paper.build(
    sources=Path(snakemake.input.main).parent,
    generated=dict(snakemake.params.generated),
    sections=snakemake.params.sections,
    build_dir=Path("results/paper/build"),
    log_file=snakemake.log[0],
)
paper.install(pdf, snakemake.output.pdf)
log.info("paper written to %s", snakemake.output.pdf)
