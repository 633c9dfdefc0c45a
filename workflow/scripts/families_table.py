"""Rule families: each study's record of its families of comparisons read against the config's
declaration (a mismatch stops the build before the paper), then the table of families and their macros."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
import json

from bnstudy.paper import families, latex

formed = dict(snakemake.params.formed)  # {family: study}, in the paper's order
sections = {study: list(names) for study, names in snakemake.params.sections.items()}  # each study's sections
summaries = {name: json.loads(open(snakemake.input[name]).read()) for names in sections.values() for name in names}
recorded = families.recorded_in(formed, sections, summaries)  # {family: the section whose summary records it}
checked = families.check(dict(snakemake.params.families), recorded, summaries, lambda name: snakemake.input[name])
latex.write_macros(snakemake.output.macros, families.macros(checked), "Families of comparisons, declared and applied")
latex.write_table(
    snakemake.output.table,
    families.HEADER,
    families.table_rows(checked),
    "p{0.34\\linewidth}lllr",
    "families of comparisons: declared in the config, applied by the studies",
)
