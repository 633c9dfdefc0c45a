"""Every job of the workflow's DAG as JSON (rule, outputs, logs, benchmark, inputs), every
rule's output patterns, and the output registry the manifest rule hashes.

Run as a script (``python tests/dag_outputs.py config/test.yaml``) so that
Snakemake's global state (working directory, logging) stays out of the test
process. Builds the DAG of the default target with ``forceall`` through
Snakemake's Python API, the DAG ``snakemake -n --forceall`` plans; nothing runs.
"""

import json
import sys
from pathlib import Path

from snakemake.api import SnakemakeApi
from snakemake.settings.types import (
    ConfigSettings,
    DAGSettings,
    OutputSettings,
    ResourceSettings,
)

ROOT = Path(__file__).resolve().parents[1]


def dag_jobs(configfile: str) -> dict:
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
            # what the manifest rule hashes: (rule, wildcards, path) per registered output
            "registry": [list(entry) for entry in manifest[0].params.entries] if manifest else None,
        }


if __name__ == "__main__":
    json.dump(dag_jobs(sys.argv[1]), sys.stdout)
