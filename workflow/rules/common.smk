# Shared helpers: config checks, the wildcard grid, and the output registry that
# feeds the hash manifest and the paper.
import json
import re
import sys
from pathlib import Path

from snakemake.io import apply_wildcards
from snakemake.iocontainers import Wildcards

sys.path.insert(0, str(Path(workflow.basedir) / "src"))
from bnstudy.pipeline.codedeps import code_inputs
from bnstudy.base.config import ConfigError, load_schema
from bnstudy.base.config import load_file as load_config_file
from bnstudy.base.config import validate as validate_config
from bnstudy.base.normalisers import RENORM, spec_settings
from bnstudy.base.normalisers import get as normaliser
from bnstudy.pipeline.plan import available_memory_mb, exact_statistics_mb
from bnstudy.nets.weights import blocks as seed_blocks
from bnstudy.base import catalogue

# The config schema, its normaliser lists filled from the registry of normalisers.
SCHEMA = load_schema(Path(workflow.basedir) / "workflow" / "schemas" / "config.schema.yaml")


def _fail(message):
    # One clear line, before any job starts.
    print(message, file=sys.stderr)
    sys.exit(1)


def _check(cfg, source):
    try:
        validate_config(cfg, SCHEMA)
    except ConfigError as e:
        _fail(f"{e} [{source}]")


# Every --configfile must be a complete experiment on its own (a missing key is
# an error, not silently taken from config/config.yaml); then the merged config.
# Each file is read strictly (a key given twice, which YAML would silently
# resolve to the later value, is refused with its line: bnstudy.base.config.load_file).
for _path in workflow.overwrite_configfiles or [Path(workflow.basedir) / "config" / "config.yaml"]:
    try:
        _check(load_config_file(_path), _path)
    except ConfigError as e:
        _fail(str(e))
# The experiment is the --configfile files alone (merged in order), not merged onto
# config/config.yaml: a section a file leaves out (an optional one such as `data`) is left out,
# not taken from the default config. `--config KEY=VALUE` still applies on top.
if workflow.overwrite_configfiles:
    from snakemake.utils import update_config as _update_config

    _given = {}
    for _path in workflow.overwrite_configfiles:
        _update_config(_given, load_config_file(_path))
    _update_config(_given, workflow.config_settings.overwrite_config or {})
    config.clear()
    config.update(_given)
_check(config, "merged config")

NORMALISERS = config["normalisers"]
GRID_BATCH_SIZES = config["grid"]["batch_sizes"]
SEEDS = config["grid"]["seeds"]
# Seeds train in fixed blocks (block k: seeds kB..kB+B-1 of grid.seeds), one job per
# cell and block, so that a new seed trains and evaluates only its own block.
SEED_BLOCKS = seed_blocks(SEEDS, config["grid"]["seed_block"])


def follow_up_blocks(seeds, block_size: int, follow_up) -> dict[str, list[int]]:
    """The seed blocks (:func:`seed_blocks`) that the follow-up studies use: those of the seeds
    ``follow_up`` (the config's ``grid.follow_up_seeds``, whole blocks of the grid's seeds), or
    every block where it is None."""
    every = seed_blocks(seeds, block_size)
    if follow_up is None:
        return every
    wanted = {int(s) for s in follow_up}
    return {name: block for name, block in every.items() if wanted & set(block)}


# The follow-up studies (companion probes of the grid, the last rows kept, sorted batches, serving,
# accumulation, fine-tuning) take the blocks of grid.follow_up_seeds (default: every block); the
# batch-size study, its remedies and PreciseBN on a budget take every block.
FOLLOW_UP_BLOCKS = follow_up_blocks(SEEDS, config["grid"]["seed_block"], config["grid"].get("follow_up_seeds"))
THREADS = config["compute_threads"]


def canonical(value):
    """``value`` (a part of the config) with every mapping's keys sorted, at any depth. Snakemake
    compares a job's params as text, so a mapping taken from the config as it is would re-run the
    job when a config file only lists its keys in another order; every mapping that reaches a
    rule's params goes through here."""
    return json.loads(json.dumps(value, sort_keys=True))


def declared_families(*studies):
    """The config's declarations of the families of comparisons ``studies`` form (``catalogue.families``),
    keys sorted (:func:`canonical`): a rule's params change only when one of its own families'
    declarations does."""
    return canonical({f: config["families"][f] for f, study in catalogue.families(config).items() if study in studies})


