"""Rule paper: assemble the LaTeX build from paper/ and results/, run latexmk."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # noqa: F821
from _setup import start  # noqa: E402

log = start(snakemake, torch=False)  # noqa: F821
from pathlib import Path  # noqa: E402

from bnstudy import paper  # noqa: E402

pdf = paper.build(
    sources=Path(snakemake.input.main).parent,  # noqa: F821
    generated=dict(snakemake.params.generated),  # noqa: F821
    build_dir=Path("results/paper/build"),
    log_file=snakemake.log[0],  # noqa: F821
)
paper.install(pdf, snakemake.output.pdf)  # noqa: F821
log.info("paper written to %s", snakemake.output.pdf)  # noqa: F821
