# Batch normalisation at training versus inference time: the whole study,
# from the split of the configured data set to paper/main.pdf. See README.md.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"


wildcard_constraints:
    normaliser="|".join(NORMALISERS),
    batch_size=r"\d+",


include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/batch_size.smk"
include: "workflow/rules/companions.smk"
include: "workflow/rules/running_stats.smk"
include: "workflow/rules/lr_sweep.smk"
include: "workflow/rules/serving.smk"
include: "workflow/rules/accumulation.smk"
include: "workflow/rules/finetune.smk"


# The convolutional study, where the config has one (its `conv` section; the digits only).
if "conv" in config:

    include: "workflow/rules/conv.smk"


include: "workflow/rules/paper.smk"
include: "workflow/rules/manifest.smk"


# Jobs of seconds (summaries, figures, macros, the paper, the manifest and the
# build record) say `localrule: True` in their own rules: they run where
# Snakemake runs, not as cluster jobs waiting in a queue.


# Compile every Numba kernel once, before any job starts, instead of once in each
# of the first jobs running side by side (bnstudy.tools.warmup). Compiled code goes to
# the package's on-disk cache; on a cluster, jobs on nodes of another CPU model
# compile their own.
onstart:
    shell(f"PYTHONPATH={workflow.basedir}/src {sys.executable} -m bnstudy.tools.warmup --jobs {workflow.cores or 1}")


rule all:
    localrule: True
    default_target: True
    input:
        rules.manifest.output.manifest,
        rules.runtimes.output.runtimes,