# The config with every mapping's keys sorted: params built from it do not change
# (and re-run jobs) when a config file is only reordered or reformatted.
CANONICAL_CONFIG = canonical(config)

CONDA_ENV = "../envs/bnstudy.yaml"  # relative to workflow/rules/


# The code inputs of a rule: its script, _setup.py and every package module the
# script can load, read from the imports (bnstudy.pipeline.codedeps), so that a change to
# the science re-runs what depends on it (the code trigger sees only the script:
# file itself). plumb_rules() gives them to every rule that runs a script.
def family_summaries():
    """The summaries that may record the families of comparisons: each section's of every study that
    forms one (a study with two sections, as companions and protocols, records each family in one)."""
    studies = dict.fromkeys(catalogue.families(config).values())
    return [sec for s in catalogue.included(config) if s.name in studies for sec in s.paper_sections]


def code(script):
    return code_inputs(script, Path(workflow.basedir))


# ---- plumbing: resources, logs, benchmarks -----------------------------------
# Each rule's memory (MB) and run time (minutes, = sbatch --time) for its first
# attempt; a job killed for either is retried (profiles/slurm: retries) with
# twice, then three times as much. Threads: 1 unless the rule says otherwise.
def per_attempt(first):
    return lambda wc, attempt: first * attempt


# The rules that state their size, by their place in the order of definition: a rule's ``resources:``
# are evaluated while it is being defined, before Snakemake adds it to workflow.rules (Snakemake wraps
# the functions themselves, so the rule cannot be known by them afterwards).
_SIZED_RULES = set()


def job_size(mem_mb, runtime):
    """A rule's ``resources:`` (``**job_size(MB, minutes)``): both grow with the attempt. A rule that
    states none is a job of seconds (:data:`SECONDS_JOB`, given by :func:`plumb_rules`)."""
    _SIZED_RULES.add(len(workflow.rules))  # the place of the rule being defined
    return dict(mem_mb=per_attempt(mem_mb), runtime=per_attempt(runtime))


def plan_runtimes():
    """Every rule's run time from the cost model (bnstudy.pipeline.plan): each job asks at least
    plan.RUNTIME_MARGIN times its estimated CPU seconds (minutes, a multiple of 5), times the attempt,
    so that a cluster enforcing run times does not stop a job the plan expects to run long; the
    rule's own minutes stay the floor, and `--set-resources` still overrides both. Called once every
    rule is defined."""
    from bnstudy.pipeline import plan as cost_model

    table = cost_model.read_table()
    for r in workflow.rules:
        if not r.norun and "runtime" in r.resources.keys():
            r.resources["runtime"] = _planned_runtime(r, r.resources["runtime"], table, cost_model)


def plan_priorities():
    """Every job's priority from the cost model: its estimated CPU seconds (bnstudy.pipeline.plan), so that
    of the jobs ready at a time Snakemake starts the longest first. Started late, one long job (a
    grid network at batch 2) runs alone at the end with a core idle; started first, it runs beside
    the many short ones. Only the order of the jobs changes, never what a job computes. Called once
    every rule is defined."""
    from bnstudy.pipeline import plan as cost_model

    table = cost_model.read_table()
    for r in workflow.rules:
        if not r.norun:
            r.priority = _planned_priority(r, table, cost_model)


def _job_estimate(r, wildcards, table, cost_model):
    """The cost model's CPU seconds for the job of ``r`` with ``wildcards`` (its params evaluated)."""
    params = {name: (v(wildcards) if callable(v) else v) for name, v in r.params.items()}
    return cost_model.estimate(r.name, params, dict(wildcards), config, table)


def _planned_priority(r, table, cost_model):
    def priority(wildcards):
        return round(_job_estimate(r, wildcards, table, cost_model))

    return priority


def _planned_runtime(r, first, table, cost_model):
    """The run time of a job of ``r``, its own (``first``, a Snakemake Resource of the
    wildcards and the attempt) or the plan's, whichever is longer."""

    def runtime(wildcards, attempt):
        own = first.evaluate(wildcards, attempt=attempt).value
        if not set(r.wildcard_names) <= set(dict(wildcards)):  # asked of the rule, not of one of its jobs
            return own
        cpu_s = _job_estimate(r, wildcards, table, cost_model)
        return max(own, cost_model.planned_minutes(cpu_s) * attempt)

    return runtime


