"""Rule figure_serving: training-mode accuracy along the streams (bnstudy.studies.serving.figure)."""

import sys

sys.path.insert(0, snakemake.scriptdir)
from _setup import start

log = start(snakemake, torch=False)
import math

from bnstudy.base import io
from bnstudy.paper import figures
from bnstudy.studies.serving.figure import serving

summary = io.read_json(snakemake.input.summary)["by_train_batch_size"]
befores = [cell["random"]["inference_before"]["mean"] for cell in summary.values()]
fig = serving(io.read_table(snakemake.input.along), math.fsum(befores) / len(befores), snakemake.params.normaliser)
figures.save(fig, snakemake.output.pdf, snakemake.output.png)
log.info("figure written")
