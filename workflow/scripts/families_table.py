"""Rule families: each study's record of its families of comparisons read against the config's
declaration (a mismatch stops the build before the paper), then the table of families and their macros."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
import json

from bnstudy.paper import families, latex

summaries = {study: json.loads(open(path).read()) for study, path in snakemake.input.items()}
where = {study: path for study, path in snakemake.input.items()}
checked = families.check(dict(snakemake.params.families), dict(snakemake.params.formed), summaries, where.get)
latex.write_macros(snakemake.output.macros, families.macros(checked), "Families of comparisons, declared and applied")
latex.write_table(
    snakemake.output.table,
    families.HEADER,
    families.table_rows(checked),
    "p{0.46\\linewidth}lllr",
    "families of comparisons: declared in the config, applied by the studies",
)