def job_size_with_rows(mem_mb, runtime):
    """:func:`job_size` for the jobs that compute the exact statistics of every training row at once,
    at least the memory those rows' activations need (bnstudy.pipeline.plan.exact_statistics_mb; about
    14 GB for config/fashion-cluster.yaml, the digits' and tiny configs' stay at ``mem_mb``)."""
    return job_size(max(mem_mb, exact_statistics_mb(config)), runtime)


# A local build schedules its jobs within the machine's memory. Snakemake limits mem_mb only
# when it is given (`--resources mem_mb=N`, which still wins); without a limit it would start two
# jobs that each hold every training row's activations (about 14.5 GB each for
# config/fashion-cluster.yaml) side by side on a 24 GB machine. A job asking more than the limit runs
# alone. Cluster jobs are sized by the cluster.
if workflow.local_exec and workflow.is_main_process and "mem_mb" not in workflow.global_resources:
    _memory_mb = available_memory_mb()
    if _memory_mb:
        workflow.register_resource("mem_mb", _memory_mb)

SECONDS_JOB = dict(mem_mb=per_attempt(500), runtime=per_attempt(5))  # summaries, figures, macros, bookkeeping


def log_for(rule, wildcards=None):
    """A job's log: ``results/logs/<rule>.log``, or ``results/logs/<rule>/<wildcards>.log``."""
    return f"results/logs/{rule}/{wildcards}.log" if wildcards else f"results/logs/{rule}.log"


def bench_for(rule, wildcards=None):
    """A job's benchmark: ``results/benchmarks/<rule>.tsv``, or ``.../<rule>/<wildcards>.tsv``."""
    return f"results/benchmarks/{rule}/{wildcards}.tsv" if wildcards else f"results/benchmarks/{rule}.tsv"


# A job's log and benchmark are named by its rule and its wildcards, one part per wildcard, in this order.
JOB_NAME_PARTS = {"normaliser": "{normaliser}", "batch_size": "b{batch_size}", "block": "seeds{block}"}
NO_BENCHMARK = {"runtimes"}  # the build record: it reads the other jobs' benchmarks


def job_name(r):
    """The wildcards part of the log and benchmark names of rule ``r``'s jobs (None without
    wildcards): ``{normaliser}_b{batch_size}_seeds{block}``, each part where ``r`` has the wildcard."""
    unknown = sorted(set(r.wildcard_names) - set(JOB_NAME_PARTS))
    if unknown:
        _fail(f"no log name for the wildcard(s) {unknown} of the rule {r.name} (JOB_NAME_PARTS in common.smk)")
    return "_".join(part for w, part in JOB_NAME_PARTS.items() if w in r.wildcard_names) or None


_PLUMBED = set()


def plumb_rules():
    """Give every rule defined so far that runs a script what each of them has, so that no rules file
    repeats it: the environment ``CONDA_ENV``; the log ``log_for(<rule>, job_name(<rule>))`` unless
    the rule states its logs; the benchmark ``bench_for(...)`` (but those of ``NO_BENCHMARK``); its code
    inputs ``code(<its script>)``, named ``code``, after its other inputs (editing the script or a
    module it loads re-runs it); and :data:`SECONDS_JOB` unless its ``resources:`` state a
    :func:`job_size` (`--set-resources` still wins). Called where rules files have been included,
    before the registry, the plan or the linter read the rules; each rule once."""
    modifier = workflow.modifier.path_modifier
    set_by_user = workflow.resource_settings.overwrite_resources
    for place, r in enumerate(workflow.rules):
        if r.script is None or r.name in _PLUMBED:
            continue
        _PLUMBED.add(r.name)
        if r.conda_env is None:
            r.conda_env = CONDA_ENV
        r.log_modifier = r.log_modifier or modifier
        r.benchmark_modifier = r.benchmark_modifier or modifier
        r.input_modifier = r.input_modifier or modifier
        if not r.log:
            r.set_log(log_for(r.name, job_name(r)))
        if r.benchmark is not None:
            _fail(f"the benchmark of the rule {r.name} is bench_for({r.name!r}, ...), not stated in its rules file")
        if r.name not in NO_BENCHMARK:
            r.benchmark = bench_for(r.name, job_name(r))
        r.set_input(code=code(Path(r.script).name))
        if place not in _SIZED_RULES:
            mine = set(set_by_user.get(r.name, {}).keys())
            r.resources.update({k: v for k, v in SECONDS_JOB.items() if k not in mine})


