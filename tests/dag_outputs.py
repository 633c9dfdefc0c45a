"""Every job of the workflow's DAG as JSON (rule, outputs, logs, benchmark, inputs), every
rule's output patterns, threads, resources (mem_mb at attempts 1 and 2, runtime) and
locality, and the output registry the manifest rule hashes.

Run as a script (``python tests/dag_outputs.py config/test.yaml``) so that
Snakemake's global state (working directory, logging) stays out of the test
process. Builds the DAG of the default target with ``forceall`` through
Snakemake's Python API, the DAG ``snakemake -n --forceall`` plans; nothing runs.
Tests call :func:`of`, which runs the script once per workflow and config in a
test session (tests/workflow/test_registry.py and tests/workflow/test_cluster_config.py read the
same DAG of the test config: one process builds it for both).
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _value(resource, attempt):
    from snakemake.iocontainers import Wildcards

    if hasattr(resource, "is_evaluable"):  # snakemake.resources.Resource
        if resource.is_evaluable():
            resource = resource.evaluate(Wildcards(), attempt=attempt, input=[], threads=1)
        resource = resource.value
    return resource(Wildcards(), attempt) if callable(resource) else resource


def cluster_settings(workflow) -> dict:
    """Each rule's threads, mem_mb at attempts 1 and 2, runtime at attempts 1 and 2, locality."""
    out = {}
    for rule in workflow.rules:
        res = rule.resources
        out[rule.name] = {
            "threads": _value(res.get("_cores"), 1),
            "mem_mb": [_value(res.get("mem_mb"), a) for a in (1, 2)] if "mem_mb" in res else None,
            "runtime": [_value(res.get("runtime"), a) for a in (1, 2)] if "runtime" in res else None,
            "local": rule.name in workflow._localrules,
            "has_output": bool(rule.output),
        }
    return out


def dag_jobs(configfile: str) -> dict:
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import (
        ConfigSettings,
        DAGSettings,
        OutputSettings,
        ResourceSettings,
    )

    with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
        workflow_api = api.workflow(
            snakefile=ROOT / "Snakefile",
            workdir=ROOT,
            resource_settings=ResourceSettings(cores=1),
            config_settings=ConfigSettings(configfiles=[ROOT / configfile]),
        )
        dag_api = workflow_api.dag(DAGSettings(forceall=True))
        workflow = dag_api.workflow_api._workflow
        workflow._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True, nolock=True)
        workflow._build_dag()
        manifest = [job for job in workflow.dag.jobs if job.rule.name == "manifest"]
        jobs = [
            {
                "rule": job.rule.name,
                "output": [str(f) for f in job.output],
                "log": [str(f) for f in job.log],
                "benchmark": str(job.benchmark) if job.benchmark else None,
                "input": [str(f) for f in job.input],
            }
            for job in workflow.dag.jobs
        ]
        return {
            "jobs": jobs,
            "rules": {rule.name: [str(pattern) for pattern in rule.output] for rule in workflow.rules},
            "cluster": cluster_settings(workflow),
            # what the manifest rule hashes: (rule, wildcards, path) per registered output
            "registry": [list(entry) for entry in manifest[0].params.entries] if manifest else None,
        }


_RUN = {}  # (workflow root, config file) -> the script's output


def of(root: Path, configfile: str) -> dict:
    """The script's JSON for the workflow at ``root`` (whose ``tests/dag_outputs.py`` runs), built
    once per test session; each call returns a fresh copy."""
    key = (str(root), configfile)
    if key not in _RUN:
        result = subprocess.run(
            [sys.executable, str(Path(root) / "tests" / "dag_outputs.py"), configfile],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        _RUN[key] = result.stdout
    return json.loads(_RUN[key])


if __name__ == "__main__":
    json.dump(dag_jobs(sys.argv[1]), sys.stdout)
