"""bnstudy.pipeline.plan: the planned jobs, the cost model's arithmetic, and the budget's refusal."""

import math
import re
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from bnstudy.pipeline import plan
from bnstudy.pipeline.plan import Cost, Job, Plan
from conftest import ROOT, snakemake

PAPER = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


# ---- CPU time from a benchmark file ---------------------------------------------------


def test_job_cpu_scales_by_wall_time_over_the_last_sample():
    # short jobs: sampled every 0.5 s, the last sample at 4.0 s of 4.45 s
    assert plan.job_cpu(4.45, 1.0) == pytest.approx(4.45 / 4.0)
    assert plan.job_cpu(4.0, 1.0) == pytest.approx(1.0)
    # after 15 s, every 30 s: last samples at 15 s, then 45 s
    assert plan.job_cpu(25.0, 3.0) == pytest.approx(3.0 * 25 / 15)
    assert plan.job_cpu(44.9, 3.0) == pytest.approx(3.0 * 44.9 / 15)
    assert plan.job_cpu(50.0, 9.0) == pytest.approx(9.0 * 50 / 45)
    # no sample but the first: the file's figure as it is
    assert plan.job_cpu(0.3, 0.2) == pytest.approx(0.2)


# ---- work per job ------------------------------------------------------------------------


def test_epoch_steps_counts_steps_and_rows():
    assert plan.epoch_steps(898, 2) == pytest.approx(449 + 898 / 25)
    assert plan.epoch_steps(898, 64) == pytest.approx(14 + 898 / 25)  # 898 = 14 x 64 + 2 dropped
    assert plan.epoch_steps(898, 64, "keep") == pytest.approx(15 + 898 / 25)  # the 2 leftover rows kept
    assert plan.epoch_steps(897, 64, "keep") == pytest.approx(14 + 897 / 25)  # 1 leftover row: dropped


FASHION_TINY = yaml.safe_load((ROOT / "config" / "fashion-tiny.yaml").read_text())
MLP_MMAC = (64 * 128 + 128 * 128 + 128 * 10) / 1e6  # the paper config's MLP 64-128-128-10


def test_row_multiply_adds_count_each_layer_of_either_network():
    assert plan.row_multiply_adds(PAPER) == pytest.approx(MLP_MMAC)
    # 28x28 -> 14x14 (8 channels of 1) -> 7x7 (16 of 8) -> 7x7 (16 of 16), 3x3 kernels, then 16 -> 10
    conv = 14 * 14 * 8 * 1 * 9 + 7 * 7 * 16 * 8 * 9 + 7 * 7 * 16 * 16 * 9 + 16 * 10
    assert plan.row_multiply_adds(FASHION_TINY) == pytest.approx(conv / 1e6)
    wider = yaml.safe_load(yaml.safe_dump(FASHION_TINY))
    wider["network"]["layers"] = [{"channels": 16, "stride": 1}, {"channels": 32, "stride": 2}]
    assert plan.row_multiply_adds(wider) == pytest.approx((28 * 28 * 16 * 9 + 14 * 14 * 32 * 16 * 9 + 320) / 1e6)


