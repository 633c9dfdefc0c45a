"""Reading the workflow, which every Snakemake start does, imports what checks a config and no more."""

import re
import subprocess
import sys

import pytest

from conftest import ROOT

# what the studies compute with: about 0.3 CPU s of imports (Numba's alone) that each of a build's and
# the suite's Snakemake starts would pay before its first job (pandas is not here: Snakemake imports it)
COMPUTATION = ("numba", "scipy", "torch", "matplotlib")
CONFIGS = ("config/test.yaml", "config/config.yaml", "config/fashion-tiny.yaml")  # combined.yaml needs its builds


@pytest.mark.slow  # a process of its own: a fresh interpreter's modules
def test_checking_a_config_as_the_workflow_does_imports_none_of_the_computation():
    common = (ROOT / "workflow" / "rules" / "common.smk").read_text()
    imports = [line for line in common.splitlines() if re.match(r"(from|import) bnstudy\b", line)]
    assert len(imports) >= 5, imports
    code = "\n".join(
        [
            "import sys",
            f"sys.path.insert(0, {str(ROOT / 'src')!r})",
            *imports,
            "from bnstudy.base import config",
            "schema = config.load_schema('workflow/schemas/config.schema.yaml')",
            f"for path in {CONFIGS!r}:",
            "    config.validate(config.load_file(path), schema)",
            f"print(' '.join(m for m in {COMPUTATION!r} if m in sys.modules))",
        ]
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [], f"imported while checking the configs: {out.stdout.strip()}"
