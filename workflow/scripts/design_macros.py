"""Rule design_macros: the config and data sizes as LaTeX macros."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
from bnstudy.base import io
from bnstudy.paper import design, latex

inp = snakemake.input
macros = design.design_macros(
    dict(snakemake.params.config),
    len(io.read_array(inp.y_train)),
    len(io.read_array(inp.y_test)),
)
latex.write_macros(snakemake.output.macros, macros, "The study design, from the config")