# ---- output registry -------------------------------------------------------
# Each rules file registers the concrete outputs of its rules; manifest.smk puts
# them in DAG order (whatever the order the rules files are included in) and the
# manifest rule hashes them in that order.
REGISTRY = []
BENCHMARKS = []  # every job's benchmark file: runtimes for the build record
REGISTERED_JOBS = []  # (name, wildcards) of every registered job, by which manifest.smk orders REGISTRY
# Generated parts of the paper, by name (macros_<x>, table_<x>, figure_<x>): every registered
# output in results/paper/{macros,tables,figures}/; the paper rule copies them into the LaTeX build.
PAPER_INPUTS = {}
_PAPER_PART = re.compile(r"results/paper/(macros|tables|figures|parts)/(\w+)\.(tex|pdf)")
_PAPER_KEY = {"macros": "macros", "tables": "table", "figures": "figure", "parts": "part"}


def register(rule, wildcard_sets=({},)):
    """Record the outputs of ``rule`` for every wildcard set (its jobs; a rule without
    wildcards registers itself: :func:`register_the_rest`); return the paths."""
    paths = []
    for wc in wildcard_sets:
        REGISTERED_JOBS.append((rule.rule.name, dict(wc)))
        label = ",".join(f"{k}={v}" for k, v in wc.items())
        if rule.rule.script is not None and rule.rule.name not in NO_BENCHMARK:  # plumb_rules() names it so
            BENCHMARKS.append(apply_wildcards(bench_for(rule.rule.name, job_name(rule.rule)), wc))
        for pattern in rule.output:
            path = apply_wildcards(str(pattern), wc)
            REGISTRY.append((rule.rule.name, label, path))
            paths.append(path)
            part = _PAPER_PART.fullmatch(path)
            if part and (part[1] != "figures" or part[3] == "pdf"):
                PAPER_INPUTS[f"{_PAPER_KEY[part[1]]}_{part[2]}"] = path
    return paths


def register_the_rest():
    """Register every rule defined so far that writes files, has no wildcards and is not
    registered yet; with wildcards, its rules file names its jobs (``register(rules.x, cells)``)."""
    done = {name for name, _ in REGISTERED_JOBS}
    for r in list(workflow.rules):
        if r.output and not r.wildcard_names and r.name not in done:
            register(getattr(rules, r.name))


def _job_inputs(rule, wc):
    """The concrete input paths of one registered job (input functions called with its wildcards)."""
    paths = []
    for item in rule.input:
        if getattr(item, "is_callable", lambda: False)():  # an input function, kept in an _IOFile
            item = getattr(item._file, "callable", None) or item._file
        if callable(item):
            try:
                item = item(Wildcards(fromdict=wc))
            except Exception:  # an input function that needs more than the wildcards
                continue
        if isinstance(item, dict):  # unpack(...)
            item = list(item.values())
        for path in item if isinstance(item, (list, tuple)) else [item]:
            if isinstance(path, str):
                paths.append(apply_wildcards(str(path), wc))
    return paths


def _natural(label):
    """Wildcards ``batch_size=2`` before ``batch_size=16``."""
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", label)]


def dag_order(registry, jobs):
    """``registry`` sorted by each rule's depth in the graph of registered rules (0: reads no
    registered output; else one more than the deepest rule it reads), then rule name, then
    wildcards (numbers by value); a job's files keep their order. The same whatever order
    the rules files were included in."""
    producer = {path: name for name, _, path in registry}
    reads = {}
    for name, wc in jobs:
        found = {producer.get(p) for p in _job_inputs(getattr(rules, name).rule, wc)}
        reads.setdefault(name, set()).update(found - {None, name})
    depth = {}

    def rank(name):
        if name not in depth:
            depth[name] = 1 + max((rank(r) for r in reads.get(name, ())), default=-1)
        return depth[name]

    return sorted(registry, key=lambda e: (rank(e[0]), e[0], _natural(e[1])))


def net_params(normaliser):
    """The network's params: the shared ones, and the settings only this normaliser reads (from its own
    config section, e.g. ghost batch norm's virtual batch), so that changing them re-trains only it."""
    n = config["network"]
    if n.get("kind", "mlp") == "conv":  # the MLP's parameters stay as they were, without a kind
        shared = dict(normaliser=normaliser, kind="conv", layers=canonical(n["layers"]))
    else:
        shared = dict(normaliser=normaliser, hidden=n["hidden"])
    shared |= dict(groups=n["groups"], eps=n["eps"], momentum=n["momentum"])
    return shared | spec_settings(normaliser, config)


