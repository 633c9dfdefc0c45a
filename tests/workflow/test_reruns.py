"""Precise re-runs: an edit re-runs what depends on it and nothing else."""

import re
import shutil

import pytest
import yaml

from conftest import snakemake

pytestmark = pytest.mark.pipeline
BOOKKEEPING = {"provenance", "paper", "manifest", "runtimes", "all"}


@pytest.fixture
def finished(runs, tmp_path):
    """A private copy (mtimes kept) of a finished test-config run."""
    base, _, _ = runs
    target = tmp_path / "wf"
    shutil.copytree(base / "cores4", target, symlinks=True)
    return target


def weights_writers(workdir) -> set[str]:
    """The rules whose outputs lie under ``results/runs/`` (the weights files this module checks)."""
    writers = set()
    for rules_file in (workdir / "workflow" / "rules").glob("*.smk"):
        for block in re.split(r"^rule ", rules_file.read_text(), flags=re.M)[1:]:
            name = block.split(":", 1)[0].strip()
            output = re.search(r"^    output:\n(.*?)^    \w", block, re.M | re.S)
            if output and "results/runs/" in output.group(1):
                writers.add(name)
    return writers


def test_the_weights_writers_are_found():
    from conftest import ROOT

    assert {"train_grid", "train_dependence", "train_keep", "train_accumulation"} <= weights_writers(ROOT)
    assert not {"probe_companions_grid", "summarise_companions"} & weights_writers(ROOT)


def planned(workdir, *args) -> dict[str, int]:
    result = snakemake("-n", "--configfile", "config/test.yaml", *args, cwd=workdir, timeout=180)
    assert result.returncode == 0, result.stderr
    text = result.stdout + result.stderr
    if "Nothing to be done" in text:
        return {}
    table = text.split("Job stats:")[1].split("total")[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", table, re.M)}


def test_changing_nothing_reruns_nothing(finished):
    assert planned(finished) == {}


def test_editing_one_figure_script_reruns_that_figure_and_the_paper_only(finished):
    script = finished / "workflow" / "scripts" / "figure_batch_size.py"
    script.write_text(script.read_text() + "\n# a cosmetic edit\n")
    plan = planned(finished)
    assert plan.get("figure_batch_size") == 1 and "paper" in plan, plan
    assert set(plan) - {"figure_batch_size"} <= BOOKKEEPING, plan


def test_editing_a_package_module_reruns_the_rules_that_import_it(finished):
    module = finished / "src" / "bnstudy" / "paper" / "figures.py"
    module.write_text(module.read_text() + "\n# a cosmetic edit\n")
    plan = planned(finished)
    assert plan.get("figure_batch_size") == 1, plan
    assert not {"split", "train_grid", "train_dependence", "evaluate_remedies"} & set(plan), plan


def test_editing_the_probes_module_reruns_the_probes_and_nothing_upstream(finished):
    """probes is loaded by companions only: editing it re-runs the probes and what follows them."""
    module = finished / "src" / "bnstudy" / "compiled" / "probes.py"
    module.write_text(module.read_text() + "\n# a cosmetic edit\n")
    plan = planned(finished)
    assert plan.get("probe_companions_grid") and plan.get("probe_companions_dependence") == 1, plan
    # provenance hashes every output, so it follows the probes; nothing upstream runs
    assert not {"split", "train_grid", "evaluate_remedies", "running_stats"} & set(plan), plan


def test_changing_a_training_hyperparameter_reruns_that_training_and_its_dependents(finished):
    cfg = yaml.safe_load((finished / "config" / "test.yaml").read_text())
    cfg["grid"]["epochs"] += 1
    (finished / "config" / "test.yaml").write_text(yaml.safe_dump(cfg))
    plan = planned(finished)
    blocks = {s // cfg["grid"]["seed_block"] for s in cfg["grid"]["seeds"]}
    cells = len(cfg["normalisers"]) * len(cfg["grid"]["batch_sizes"]) * len(blocks)
    assert plan.get("train_grid") == cells, plan
    assert plan.get("probe_companions_grid") == len(cfg["normalisers"]) * len(blocks), plan
    assert not {"split", "train_dependence"} & set(plan), plan


def test_changing_batch_renorm_settings_retrains_only_batch_renorm(finished):
    cfg = yaml.safe_load((finished / "config" / "test.yaml").read_text())
    assert "batchrenorm" in cfg["normalisers"], "the test config must train batch renorm for this test"
    cfg["batchrenorm"]["rmax"] = cfg["batchrenorm"]["rmax"] + 1.0
    (finished / "config" / "test.yaml").write_text(yaml.safe_dump(cfg))
    plan = planned(finished)
    blocks = {s // cfg["grid"]["seed_block"] for s in cfg["grid"]["seeds"]}
    assert plan.get("train_grid") == len(cfg["grid"]["batch_sizes"]) * len(blocks), plan
    assert not {"split", "train_dependence", "train_keep", "train_dependence_keep"} & set(plan), plan


def test_adding_a_seed_trains_only_its_block_and_rewrites_no_weights(finished):
    """A seed in a new block: one new training job per cell; the existing weights files keep their bytes and mtime."""
    cfg = yaml.safe_load((finished / "config" / "test.yaml").read_text())
    block = cfg["grid"]["seed_block"]
    new = (max(cfg["grid"]["seeds"]) // block + 1) * block  # the first seed of the next block
    cfg["grid"]["seeds"] = [*cfg["grid"]["seeds"], new]
    (finished / "config" / "test.yaml").write_text(yaml.safe_dump(cfg))
    cells = len(cfg["normalisers"]) * len(cfg["grid"]["batch_sizes"])
    plan = planned(finished)
    assert plan.get("train_grid") == cells and plan.get("probe_companions_grid") == len(cfg["normalisers"]), plan
    assert not {"split", "train_dependence", "running_stats", "population"} & set(plan), plan
    # running the plan up to the rules that write weights (not the summaries, figures and paper that
    # follow, about 40 CPU s) shows what the whole run would do to the weights files; of those, the
    # ones trained in seed blocks train the new block, nothing else
    writers = sorted(rule for rule in plan if rule in weights_writers(finished))
    assert "train_grid" in writers and not {"train_dependence", "train_dependence_keep"} & set(writers), plan
    runs = sorted((finished / "results" / "runs").rglob("*.safetensors"))
    assert runs, "no weights files in the finished run"
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in runs}
    result = snakemake(
        "--cores", "2", "--configfile", "config/test.yaml", "--until", *writers, cwd=finished, timeout=900
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in runs} == before
    added = sorted((finished / "results" / "runs" / "grid").rglob(f"seeds{new}-{new + block - 1}.safetensors"))
    assert len(added) == cells, added
