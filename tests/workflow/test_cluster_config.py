"""Cluster settings have one source: the rules' threads and resources; the SLURM profile adds none.

Also: the hash manifest's rows come in an order that does not depend on the order in
which the Snakefile includes the rules files.
"""

import shutil

import pytest
import yaml

import dag_outputs
from conftest import ROOT

pytestmark = pytest.mark.slow  # the workflow's rules read in their own process

PROFILE = ROOT / "profiles" / "slurm" / "config.yaml"
# jobs of seconds: run where Snakemake runs, never queued
# Bookkeeping that takes seconds; besides these, every study's summary and figure rules
# (summarise_*, figure_*) are local, and nothing else.
LOCAL_BOOKKEEPING = {"all", "figures", "design_macros", "families", "provenance", "paper", "manifest", "runtimes"}


def should_be_local(name: str) -> bool:
    return name in LOCAL_BOOKKEEPING or name.startswith(("summarise_", "figure_"))


@pytest.fixture(scope="module")
def rules():
    """Each rule's threads, resources and locality, read from the test config's workflow
    (tests/dag_outputs.py: one process per session, with the DAG tests/workflow/test_registry.py checks)."""
    return dag_outputs.of(ROOT, "config/test.yaml")["cluster"]


def test_profile_sets_no_threads_or_resources_of_its_own():
    profile = yaml.safe_load(PROFILE.read_text())
    assert "set-resources" not in profile and "set-threads" not in profile
    assert not {"mem_mb", "runtime", "mem", "cpus_per_task"} & set(profile.get("default-resources") or {})
    assert profile["retries"] >= 1


def test_every_rule_states_memory_and_runtime_scaled_by_attempt(rules):
    for name, rule in rules.items():
        if not rule["has_output"]:
            continue
        first, second = rule["mem_mb"]
        assert second == 2 * first > 0, f"{name}: mem_mb must grow with the attempt, got {first}, {second}"
        first, second = rule["runtime"]
        assert second == 2 * first > 0, f"{name}: runtime must grow with the attempt, got {first}, {second}"


def test_short_jobs_are_local_rules(rules):
    assert {"summarise_batch_size", "figure_companions", "paper", "manifest"} <= set(rules)
    wrong = {name: rule["local"] for name, rule in rules.items() if rule["local"] != should_be_local(name)}
    assert not wrong, f"local rules should be exactly the summaries, figures and bookkeeping: {wrong}"


def test_training_asks_for_compute_threads_and_scripts_do_not_read_them(rules):
    for name in ("train_grid", "train_sorted", "train_dependence"):
        assert rules[name]["threads"] == yaml.safe_load((ROOT / "config/test.yaml").read_text())["compute_threads"]
    scripts = ROOT / "workflow" / "scripts"
    readers = [p.name for p in scripts.glob("*.py") if "compute_threads" in p.read_text() and p.name != "provenance.py"]
    assert not readers, f"scripts reading compute_threads from the config instead of snakemake.threads: {readers}"


def test_manifest_order_does_not_depend_on_include_order(tmp_path):
    from bnstudy.pipeline import workflowrun

    # before: the checkout's own DAG (its registry's paths are relative to the workflow, the same in
    # a copy); after: a copy's, its Snakefile including the studies' rules files in another order
    before = dag_outputs.of(ROOT, "config/test.yaml")
    copy = workflowrun.copy_workflow(ROOT, tmp_path / "wf")
    (copy / "tests").mkdir(exist_ok=True)
    shutil.copy2(ROOT / "tests" / "dag_outputs.py", copy / "tests" / "dag_outputs.py")
    snakefile = copy / "Snakefile"
    assert snakefile.read_text() == (ROOT / "Snakefile").read_text()
    # the studies come in bnstudy.base.catalogue's order: three of them (companions, batch_size,
    # running_stats) first and in reverse, the others after them in that order; accumulation.smk reads
    # studies 1 and 2's outputs by rule (rules.evaluate_remedies, rules.companion_examples, ...) and
    # curves.smk batch_size.smk's grid jobs, so they stay after them
    loop = "for study in STUDIES:\n"
    text = snakefile.read_text()
    assert text.count(loop) == 1
    first = ("companions", "batch_size", "running_stats")
    reordered = f"[*[s for s in STUDIES if s.name in {first}][::-1], *[s for s in STUDIES if s.name not in {first}]]"
    snakefile.write_text(text.replace(loop, f"for study in {reordered}:\n"))
    import yaml

    from bnstudy.base.catalogue import included

    studies = included(yaml.safe_load((ROOT / "config" / "test.yaml").read_text()))  # the Snakefile's STUDIES
    assert [s.name for s in studies if s.name in first] == list(first)
    after = dag_outputs.of(copy, "config/test.yaml")
    assert after["registry"] == before["registry"]

    # and the order is the DAG's: every file comes after the files its job reads
    row = {path: i for i, (_, _, path) in enumerate(before["registry"])}
    for job in before["jobs"]:
        mine = [row[p] for p in job["output"] if p in row]
        read = [row[p] for p in job["input"] if p in row]
        if mine and read:
            assert max(read) < min(mine), f"{job['rule']} is listed before a file it reads"
