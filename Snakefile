# Batch normalisation at training versus inference time: the whole study,
# from the split of the configured data set to paper/main.pdf. See README.md.
import os

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


# The studies, in the paper's order: one line each in src/bnstudy/base/catalogue.py, which
# says which this config runs (an optional one only where the
# config has its section). Then every rule without wildcards registers its outputs, and the
# studies' summaries and figures are local rules (jobs of seconds: they run where Snakemake runs,
# not as cluster jobs waiting in a queue; the bookkeeping rules below say `localrule: True`).
for study in STUDIES:

    include: study.rules_file


plumb_rules()  # every rule's environment, log, benchmark, code inputs and size (common.smk)
register_the_rest()
plan_runtimes()
workflow.localrules(*catalogue.local_rules(config))


include: "workflow/rules/paper.smk"
include: "workflow/rules/manifest.smk"


plumb_rules()  # the paper's and the manifest's rules
plan_priorities()  # every rule defined: the longest ready jobs start first


# Compile every Numba kernel once, before any job starts, instead of once in each
# of the first jobs running side by side (bnstudy.tools.warmup). Compiled code goes to
# the package's on-disk cache; on a cluster, jobs on nodes of another CPU model
# compile their own.
#
# Then, when the jobs run on this machine, a job server (bnstudy.pipeline.jobserver) loads the
# imports and the kernels once and runs each rule script in a fork of itself: a job's process
# starts in about 0.2 CPU s instead of 1.5 to 2. BNSTUDY_JOBSERVER=off starts the jobs alone.
onstart:
    from bnstudy.pipeline import scheduling

    scheduling.no_rate_limit(workflow)  # a local build: one pass of the scheduler per job that ends
    _network = config["network"].get("kind", "mlp")  # an MLP config compiles no convolution
    # the convolutions' kernels for the config's number of layers, in the warm-up and the job server
    if _network == "conv":
        from bnstudy.tools import warmup

        os.environ[warmup.LAYERS_VARIABLE] = json.dumps(canonical(config["network"]["layers"]))
    shell(
        f"PYTHONPATH={workflow.basedir}/src {sys.executable} -m bnstudy.tools.warmup --jobs {workflow.cores or 1} "
        f"--network {_network}"
    )
    if workflow.local_exec:
        from bnstudy.pipeline import jobserver

        _preload = "compile_mlp" if _network == "mlp" else "compile_all"
        _address = jobserver.start(
            os.getcwd(), f"{workflow.basedir}/src", ".snakemake/jobserver.log", f"bnstudy.tools.warmup:{_preload}"
        )
        os.environ[jobserver.VARIABLE] = _address or "off"


onsuccess:
    from bnstudy.pipeline import jobserver

    jobserver.stop()


onerror:
    from bnstudy.pipeline import jobserver

    jobserver.stop()


rule all:
    localrule: True
    default_target: True
    input:
        rules.manifest.output.manifest,
        rules.runtimes.output.runtimes,