def recipe_params(block, batch_size, kind, order="shuffle"):
    """The training recipe's params (the learning rate and the epochs of ``block``'s ``lr_by_batch_size``
    and ``epochs_by_batch_size`` at a batch size they name); batch renormalisation's settings only for a
    normaliser that uses them, so that changing them re-trains only those networks."""
    rates = {int(row["batch_size"]): row["lr"] for row in block.get("lr_by_batch_size", [])}
    epochs = {int(row["batch_size"]): row["epochs"] for row in block.get("epochs_by_batch_size", [])}
    r = dict(
        optimizer=block["optimizer"],
        lr=rates.get(int(batch_size), block["lr"]),
        batch_size=int(batch_size),
        epochs=epochs.get(int(batch_size), block["epochs"]),
        order=order,
        sgd_momentum=block.get("sgd_momentum", 0.9),
        last_batch=block["last_batch"],
    )
    if block.get("lr_schedule", "constant") != "constant":  # without a decay the params stay as they were
        r["lr_schedule"] = block["lr_schedule"]
    if normaliser(kind).kernel == RENORM:
        r |= {f"renorm_{k}": v for k, v in sorted(config["batchrenorm"].items())}
    return r


def comp_probe_params(network):
    """Parameters of a companion probe job (study 1); the exact design's sample of companions, and the
    grid's share of the batches (``batches_used``), only where the config sets them (the parameters of
    every other config stay as they were)."""
    c = config["companions"]
    p = dict(
        network=network,
        seed=c["seed"],
        batch_sizes=c["batch_sizes"],
        batches_per_example=c["batches_per_example"],
        one_class_batch_size=c["one_class_batch_size"],
    )
    if network == "grid" and c.get("grid_batches_per_example") is not None:
        p["batches_used"] = c["grid_batches_per_example"]
    return p | exact_companions_param()


def exact_companions_param():
    """``{exact_companions: n}`` where the config samples the exact design's companions, else ``{}``."""
    n = config["companions"].get("exact_companions")
    return {} if n is None else {"exact_companions": n}


def grid_batches_param():
    """``{grid_batches_per_example: n}`` where the config probes the grid's networks with fewer batches, else ``{}``."""
    n = config["companions"].get("grid_batches_per_example")
    return {} if n is None else {"grid_batches_per_example": n}


def grid_cells():
    return [dict(normaliser=n, batch_size=b) for n in NORMALISERS for b in GRID_BATCH_SIZES]


def with_blocks(cells, blocks=None):
    """One job per cell and seed block (of ``blocks``: every seed block by default)."""
    return [c | dict(block=block) for c in cells for block in (SEED_BLOCKS if blocks is None else blocks)]


def with_follow_up_blocks(cells):
    """One job per cell and seed block of the follow-up studies (:data:`FOLLOW_UP_BLOCKS`)."""
    return with_blocks(cells, FOLLOW_UP_BLOCKS)


def block_seeds(wildcards):
    return SEED_BLOCKS[wildcards.block]


def expand_cells(pattern, cells):
    """``pattern`` for every cell (dicts of wildcards), in order."""
    return [apply_wildcards(str(pattern), c) for c in cells]


# ---- studies -----------------------------------------------------------------
# The studies this config runs (bnstudy.base.catalogue), in the paper's order: the Snakefile
# includes their rules files; their summary and figure rules are local rules.
STUDIES = catalogue.included(config)


# ---- side by side (workflow/rules/compare.smk, where the config sets `compare`) ------
def compare_own_macros(wildcards):
    """This build's macro files, but this rule's own and the build record's (which reads every output)."""
    return sorted(
        str(path)
        for key, path in PAPER_INPUTS.items()
        if key.startswith("macros_") and key not in ("macros_compare", "macros_provenance")
    )


def compare_their_macros():
    """The other builds' macro files, as their manifests list them (paths as the config gives the builds)."""
    from bnstudy.studies.compare.report import macro_paths

    return [
        os.path.join(build["directory"], path)
        for build in config["compare"]["builds"]
        for path in macro_paths(build["expected"])
    ]


def study_category(name, title):
    """The report's category of study ``name``: ``Study <k> - <title>``, k its place among the studies
    this config runs, in the catalogue's (the paper's) order."""
    included = [study.name for study in STUDIES]
    return f"Study {included.index(name) + 1} - {title}"
