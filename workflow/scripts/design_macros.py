"""Rule design_macros: the config and data sizes as LaTeX macros."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # noqa: F821
from _setup import start  # noqa: E402

log = start(snakemake, torch=False)  # noqa: F821
from bnstudy import design, io, latex  # noqa: E402

inp = snakemake.input  # noqa: F821
macros = design.design_macros(
    dict(snakemake.params.config),  # noqa: F821
    len(io.read_array(inp.y_train)), len(io.read_array(inp.y_test)),
)
latex.write_macros(snakemake.output.macros, macros, "The study design, from the config")  # noqa: F821
