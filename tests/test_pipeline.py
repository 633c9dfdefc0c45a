"""The workflow end to end on the test config: lint, paper, manifest, determinism."""

import subprocess

import pytest

from bnstudy import determinism, manifest
from conftest import ROOT, snakemake

pytestmark = pytest.mark.pipeline


def test_lint_has_no_findings():
    result = snakemake("--lint", timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Lints for" not in result.stdout + result.stderr, result.stdout + result.stderr


def test_test_config_builds_the_paper(runs):
    base, _, _ = runs
    pdf = base / "cores4" / "paper" / "main.pdf"
    assert pdf.read_bytes().startswith(b"%PDF")
    assert b"CreationDate (D:19700101" in pdf.read_bytes() or b"/CreationDate" not in pdf.read_bytes()


def test_manifest_has_a_row_for_every_rule_output_and_no_logs(runs):
    base, manifests, _ = runs
    table = manifest.read(manifests["cores4"])
    assert list(table.columns) == manifest.COLUMNS
    assert {"split", "train_grid", "train_dependence", "evaluate_grid", "paper"} <= set(table["rule"])
    assert not table["path"].str.contains(r"results/(?:logs|benchmarks)/").any()
    for row in table.itertuples():
        path = base / "cores4" / row.path
        assert path.stat().st_size == int(row.bytes)
        assert manifest.sha256(path) == row.sha256


@pytest.mark.parametrize("name", determinism.RUNS[1:])
def test_manifest_is_byte_identical_to_the_single_core_run(runs, name):
    _, manifests, _ = runs
    assert determinism.compare({"cores1": manifests["cores1"], name: manifests[name]}) == []
    assert manifests["cores1"].read_bytes() == manifests[name].read_bytes()


def test_rerun_after_completion_plans_nothing(runs):
    base, _, _ = runs
    result = snakemake("-n", "--configfile", "config/test.yaml", cwd=base / "cores4", timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Nothing to be done" in result.stdout + result.stderr
