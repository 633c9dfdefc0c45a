"""The Fashion-MNIST parts of the combined paper (`make fashion`, docs/fashion.md): what each part's
config holds, the combined config as the paper config plus its side by side, and the committed
manifests that the combined build checks the parts against."""

from __future__ import annotations

import pytest
import yaml

from bnstudy.base.config import parts
from bnstudy.pipeline import manifest
from conftest import ROOT

CONFIG = ROOT / "config"


def load(name: str) -> dict:
    return yaml.safe_load((CONFIG / name).read_text())


def test_the_combined_config_is_the_paper_config_with_a_side_by_side_of_both_parts():
    combined, paper = load("combined.yaml"), load("config.yaml")
    compare = combined.pop("compare")
    assert combined == paper
    assert compare["append_papers"] is True
    assert [(b["directory"], b["expected"]) for b in compare["builds"]] == [
        (f"builds/{p}", f"config/expected/{p}.manifest.tsv") for p in ("fashion-mlp", "fashion-cnn")
    ]


def test_the_mlp_part_trains_the_published_network_on_every_training_image_but_the_validation_split():
    c = load("fashion-mlp.yaml")
    assert c["data"]["name"] == "fashion_mnist" and c["data"]["train_size"] + c["data"]["validation_size"] == 60000
    assert c["network"]["hidden"] == [128, 128] and c["network"].get("kind", "mlp") == "mlp"
    assert {"none", "batchnorm", "batchrenorm", "layernorm", "groupnorm"} <= set(c["normalisers"])
    assert c["grid"]["batch_sizes"] == [2, 8, 32, 128] and len(c["grid"]["seeds"]) >= 3
    assert parts(c).test_rows == 10000


def test_the_cnn_part_has_batch_norm_2d_a_residual_connection_and_three_batch_sizes_from_two():
    c = load("fashion-cnn.yaml")
    assert c["network"]["kind"] == "conv" and any("skip" in layer for layer in c["network"]["layers"])
    assert {"none", "batchnorm", "groupnorm"} <= set(c["normalisers"])
    sizes = c["grid"]["batch_sizes"]
    assert len(sizes) >= 3 and min(sizes) == 2 and len(c["grid"]["seeds"]) >= 3
    assert parts(c).test_rows == 10000


def test_each_part_runs_every_companion_design_and_the_training_curves():
    for name in ("fashion-mlp.yaml", "fashion-cnn.yaml"):
        c = load(name)
        assert c["companions"]["batch_sizes"] == [2, 4, 16, 64] and c["companions"]["exact_companions"] > 0
        assert c["dependence"]["normaliser"] == "batchnorm"
        assert c["curves"]["last_epochs"] == 3 and c["curves"]["threshold"] == 0.003
        assert c["grid"]["epochs"] > c["curves"]["last_epochs"]


def test_each_part_has_a_committed_manifest_with_its_curves_and_its_paper():
    for name in ("fashion-mlp", "fashion-cnn", "combined"):
        table = manifest.read(CONFIG / "expected" / f"{name}.manifest.tsv")
        paths = set(table["path"])
        assert "paper/main.pdf" in paths
        if name != "combined":
            assert {"results/summary/curves.json", "results/paper/figures/curves.pdf"} <= paths
        else:
            assert {"results/paper/parts/part1.pdf", "results/paper/parts/part2.pdf"} <= paths


@pytest.mark.slow  # Snakemake builds the part's DAG (a few seconds)
def test_the_mlp_parts_jobs_train_each_batch_size_for_its_epochs_at_its_rate():
    """``grid.epochs_by_batch_size`` and ``lr_by_batch_size`` reach every job that trains with the grid's
    recipe (the grid, the kept-rows repeat, accumulation and its summary's text) and no other (the
    learning-rate sweep keeps its own epochs)."""
    from bnstudy.pipeline import plan

    config, jobs, _ = plan.dag_jobs(CONFIG / "fashion-mlp.yaml", ROOT / "Snakefile", ROOT, forceall=True)
    grid = config["grid"]
    epochs = {int(r["batch_size"]): r["epochs"] for r in grid["epochs_by_batch_size"]}
    rates = {int(r["batch_size"]): r["lr"] for r in grid["lr_by_batch_size"]}
    assert epochs == {2: 8} and grid["epochs"] == 20
    seen = set()
    for job in jobs:
        recipe = job.params.get("recipe")
        if job.rule in ("train_grid", "train_keep", "train_accumulation"):
            b = recipe["batch_size"]
            assert (recipe["epochs"], recipe["lr"]) == (epochs.get(b, 20), rates.get(b, grid["lr"])), job
            seen.add((job.rule, b))
        elif job.rule == "train_lr_sweep":
            assert recipe["epochs"] == config["lr_sweep"]["epochs"]
            seen.add((job.rule, recipe["batch_size"]))
        elif job.rule == "summarise_accumulation":
            assert (job.params["epochs"], job.params["lr"]) == (20, rates[128])
    assert {("train_grid", b) for b in (2, 8, 32, 128)} | {("train_accumulation", 128)} <= seen
    assert ("train_lr_sweep", 2) in seen


@pytest.mark.slow
def test_the_longest_jobs_start_first_their_priority_is_their_estimated_cpu_time():
    """Each job's scheduling priority is its estimated CPU seconds (workflow/rules/common.smk's
    plan_priorities), so of the jobs ready at a time the longest starts first: in the MLP part a grid
    cell at batch 2 outranks one at batch 128, and no job outranks one estimated to run longer."""
    from bnstudy.pipeline import plan

    config, jobs, _ = plan.dag_jobs(CONFIG / "fashion-mlp.yaml", ROOT / "Snakefile", ROOT, forceall=True)
    table = plan.read_table()
    running = [job for job in jobs if job.runs]
    for job in running:
        assert job.priority == round(plan.estimate(job.rule, job.params, job.wildcards, config, table)), job
    grid = {int(job.wildcards["batch_size"]): job.priority for job in running if job.rule == "train_grid"}
    assert grid[2] > grid[8] > grid[128] > 0
    ordered = sorted(running, key=lambda job: job.priority)
    estimates = [plan.estimate(job.rule, job.params, job.wildcards, config, table) for job in ordered]
    assert all(a <= b + 0.5 for a, b in zip(estimates, estimates[1:]))