def test_training_work_is_seeds_times_epochs_times_step_equivalents_times_the_network():
    params = {"seeds": [0, 1, 2, 3, 4], "recipe": {"epochs": 20, "batch_size": 2, "last_batch": "drop"}}
    assert PAPER["split"]["test_size"] == 899  # 898 training rows
    work = plan.work_of("train_grid", params, {}, PAPER)
    assert work == pytest.approx(5 * 20 * (449 + 898 / 25) * MLP_MMAC)
    params["recipe"]["epochs"] = 10**12
    assert plan.work_of("train_grid", params, {}, PAPER) == pytest.approx(5e12 * (449 + 898 / 25) * MLP_MMAC)
    assert plan.cost_key("train_grid", params, {}, PAPER) == "train_grid:mlp"
    # the convolutional network: a row costs as much as 4 steps (ROWS_PER_STEP_BY_FAMILY), the tiny config's rows
    params["recipe"] |= {"epochs": 1, "batch_size": 16}
    rows = FASHION_TINY["data"]["train_size"]
    expected = 5 * (rows // 16 + rows / 0.25) * plan.row_multiply_adds(FASHION_TINY)
    assert plan.work_of("train_grid", params, {}, FASHION_TINY) == pytest.approx(expected)
    assert plan.cost_key("train_grid", params, {}, FASHION_TINY) == "train_grid:conv"


def test_companion_probe_work_counts_probe_rows():
    params = {"batch_sizes": [2, 4, 16, 64], "batches_per_example": 200, "one_class_batch_size": 16}
    # one example: 200 batches of each size, every pair (898 companions), 3 x 200 one-class of 16
    per_example = 200 * (2 + 4 + 16 + 64) + 2 * 898 + 3 * 200 * 16
    examples = 10 * PAPER["companions"]["examples_per_class"]
    grid = plan.work_of("probe_companions_grid", params, {"block": "0-4"}, PAPER)
    assert grid == pytest.approx(5 * 6 * examples * per_example * MLP_MMAC)  # 5 seeds x 6 batch sizes
    dependence = plan.work_of("probe_companions_dependence", params, {}, PAPER)
    assert dependence == pytest.approx(5 * examples * per_example * MLP_MMAC)
    # without 2 among the sizes, no pairs
    params["batch_sizes"] = [4]
    assert plan.work_of("probe_companions_dependence_keep", params, {}, PAPER) == pytest.approx(
        examples * (200 * 4 + 3 * 200 * 16) * MLP_MMAC
    )
    key = plan.cost_key("probe_companions_grid", params, {"block": "0-4", "normaliser": "none"}, PAPER)
    assert key == "probe_companions_grid:mlp/row-wise"


def test_a_rule_without_a_work_function_is_one_unit_per_job():
    assert plan.work_of("summarise_batch_size", {}, {}, PAPER) == 1.0
    assert plan.unit_of("summarise_batch_size") == plan.JOB_UNIT


def rules_defined(smk: Path) -> dict[str, bool]:
    """``{rule: is it declared a local rule in its body}`` of a rules file, in order (rules nested
    in an ``if`` included)."""
    text = smk.read_text()
    heads = list(re.finditer(r"^[ \t]*(?:rule|checkpoint)\s+(\w+)\s*:", text, re.M))
    bodies = [text[h.end() : (heads[i + 1].start() if i + 1 < len(heads) else len(text))] for i, h in enumerate(heads)]
    return {h.group(1): bool(re.search(r"^\s*localrule:\s*True", b, re.M)) for h, b in zip(heads, bodies)}


def test_every_rule_that_is_not_local_is_priced_by_the_study_whose_rules_file_defines_it():
    """A study's rules are costed by its own ``cost`` module (bnstudy.base.catalogue.Study.work), the
    rules no study owns by bnstudy.pipeline.plan.BASE_WORK: a study added without its cost entries fails here,
    as does an entry left behind by a rule that is gone, or one a study keeps for another's rule."""
    from bnstudy.base import catalogue

    owners = {s.name: s.work() for s in catalogue.STUDIES}
    owners[""] = plan.BASE_WORK
    needed = {name: set() for name in owners}
    for smk in sorted((ROOT / "workflow" / "rules").glob("*.smk")):
        study = next((s for s in catalogue.STUDIES if s.rules_file == f"workflow/rules/{smk.name}"), None)
        local = set(study.local_rules) if study else set()
        for rule, declared_local in rules_defined(smk).items():
            if not declared_local and rule not in local:
                needed[study.name if study else ""].add(rule)
    assert needed["companions"] >= {"probe_companions_grid", "train_dependence_keep_more"}
    assert needed[""] == {
        "split",
        "train_grid",
        "train_sorted",
        "train_keep",
        "train_dependence",
        "train_dependence_keep",
    }
    assert needed["precise_rows"] == {"evaluate_precise_rows"}
    for name, work in owners.items():
        assert set(work) == needed[name], (name or "bnstudy.pipeline.plan.BASE_WORK", set(work) ^ needed[name])
    assert plan.WORK == {rule: w for work in owners.values() for rule, w in work.items()}


def test_precise_rows_work_counts_the_rows_through_each_network():
    """Each network of the block: two passes over the training rows (exact statistics, whole pass), the
    budgets of at least one batch (rows // b batches, each replicate) and the test rows once per arm."""
    params = {"settings": {"budgets": [64, 256], "replicates": 3, "seed": 0}, "last_batch": "drop"}
    train, test = 898, 899
    at_2 = 2 * train + 3 * (64 + 256) + (3 + 6) * test
    assert plan.work_of("evaluate_precise_rows", params, {"batch_size": "2", "block": "0-4"}, PAPER) == (
        pytest.approx(5 * at_2 * MLP_MMAC)
    )
    # at b = 128 the budget of 64 rows is under one batch, and 256 rows are 2 batches
    at_128 = 2 * train + 3 * 256 + (3 + 3) * test
    assert plan.work_of("evaluate_precise_rows", params, {"batch_size": "128", "block": "0-4"}, PAPER) == (
        pytest.approx(5 * at_128 * MLP_MMAC)
    )
    key = plan.cost_key("evaluate_precise_rows", params, {"batch_size": "2", "block": "0-1"}, FASHION_TINY)
    assert key == "evaluate_precise_rows:conv"


# ---- fitting the table ---------------------------------------------------------------------


def test_fit_rule_per_job_is_the_median_job():
    cost = plan.fit_rule("figure_x", plan.JOB_UNIT, [(1, 2.0), (1, 3.0), (1, 10.0)], start_s=1.0)
    assert (cost.cpu_s_median, cost.start_s, cost.cpu_s_per_unit, cost.jobs) == (3.0, 3.0, 0.0, 3)
    assert cost.predict(1) == 3.0


def test_fit_rule_draws_a_line_through_work_spanning_twice_or_more():
    points = [(w, 2.0 + 0.01 * w) for w in (100, 100, 400, 1000)]
    cost = plan.fit_rule("train_grid", plan.unit_of("train_grid"), points, start_s=9.0)
    assert cost.start_s == pytest.approx(2.0)
    assert cost.cpu_s_per_unit == pytest.approx(0.01)
    assert cost.predict(50_000) == pytest.approx(502.0)


def test_fit_rule_never_prices_work_below_zero():
    # falling CPU with work: no slope, the start-up cost the mean job
    cost = plan.fit_rule("train_grid", plan.unit_of("train_grid"), [(100, 3.0), (1000, 2.0)], start_s=9.0)
    assert cost.cpu_s_per_unit == 0.0
    assert cost.start_s == pytest.approx(2.5)


def test_fit_rule_at_one_work_level_takes_the_shared_start_up_cost():
    points = [(100, 3.0), (100, 4.0), (150, 2.5)]
    cost = plan.fit_rule("train_grid", plan.unit_of("train_grid"), points, start_s=2.0)
    assert cost.start_s == 2.0
    assert cost.cpu_s_per_unit == pytest.approx(0.01)  # median of 0.01, 0.02, 0.00333
    cheap = plan.fit_rule("train_grid", plan.unit_of("train_grid"), [(100, 1.0)], start_s=2.0)
    assert cheap.cpu_s_per_unit == 0.0


def test_fit_shares_the_per_job_rules_start_up_cost_and_adds_a_default_row():
    jobs = [("figure_a", 1, 2.0), ("figure_b", 1, 4.0), ("figure_b", 1, 6.0), ("train_grid", 100, 3.0)]
    table = plan.fit(jobs)
    assert table["train_grid"].start_s == 4.0  # the median of 2, 4 and 6
    assert table["train_grid"].cpu_s_per_unit == 0.0  # 3 s is below it
    assert table["figure_b"].start_s == 5.0
    assert table[plan.DEFAULT_RULE].start_s == 3.5  # median of every job
    assert table[plan.DEFAULT_RULE].jobs == 4
    with pytest.raises(plan.PlanError):
        plan.fit([])


def test_table_round_trip_and_refusals(tmp_path):
    table = plan.fit([("figure_a", 1, 2.0), ("train_grid", 100, 3.0), ("train_grid", 1000, 12.0)])
    path = tmp_path / "t.tsv"
    plan.write_table(table, path, ["a header", "two lines"])
    text = path.read_text()
    assert text.startswith("# a header\n# two lines\nrule\tunit\t")
    back = plan.read_table(path)
    assert set(back) == set(table)
    assert back["train_grid"].cpu_s_per_unit == pytest.approx(0.01)
    assert back["train_grid"].predict(2000) == pytest.approx(table["train_grid"].predict(2000), rel=1e-3)
    path.write_text("rule\tunit\tjobs\tcpu_s_median\tstart_s\tcpu_s_per_unit\nx\tjob\tone\t1\t1\t0\n")
    with pytest.raises(plan.PlanError, match=r"row 1 is not rule/unit/jobs"):
        plan.read_table(path)
    path.write_text("rule\tunit\tjobs\tcpu_s_median\tstart_s\tcpu_s_per_unit\nx\tjob\t1\t1\t1\t0\n")
    with pytest.raises(plan.PlanError, match=r"no '\*' row"):
        plan.read_table(path)
    with pytest.raises(plan.PlanError, match="cannot be read"):
        plan.read_table(tmp_path / "missing.tsv")


# Work-priced rows no calibrating build has measured yet (the table's header says why): their jobs cost
# the '*' row. A calibration that measures one adds its row, and then this test asks to drop it here.
def unmeasured() -> set[str]:
    """The cost table's rows that no calibration has measured yet, as each study's cost module says
    (its ``UNMEASURED``): such a rule costs the table's '*' row until `calibrate` measures it."""
    import importlib
    import importlib.util

    from bnstudy.base import catalogue

    out = set()
    for study in catalogue.STUDIES:
        module = f"bnstudy.studies.{study.name}.cost"
        if importlib.util.find_spec(module) is not None:
            out |= set(getattr(importlib.import_module(module), "UNMEASURED", ()))
    return out


UNMEASURED = unmeasured()


def test_committed_table_prices_every_rule_with_a_work_function_in_its_unit():
    table = plan.read_table()
    for rule, spec in plan.WORK.items():
        variants = [""]
        if spec.variant is plan.network_family:
            variants = ["mlp", "conv"]
        elif spec.variant:
            variants = [f"{f}/{s}" for f in ("mlp", "conv") for s in ("batch-statistics", "row-wise")]
        for key in (f"{rule}:{v}" if v else rule for v in variants):
            if key.startswith("probe_companions_dependence") and key.endswith("/row-wise"):
                continue  # study 1's networks are batch norm's
            if key in UNMEASURED:  # priced at the '*' row until a build measures it
                assert key not in table, f"{key} is measured now: drop it from UNMEASURED"
                continue
            assert key in table, key
            assert table[key].unit == spec.unit, key
    assert all(c.start_s >= 0 and c.cpu_s_per_unit >= 0 for c in table.values())
    assert plan.TABLE.read_text().startswith("# ")  # the header says where the figures come from


# ---- pricing, reporting, refusing --------------------------------------------------------


def _plan(jobs, config=None):
    return Plan("cfg.yaml", config or PAPER, [Job(*j) for j in jobs])


TABLE = {
    "train_grid:mlp": Cost("train_grid:mlp", plan.unit_of("train_grid"), 2, 3.0, 2.0, 0.001),
    "figure_a": Cost("figure_a", plan.JOB_UNIT, 1, 4.0, 4.0, 0.0),
    "serve_stream": Cost("serve_stream", "another unit", 1, 9.0, 9.0, 1.0),
    plan.DEFAULT_RULE: Cost(plan.DEFAULT_RULE, plan.JOB_UNIT, 9, 2.5, 2.5, 0.0),
}
RECIPE = {"seeds": [0, 1], "recipe": {"epochs": 10, "batch_size": 64, "last_batch": "drop"}}


def test_price_per_rule_unknown_rules_and_targets():
    p = _plan(
        [
            ("train_grid", {}, RECIPE, None, True),
            ("figure_a", {}, {}, None, False),
            ("new_rule", {}, {}, None, True),
            ("serve_stream", {}, {"train_batch_sizes": [2], "batch_size": 16, "passes": 1}, None, True),
            ("all", {}, {}, None, True, False),
        ]
    )
    plan.price(p, TABLE)
    work = 2 * 10 * (14 + 898 / 25) * MLP_MMAC
    assert p.jobs[0].work == pytest.approx(work)
    assert [j.cpu_s for j in p.jobs] == pytest.approx([2.0 + 0.001 * work, 4.0, 2.5, 2.5, 0.0])
    assert p.cpu() == pytest.approx(sum(j.cpu_s for j in p.jobs))
    assert p.cpu(only_needrun=True) == pytest.approx(p.cpu() - 4.0)


def test_report_counts_jobs_and_bounds_wall_time_by_cores():
    p = _plan([("figure_a", {}, {}, None, i < 3) for i in range(5)] + [("train_grid", {}, RECIPE, None, False)])
    plan.price(p, TABLE)
    lines = plan.report(p, cores=2, available=8)
    assert lines[0] == "plan of cfg.yaml: 6 jobs in all, 3 would run now"
    assert lines[1] == "  jobs by rule: figure_a 5, 1 more rule of 1 job"
    total = 20 + 2.0 + 0.001 * 2 * 10 * (14 + 898 / 25) * MLP_MMAC
    assert f"{total:,.0f} s" in lines[2] and "12 s for the jobs that would run now" in lines[2]
    assert f"at least {plan.duration(total / 2)} for the whole build, 6 s now" in lines[3]
    # more cores than the machine has: the machine's cores bound the wall time
    assert f"at least {plan.duration(total / 2)}" in plan.report(p, cores=8, available=2)[3]


def test_duration():
    assert [plan.duration(s) for s in (12.4, 456, 3 * 3600 + 5 * 60, 2.5 * 86400)] == [
        "12 s",
        "7 min 36 s",
        "3 h 5 min",
        "2.5 days",
    ]
    assert plan.duration(1e12) == "3.17e+04 years"


def test_a_build_over_a_cpu_week_is_refused_naming_rule_and_key():
    config = yaml.safe_load(yaml.safe_dump(PAPER))
    config["grid"]["epochs"] = 10**12
    recipe = {"seeds": [0, 1, 2, 3, 4], "recipe": {"epochs": 10**12, "batch_size": 64, "last_batch": "drop"}}
    p = _plan([("train_grid", {}, recipe, None, True), ("figure_a", {}, {}, None, True)], config)
    plan.price(p, TABLE)
    line = plan.over_budget(p, PAPER)
    assert "\n" not in line
    assert line.startswith("plan: cfg.yaml: estimated ")
    assert "over the budget of 604,800 CPU s (one CPU-week), 100% of it in rule train_grid" in line
    assert "driven by grid.epochs = 1000000000000" in line
    assert line.endswith("run anyway with --allow-budget (make paper ALLOW_BUDGET=1)")
    assert plan.driver(p, PAPER) == ("train_grid", pytest.approx(1.0), "grid.epochs")
    # seeds grown instead: the key that grew most against the paper config
    config["grid"]["epochs"] = 20
    config["grid"]["seeds"] = list(range(1000))
    assert plan.driver(p, PAPER)[2] == "grid.seeds"
    # within the budget: nothing to refuse
    small = _plan([("train_grid", {}, RECIPE, None, True)])
    plan.price(small, TABLE)
    assert plan.over_budget(small, PAPER) is None


def test_budget_edge():
    p = _plan([("figure_a", {}, {}, None, True)])
    p.jobs[0].cpu_s = plan.BUDGET_CPU_S
    assert plan.over_budget(p, PAPER) is None
    p.jobs[0].cpu_s = plan.BUDGET_CPU_S + 1
    assert "rule figure_a, driven by its job count" in plan.over_budget(p, PAPER)


# ---- the command, on the test config (processes: slow) -------------------------------------


def _run_plan(*args):
    import subprocess

    return subprocess.run(
        [sys.executable, "-m", "bnstudy.pipeline.plan", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def absurd(tmp_path_factory):
    """The test config with ``grid.epochs: 1000000000000`` (the same jobs, absurd ones)."""
    text = (ROOT / "config" / "test.yaml").read_text()
    text, n = re.subn(r"(?m)^(  epochs:) 2$", r"\1 1000000000000", text)
    assert n == 1
    path = tmp_path_factory.mktemp("plan") / "absurd.yaml"
    path.write_text(text)
    return path


@pytest.mark.slow
def test_absurd_epochs_are_refused_in_one_line_and_pass_with_the_override(absurd):
    refused = _run_plan("--configfile", str(absurd), "--cores", "2")
    assert refused.returncode == 1, refused.stderr
    assert len(refused.stderr.splitlines()) == 1, refused.stderr
    assert "rule train_grid, driven by grid.epochs = 1000000000000" in refused.stderr
    assert "--allow-budget (make paper ALLOW_BUDGET=1)" in refused.stderr
    allowed = _run_plan("--configfile", str(absurd), "--cores", "2", "--allow-budget")
    assert allowed.returncode == 0, allowed.stderr
    assert "allowed by --allow-budget" in allowed.stdout
    # the plan's job count is Snakemake's own (dry run of the whole build)
    planned = int(re.search(r": (\d+) jobs in all", allowed.stdout).group(1))
    dry = snakemake("-n", "--forceall", "--configfile", str(absurd), timeout=300)
    assert dry.returncode == 0, dry.stderr
    assert planned == int(re.search(r"(?m)^total\s+(\d+)$", dry.stdout + dry.stderr).group(1))


def test_block_seeds_counts_the_configured_seeds_of_a_block():
    from bnstudy.nets.weights import blocks

    config = {"grid": {"seeds": [0, 1, 2, 3, 4, 7, 12], "seed_block": 5}}
    for label, seeds in blocks(config["grid"]["seeds"], 5).items():
        assert plan.block_seeds(config, label) == len(seeds)
    assert plan.block_seeds(config, "5-9") == 1


def test_rules_that_train_share_one_fit_per_network_family():
    jobs = [("train_grid", 100, 3.0), ("train_grid", 1000, 12.0), ("train_keep", 100, 3.0), ("figure_a", 1, 2.0)]
    table = plan.fit(jobs)
    assert plan.group_of("train_keep") == plan.group_of("train_grid") == plan.group_of("train_lr_sweep") == "training"
    assert plan.group_of("train_accumulation:conv") == plan.group_of("train_grid:conv") == "training:conv"
    assert plan.group_of("train_grid:mlp") != plan.group_of("train_grid:conv")
    assert table["train_keep"].cpu_s_per_unit == table["train_grid"].cpu_s_per_unit == pytest.approx(0.01)
    assert table["train_keep"].start_s == table["train_grid"].start_s == pytest.approx(2.0)
    assert (table["train_keep"].jobs, table["train_grid"].jobs) == (1, 2)
    assert (table["train_keep"].cpu_s_median, table["train_grid"].cpu_s_median) == (3.0, 7.5)
    assert plan.group_of("figure_a") == "figure_a"


def test_companion_probes_with_and_without_batch_statistics_are_priced_apart():
    key = plan.cost_key
    assert key("probe_companions_grid", {}, {"normaliser": "batchnorm", "block": "0-4"}, PAPER) == (
        "probe_companions_grid:mlp/batch-statistics"
    )
    assert key("probe_companions_grid", {}, {"normaliser": "layernorm", "block": "0-4"}, PAPER) == (
        "probe_companions_grid:mlp/row-wise"
    )
    assert key("probe_companions_grid", {}, {"normaliser": "layernorm", "block": "0-1"}, FASHION_TINY) == (
        "probe_companions_grid:conv/row-wise"
    )
    assert key("probe_companions_dependence", {}, {}, PAPER) == "probe_companions_dependence:mlp/batch-statistics"
    assert key("train_grid", RECIPE, {"normaliser": "none"}, PAPER) == "train_grid:mlp"
    assert plan.group_of("probe_companions_grid:mlp/row-wise") == "companions_probe.py:mlp/row-wise"
    assert plan.unit_of("probe_companions_grid:mlp/row-wise") == plan.WORK["probe_companions_grid"].unit
    table = plan.fit(
        [
            ("probe_companions_grid:mlp/row-wise", 1000, 3.0),
            ("probe_companions_grid:mlp/row-wise", 3000, 5.0),
            ("probe_companions_dependence:mlp/batch-statistics", 1000, 3.0),
            ("probe_companions_grid:mlp/batch-statistics", 3000, 9.0),
        ]
    )
    assert table["probe_companions_grid:mlp/row-wise"].cpu_s_per_unit == pytest.approx(0.001)
    assert table["probe_companions_grid:mlp/batch-statistics"].cpu_s_per_unit == pytest.approx(0.003)
    assert table["probe_companions_dependence:mlp/batch-statistics"].cpu_s_per_unit == pytest.approx(0.003)
    p = _plan([("probe_companions_grid", {"normaliser": "none", "block": "0-4"}, PROBE, None, True)])
    plan.price(p, table)
    assert p.jobs[0].cpu_s == pytest.approx(table["probe_companions_grid:mlp/row-wise"].predict(p.jobs[0].work))


PROBE = {"batch_sizes": [2], "batches_per_example": 1, "one_class_batch_size": 2}


def _dag(costs, needs):
    return [Job("r", {}, {}, None, True, cpu_s=c, needs=tuple(n)) for c, n in zip(costs, needs)]


def test_schedule_of_a_small_dag_by_hand():
    # 0 (4 s) -> 1 (1 s); 2 (3 s) and 3 (2 s) free. Two cores: 0 and 2 start (longest chains 5 and 3),
    # 3 starts at 3 on the core 2 freed, 1 at 4 after 0: done at 5 = the critical path 0 -> 1.
    jobs = _dag([4, 1, 3, 2], [[], [0], [], []])
    assert plan.chain_lengths(jobs) == [5, 1, 3, 2]
    assert plan.schedule(jobs, 2) == 5
    assert plan.schedule(jobs, 1) == 10  # one core: every job in turn
    assert plan.schedule(jobs, 8) == 5  # cores to spare: the critical path


def test_the_longest_chain_is_the_jobs_of_the_critical_path_in_order():
    # 0 (4 s) -> 1 (1 s) -> 3 (2 s), and 2 (6 s) -> 3: the chain 2 -> 3 (8 s) beats 0 -> 1 -> 3 (7 s)
    jobs = _dag([4, 1, 6, 2], [[], [0], [], [1, 2]])
    assert plan.critical_chain(jobs) == [2, 3]
    assert sum(jobs[i].cpu_s for i in plan.critical_chain(jobs)) == max(plan.chain_lengths(jobs))
    jobs[0].cpu_s = 6  # now 0 -> 1 -> 3 is 9 s
    assert plan.critical_chain(jobs) == [0, 1, 3]
    jobs = _dag([30, 120, 5], [[], [0], [1]])
    line = plan.chain_line(Plan("cfg.yaml", {}, jobs))
    assert line == "  longest chain (3 jobs): r 2 min 0 s -> 2 shorter jobs 35 s"


@given(st.data())
def test_a_list_schedule_lies_between_the_lower_bound_and_grahams_bound(data):
    n = data.draw(st.integers(1, 25))
    costs = data.draw(st.lists(st.integers(0, 50), min_size=n, max_size=n))
    needs = [data.draw(st.sets(st.integers(0, i - 1), max_size=3)) if i else set() for i in range(n)]
    cores = data.draw(st.integers(1, 6))
    jobs = _dag(costs, needs)
    made = plan.schedule(jobs, cores)
    critical, total = max(plan.chain_lengths(jobs)), sum(costs)
    assert max(critical, total / cores) - 1e-9 <= made <= total / cores + critical + 1e-9
    assert plan.schedule(jobs, 1) == total and plan.schedule(jobs, n) == critical
    chain = plan.critical_chain(jobs)
    assert sum(costs[i] for i in chain) == critical
    assert all(chain[k] in jobs[chain[k + 1]].needs for k in range(len(chain) - 1))


@pytest.mark.slow  # Snakemake's DAG build starts processes (which sacct)
def test_planned_jobs_carry_the_dags_dependencies():
    config, jobs, limit = plan.dag_jobs(ROOT / "config" / "test.yaml", ROOT / "Snakefile", ROOT, forceall=True)
    rules = [j.rule for j in jobs]
    paper = jobs[rules.index("paper")]
    assert {"summarise_batch_size", "summarise_companions"} <= {jobs[i].rule for i in paper.needs}
    assert all(i != k for k, j in enumerate(jobs) for i in j.needs)
    training = [k for k, j in enumerate(jobs) if j.rule == "split"]
    assert training and not jobs[training[0]].needs  # the split waits for nothing


def test_calibration_takes_a_job_server_forks_cpu_from_the_jobs_log(tmp_path):
    """A job whose script ran in a fork of the job server: its benchmark file measured only the job's
    own waiting process; the CPU time that counts is the fork's, on the log's last line."""
    from bnstudy.pipeline.jobserver import RECORD

    bench = tmp_path / "results" / "benchmarks" / "split.tsv"
    bench.parent.mkdir(parents=True)
    bench.write_text("s\th:m:s\tmax_rss\tcpu_time\n2.0\t0:00:02\t40.0\t0.3\n")
    jobs = [Job("split", {}, {}, "results/benchmarks/split.tsv", True)]
    found, missing = plan.benchmarked_jobs(tmp_path / "results", jobs, {})
    assert missing == 0 and found == [("split", 1.0, plan.job_cpu(2.0, 0.3))]
    log = tmp_path / "results" / "logs" / "split.log"
    log.parent.mkdir(parents=True)
    log.write_text(f"2026-12-03 INFO rule split\n{RECORD} cpu_s=1.750 max_rss_mb=310.0\n")
    found, _ = plan.benchmarked_jobs(tmp_path / "results", jobs, {})
    assert found == [("split", 1.0, 1.75)]


def test_measured_jobs_take_their_own_cpu_time_and_the_schedule_follows(tmp_path):
    """``--measured``: a job whose benchmark file lies in the given build takes its measured CPU
    seconds (the job server's record where the log has one); the others keep their estimates, and
    the longest chain and the list schedule are recomputed from the mix."""
    from bnstudy.pipeline.jobserver import RECORD

    bench = tmp_path / "results" / "benchmarks"
    (bench / "train").mkdir(parents=True)
    (bench / "train" / "a.tsv").write_text("s\th:m:s\tmax_rss\tcpu_time\n500.0\t0:08:20\t40.0\t\n")
    log = tmp_path / "results" / "logs" / "train" / "a.log"
    log.parent.mkdir(parents=True)
    log.write_text(f"{RECORD} cpu_s=480.000 max_rss_mb=310.0\n")
    (bench / "sum.tsv").write_text("s\th:m:s\tmax_rss\tcpu_time\n2.0\t0:00:02\t40.0\t0.3\n")
    jobs = [
        Job("train", {}, {}, "results/benchmarks/train/a.tsv", True, cpu_s=100.0),
        Job("train", {}, {}, "results/benchmarks/train/b.tsv", True, cpu_s=100.0),  # not run there
        Job("sum", {}, {}, "results/benchmarks/sum.tsv", True, cpu_s=5.0, needs=(0, 1)),
        Job("all", {}, {}, None, True, runs=False, needs=(2,)),
    ]
    p = Plan("cfg.yaml", {}, jobs)
    assert plan.schedule(p.jobs, 2) == 105.0
    count, cpu = plan.use_measured(p, tmp_path / "results")
    assert count == 2 and cpu == 480.0 + plan.job_cpu(2.0, 0.3)
    assert [j.cpu_s for j in p.jobs] == [480.0, 100.0, plan.job_cpu(2.0, 0.3), 0.0]
    assert [j.measured for j in p.jobs] == [True, False, True, False]
    assert plan.schedule(p.jobs, 2) == pytest.approx(480.0 + plan.job_cpu(2.0, 0.3))
    [line] = plan.measured_lines(p)
    share = cpu / (cpu + 100.0)
    assert line == (
        f"  measured: 2 of the 3 jobs ran in the given build, {cpu:,.0f} CPU s ({share:.0%} of the total);"
        " the others' CPU time is estimated"
    )
    assert f"{share:.0%}" == "83%"
    assert f"CPU time of the jobs (measured where given, else estimated): {cpu + 100.0:,.0f} s" in "\n".join(
        plan.report(p, 2)
    )
    assert plan.measured_lines(Plan("cfg.yaml", {}, [Job("sum", {}, {}, None, True)])) == []


def test_a_jobs_log_is_its_benchmark_files_twin():
    from bnstudy.pipeline.provenance import job_log

    assert (
        str(job_log("results/benchmarks/train_grid/none_b4_seeds0.tsv")) == "results/logs/train_grid/none_b4_seeds0.log"
    )
    assert str(job_log("/w/results/benchmarks/split.tsv")) == "/w/results/logs/split.log"


def test_exact_statistics_memory_grows_with_the_rows_and_the_networks_activations():
    from bnstudy.base.config import load_file

    fashion = load_file(ROOT / "config" / "fashion-cluster.yaml")
    # network C on 28x28 images: 16 x 28^2 + 32 x 14^2 + 64 x 7^2 + 64 x 7^2 floats a row
    assert plan.row_activations(fashion) == 16 * 784 + 32 * 196 + 64 * 49 + 64 * 49 == 25088
    want = math.ceil(plan.EXACT_STATISTICS_COPIES * 4 * 40000 * 25088 / 1e6) + 500
    assert plan.exact_statistics_mb(fashion) == want > 11_400  # above the 11.4 GB an evaluate_remedies job peaked at
    digits = load_file(ROOT / "config" / "config.yaml")
    assert plan.row_activations(digits) == sum(digits["network"]["hidden"])
    assert plan.exact_statistics_mb(digits) < 1000  # the rules' own 1000 MB stands


def test_available_memory_is_memavailable_less_a_reserve_and_none_without_the_field(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24000000 kB\nMemFree:  1000 kB\nMemAvailable:   20000000 kB\n")
    assert plan.available_memory_mb(meminfo) == 20000000 * 1024 // 1_000_000 - 1000
    meminfo.write_text("MemTotal:       24000000 kB\nMemAvailable:   1000 kB\n")
    assert plan.available_memory_mb(meminfo) == 1000  # never below one small job's 1,000 MB
    meminfo.write_text("MemTotal:       24000000 kB\n")
    assert plan.available_memory_mb(meminfo) is None
    assert plan.available_memory_mb(tmp_path / "absent") is None


@pytest.mark.slow  # Snakemake's DAG build starts processes (which sacct)
def test_a_local_build_schedules_its_jobs_within_the_machines_memory():
    """The Snakefile sets mem_mb from the machine's available memory when --resources does not
    (workflow/rules/common.smk); every job asks its memory; the plan says both."""
    config, jobs, limit = plan.dag_jobs(ROOT / "config" / "test.yaml", ROOT / "Snakefile", ROOT, forceall=True)
    total_mb = int(open("/proc/meminfo").read().split("MemTotal:")[1].split()[0]) * 1024 // 1_000_000
    assert limit is not None and 1000 <= limit <= total_mb
    runs = [j for j in jobs if j.runs]
    assert all(j.mem_mb >= 500 for j in runs)
    lines = plan.memory_lines(plan.Plan("config/test.yaml", config, jobs, limit))
    assert len(lines) == 1 and f"within {limit:,} MB" in lines[0]


def test_a_job_asking_more_than_the_limit_is_named_in_a_warning():
    jobs = [
        Job("train", {}, {}, None, True, mem_mb=800),
        Job("evaluate_remedies", {}, {}, None, True, mem_mb=14550),
        Job("all", {}, {}, None, True, runs=False),
    ]
    lines = plan.memory_lines(Plan("c.yaml", {}, jobs, memory_limit_mb=12000))
    assert "asks 14,550 MB (evaluate_remedies)" in lines[0] and "within 12,000 MB" in lines[0]
    assert lines[1].startswith("  warning: jobs of evaluate_remedies ask more than 12,000 MB")
    assert len(plan.memory_lines(Plan("c.yaml", {}, jobs, memory_limit_mb=20000))) == 1
    assert "no local limit" in plan.memory_lines(Plan("c.yaml", {}, jobs))[0]


def test_rules_whose_jobs_outlast_their_run_time_get_set_resources_flags():
    jobs = [
        Job("train_grid", {}, {}, None, True, cpu_s=300.0, runtime_min=60),  # 10 min with the margin: asks enough
        Job("finetune", {}, {}, None, True, cpu_s=2041.0, runtime_min=10),  # 68 min -> 70
        Job("finetune", {}, {}, None, True, cpu_s=1000.0, runtime_min=10),
        Job("all", {}, {}, None, True, runs=False),
    ]
    lines = plan.runtime_lines(Plan("c.yaml", {}, jobs))
    assert len(lines) == 1 and lines[0].endswith("--set-resources finetune:runtime=70")
    assert "jobs of 1 rules" in lines[0]
    jobs[1].cpu_s = 200.0
    jobs[2].cpu_s = 200.0
    assert plan.runtime_lines(Plan("c.yaml", {}, jobs)) == []


def _reversed_keys(value):
    """``value`` with every mapping's keys listed in the opposite order, at any depth."""
    if isinstance(value, dict):
        return {k: _reversed_keys(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed_keys(v) for v in value]
    return value


@pytest.mark.slow  # two of Snakemake's DAG builds of the tiny Fashion config
def test_a_config_listing_its_keys_in_another_order_gives_every_job_the_same_params(tmp_path):
    """Snakemake re-runs a job whose params differ as text; a config whose mappings only list their keys
    in another order (the network's layers, fine-tuning's shift, the other builds to compare) must give
    every job the same params. The tiny Fashion config has the convolutional network's layers; a side-by-
    side section is added, naming a build made here."""
    from test_compare import write_build

    expected = write_build(tmp_path / "other", {"design": {"dataSetName": "digits"}})
    config = yaml.safe_load((ROOT / "config" / "fashion-tiny.yaml").read_text())
    config["compare"] = {"builds": [{"directory": str(tmp_path / "other"), "expected": str(expected)}]}
    params = {}
    for name, variant in [("as_given", config), ("reversed", _reversed_keys(config))]:
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(variant, sort_keys=False))
        _, jobs, _ = plan.dag_jobs(path, ROOT / "Snakefile", ROOT, forceall=True)
        params[name] = {
            (j.rule, tuple(sorted(j.wildcards.items()))): {k: repr(v) for k, v in j.params.items()} for j in jobs
        }
    assert list(_reversed_keys(config)["network"]["layers"][0]) != list(config["network"]["layers"][0])
    assert params["as_given"].keys() == params["reversed"].keys()
    changed = {job: p for job, p in params["reversed"].items() if p != params["as_given"][job]}
    assert not changed, sorted(changed)[:5]


@pytest.mark.slow  # Snakemake's DAG build of each committed config
@pytest.mark.parametrize(
    "name",
    ["config.yaml", "test.yaml", "fashion-tiny.yaml", "fashion-mlp.yaml", "fashion-cnn.yaml", "fashion-cluster.yaml"],
)
def test_every_job_asks_at_least_twice_its_planned_cpu_time_as_run_time(name):
    """The run times a cluster enforces come from the cost model with no flag: each job of each committed
    config asks at least plan.RUNTIME_MARGIN (2) times its estimated CPU seconds, so `make plan` has no
    `--set-resources` advice to print. (config/combined.yaml is config.yaml and the side by side, a job
    of seconds; its DAG needs the built parts.)"""
    config, jobs, _ = plan.dag_jobs(ROOT / "config" / name, ROOT / "Snakefile", ROOT, forceall=True)
    p = plan.Plan(name, config, jobs)
    plan.price(p, plan.read_table())
    timed = [j for j in p.jobs if j.runs and j.runtime_min]
    assert timed and all(j.runtime_min * 60 >= plan.RUNTIME_MARGIN * j.cpu_s for j in timed), [
        (j.rule, j.runtime_min, round(j.cpu_s)) for j in timed if j.runtime_min * 60 < plan.RUNTIME_MARGIN * j.cpu_s
    ]
    assert plan.runtime_lines(p) == []
