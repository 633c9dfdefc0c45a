"""Rule figure_companions: flip rate against probe batch size (bnstudy.studies.companions.figure)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
import logging

logging.getLogger("fontTools").setLevel(logging.WARNING)  # font subsetting chatter
import yaml

from bnstudy.base import io
from bnstudy.paper import figures
from bnstudy.studies.companions.figure import companions

inp = snakemake.input
with open(inp.published) as f:
    published = yaml.safe_load(f)["companions"]
fig = companions(
    io.read_table(inp.summary_table),
    io.read_table(inp.grid_table),
    published,
    exact_companions=snakemake.params.get("exact_companions"),
)
figures.save(fig, snakemake.output.pdf, snakemake.output.png)
log.info("figure written")
