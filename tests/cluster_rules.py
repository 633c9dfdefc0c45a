"""Every rule's threads, resources (mem_mb at attempts 1 and 2, runtime) and locality, as JSON.

Run as a script (``python tests/cluster_rules.py config/test.yaml``), like
``tests/dag_outputs.py``, so that Snakemake's global state stays out of the test process.
"""

import json
import sys
from pathlib import Path

from snakemake.api import SnakemakeApi
from snakemake.iocontainers import Wildcards
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

ROOT = Path(__file__).resolve().parents[1]


def _value(resource, attempt):
    if hasattr(resource, "is_evaluable"):  # snakemake.resources.Resource
        if resource.is_evaluable():
            resource = resource.evaluate(Wildcards(), attempt=attempt, input=[], threads=1)
        resource = resource.value
    return resource(Wildcards(), attempt) if callable(resource) else resource


def rules(configfile: str) -> dict:
    with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
        workflow = api.workflow(
            snakefile=ROOT / "Snakefile",
            workdir=ROOT,
            resource_settings=ResourceSettings(cores=1),
            config_settings=ConfigSettings(configfiles=[ROOT / configfile]),
        )._workflow
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


if __name__ == "__main__":
    json.dump(rules(sys.argv[1]), sys.stdout)
