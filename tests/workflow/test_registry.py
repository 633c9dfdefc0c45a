"""Registry completeness: every output of every job is hashed into results/manifest.tsv.

The DAG comes from Snakemake itself (``tests/dag_outputs.py``: the API's DAG of
the default target, as ``snakemake -n --forceall`` plans it), the registry from
the manifest job's parameters (``REGISTRY`` in ``workflow/rules/common.smk``, the
list the manifest rule hashes). A new rule whose outputs are not registered, or
that no target reaches, fails here.
"""

import pytest

import dag_outputs
from conftest import ROOT

pytestmark = pytest.mark.slow  # Snakemake's DAG in its own process

# Outputs deliberately not hashed (logs and benchmark files are not outputs and
# are never hashed either):
NOT_HASHED = {
    # the manifest cannot hash itself
    "results/manifest.tsv",
    # build record: wall-clock run times of this build's jobs, different on every run
    # (machine.csv, the other half of the build record, is a log of the provenance rule)
    "results/provenance/runtimes.csv",
}


@pytest.fixture(scope="module", params=["config/test.yaml", "config/config.yaml"])
def dag(request):
    return dag_outputs.of(ROOT, request.param)


def test_every_output_of_every_job_is_registered_for_hashing(dag):
    registered = {path for _, _, path in dag["registry"]}
    missing = [
        (job["rule"], path)
        for job in dag["jobs"]
        for path in job["output"]
        if path not in registered and path not in NOT_HASHED
    ]
    assert not missing, f"outputs not in the manifest's registry (call register() for the rule): {missing}"


def test_registry_names_the_rule_that_writes_each_path(dag):
    writer = {path: job["rule"] for job in dag["jobs"] for path in job["output"]}
    registry = dag["registry"]
    assert len({path for _, _, path in registry}) == len(registry), "a path registered twice"
    wrong = [(rule, path, writer.get(path)) for rule, _, path in registry if writer.get(path) != rule]
    assert not wrong, f"registered under another rule, or no job writes it: {wrong}"


def test_no_log_benchmark_or_excluded_file_is_hashed(dag):
    unstable = {path for job in dag["jobs"] for path in job["log"]}
    unstable |= {job["benchmark"] for job in dag["jobs"] if job["benchmark"]}
    unstable |= NOT_HASHED
    hashed = {path for _, _, path in dag["registry"]}
    assert not hashed & unstable
    assert not [path for path in hashed if path.startswith(("results/logs/", "results/benchmarks/"))]


def test_every_rule_has_a_job_in_the_dag(dag):
    """A rule that no target reaches would escape the checks above (rules without
    outputs, such as ``all`` and ``figures``, only gather targets)."""
    planned = {job["rule"] for job in dag["jobs"]}
    writers = {rule for rule, outputs in dag["rules"].items() if outputs}
    assert writers - planned == set()
    assert {"all", "figures"} <= set(dag["rules"]) and "manifest" in writers


def test_the_exclusions_are_outputs_of_the_dag(dag):
    """Each exclusion still names a real output (a renamed file must not leave a stale exemption)."""
    outputs = {path for job in dag["jobs"] for path in job["output"]}
    assert NOT_HASHED <= outputs


def test_no_figure_job_has_a_compiled_module_among_its_inputs(dag):
    """Snakemake's DAG itself: editing a kernel module (an input of the jobs that compute with
    it) leaves every figure job's own inputs unchanged (tests/pipeline/test_code_inputs.py: why)."""
    from test_code_inputs import compiled_modules

    compiled = {f"src/bnstudy/{m.replace('.', '/')}.py" for m in compiled_modules()}
    figures = [job for job in dag["jobs"] if job["rule"].startswith("figure_")]
    assert len({job["rule"] for job in figures}) >= 8
    loaded = {job["rule"]: sorted(compiled & set(job["input"])) for job in figures}
    assert not any(loaded.values()), loaded
    kernel_jobs = {job["rule"] for job in dag["jobs"] if "src/bnstudy/compiled/kernels.py" in job["input"]}
    assert {"train_grid", "probe_companions_grid", "evaluate_remedies"} <= kernel_jobs
