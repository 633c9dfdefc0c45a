"""The workflow end to end on the test config: lint, paper, manifest, determinism, portability."""

import pandas as pd
import pytest

from bnstudy.pipeline import determinism, machines, manifest
from conftest import ROOT, snakemake

EXPECTED = ROOT / "config" / "expected" / "test.manifest.tsv"

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
    assert {"split", "train_grid", "train_dependence", "evaluate_remedies", "paper"} <= set(table["rule"])
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


def test_every_job_of_the_runs_ran_in_a_fork_of_the_job_server(runs):
    """The runs are local builds: each job's script ran in a fork of the job server (its log ends with the
    fork's usage), so the manifests these runs reproduce were computed through it (the committed ones were
    computed by jobs in processes of their own, as on a cluster: tests/workflow/test_slurm.py)."""
    from bnstudy.pipeline.jobserver import usage_in_log

    base, _, _ = runs
    for name in determinism.RUNS:
        logs = sorted((base / name / "results" / "logs").rglob("*.log"))
        assert len(logs) > 60
        alone = [str(p.relative_to(base / name)) for p in logs if usage_in_log(p) is None]
        assert alone == [], (name, alone)


def test_test_config_gives_the_expected_manifest(runs):
    """The same bytes as config/expected/test.manifest.tsv, on any machine; fails naming the first rule."""
    _, manifests, _ = runs
    identical, lines = manifest.verify(EXPECTED, manifests["cores1"].parent)
    assert identical, "\n".join(lines) + (
        "\n(a deliberate change of the science: refresh it with "
        "python -m bnstudy.pipeline.determinism --update-expected, "
        "or after a test-config build python -m bnstudy.pipeline.manifest expected --results results "
        f"--out {EXPECTED.relative_to(ROOT)}, and review the diff)"
    )


def test_each_run_recorded_its_simulated_machine_outside_the_manifest(runs):
    """The build record (results/provenance/machine.csv) names each run's kernels; no hashed file does."""
    base, manifests, _ = runs
    envs = machines.environments()
    for name, env_name in determinism.RUN_ENVIRONMENTS.items():
        record = base / name / "results" / "provenance" / "machine.csv"
        machine = dict(pd.read_csv(record, dtype=str, keep_default_na=False).values)
        variables = machine["kernel-selection variables"]
        assert all(f"{k}={v}" in variables for k, v in envs[env_name].items()), (name, variables)
        assert "results/provenance/machine.csv" not in set(manifest.read(manifests[name])["path"])
    generic = dict(
        pd.read_csv(
            base / "killed-resumed" / "results" / "provenance" / "machine.csv", dtype=str, keep_default_na=False
        ).values
    )
    # PyTorch's kernels are not asked in a job (no job computes with it; tests/pipeline/test_portability.py
    # checks that it, too, selects the simulated machine's)
    assert generic["torch CPU kernels"].startswith("not asked") and generic["Numba target"].startswith("generic")
    macros = (base / "cores1" / "results" / "paper" / "macros" / "provenance.tex").read_text()
    assert "cpuModel" not in macros and "CpuKernels" not in macros and "ingerprint" not in macros


def test_rerun_after_completion_plans_nothing(runs):
    base, _, _ = runs
    result = snakemake("-n", "--configfile", "config/test.yaml", cwd=base / "cores4", timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Nothing to be done" in result.stdout + result.stderr


def test_lr_sweep_runs_on_the_test_config_and_is_hashed(runs, test_config):
    """The learning-rate sweep's rules run, their outputs are in the manifest, and its summary
    chooses one swept rate per normaliser and grid batch size."""
    import json

    base, manifests, _ = runs
    table = manifest.read(manifests["cores1"])
    assert {"lr_sweep_split", "train_lr_sweep", "summarise_lr_sweep", "figure_lr_sweep"} <= set(table["rule"])
    assert "results/summary/lr_sweep.json" in set(table["path"])
    summary = json.loads((base / "cores1" / "results" / "summary" / "lr_sweep.json").read_text())
    sweep = test_config["lr_sweep"]
    for norm in sweep["normalisers"]:
        cells = summary["best"][norm]
        assert sorted(map(int, cells)) == sorted(test_config["grid"]["batch_sizes"])
        networks = len(sweep["seeds"]) * sweep.get("folds", 1)  # with folds, every seed once per fold
        assert all(cell["lr"] in sweep["lrs"] and cell["seeds"] == networks for cell in cells.values())
    if "folds" in sweep:  # the test config exercises the folds: each cell's stability is reported
        assert summary["folds"] == sweep["folds"]
        assert all(0 <= c["agree"] <= sweep["folds"] for n in summary["stability"].values() for c in n.values())


def test_accumulation_runs_on_the_test_config_and_is_hashed(runs, test_config):
    """The accumulation study's rules run, their outputs are in the manifest, and its summary holds
    every configuration for every micro-batch over the grid's seeds."""
    import json

    base, manifests, _ = runs
    table = manifest.read(manifests["cores1"])
    assert {"train_accumulation", "summarise_accumulation", "figure_accumulation"} <= set(table["rule"])
    assert "results/summary/accumulation.json" in set(table["path"])
    summary = json.loads((base / "cores1" / "results" / "summary" / "accumulation.json").read_text())
    acc = test_config["accumulation"]
    assert summary["micro_batches"] == sorted(acc["micro_batches"]) and summary["batch_size"] == acc["batch_size"]
    for m in acc["micro_batches"]:
        cells = summary["accuracy"][str(m)]
        assert set(cells) == {"large", "accumulate", "ghost", "small", "scaled"}
        assert all(c[mode]["seeds"] == len(test_config["grid"]["seeds"]) for c in cells.values() for mode in c)
        assert summary["accumulate_vs_ghost"][str(m)]["first_running"] == 0.0
