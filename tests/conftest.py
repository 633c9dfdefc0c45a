import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def snakemake(*args, cwd=ROOT, timeout=None, check=False):
    """Run Snakemake with this interpreter; return the CompletedProcess."""
    return subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, check=check)


@pytest.fixture
def test_config():
    with open(ROOT / "config" / "test.yaml") as f:
        return yaml.safe_load(f)


@pytest.fixture(scope="session")
def configured():
    from bnstudy import runtime

    runtime.configure(1)
