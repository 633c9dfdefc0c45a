"""Bad configs fail before any job runs, fast, with one line naming the key."""

import copy
import time

import pytest
import yaml

from conftest import ROOT, snakemake


def mutate(cfg, path, value):
    cfg = copy.deepcopy(cfg)
    *parents, last = path
    node = cfg
    for p in parents:
        node = node[p]
    if value is DELETE:
        del node[last]
    else:
        node[last] = value
    return cfg


DELETE = object()

BAD = {
    "unknown normaliser": (["normalisers"], ["none", "batchnorn"], "normalisers[1]"),
    "batch size below 2": (["grid", "batch_sizes"], [1, 16], "grid.batch_sizes[0]"),
    "groups do not divide width": (["network", "groups"], 5, "network.groups"),
    "one feature per group": (["network", "groups"], 128, "network.groups"),
    "epochs below 1": (["grid", "epochs"], 0, "grid.epochs"),
    "duplicate seeds": (["grid", "seeds"], [0, 1, 1], "grid.seeds"),
    "missing key": (["grid", "lr"], DELETE, "grid.lr"),
    "misspelled key": (["grid", "seedz"], [0], "grid"),
    "wrong type": (["grid", "epochs"], "twenty", "grid.epochs"),
    "wrong type of a list item": (["grid", "seeds"], [0, "one"], "grid.seeds[1]"),
    "momentum out of range": (["network", "momentum"], 1.5, "network.momentum"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_config_fails_fast_with_one_line_naming_the_key(case, test_config, tmp_path):
    path, value, key = BAD[case]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(mutate(test_config, path, value)))
    start = time.monotonic()
    result = snakemake("-n", "--configfile", str(bad), timeout=60)
    elapsed = time.monotonic() - start
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if line.startswith("config error:")]
    assert len(errors) == 1, result.stderr
    assert errors[0] == result.stderr.strip().splitlines()[-1], "the error line is the last word"
    assert errors[0].startswith(f"config error: {key}"), errors[0]
    assert "Traceback" not in result.stderr
    assert elapsed < 10, f"took {elapsed:.1f} s"


def test_good_test_config_plans_without_error():
    result = snakemake("-n", "--configfile", "config/test.yaml", timeout=60)
    assert result.returncode == 0, result.stderr


def test_paper_config_plans_every_grid_training_and_the_dependence_network():
    """150 grid trainings (5 normalisers x 6 batch sizes x 5 seeds) + study 1's network."""
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    result = snakemake("-n", "--forceall", "--quiet", "rules", "--summary", timeout=120)
    planned = [line.split("\t")[0] for line in result.stdout.splitlines()]
    grid = [p for p in planned if p.startswith("results/runs/grid/") and p.endswith(".safetensors")]
    dependence = [p for p in planned if p.startswith("results/runs/dependence/") and p.endswith(".safetensors")]
    expected = len(cfg["normalisers"]) * len(cfg["grid"]["batch_sizes"]) * len(cfg["grid"]["seeds"])
    assert expected == 150
    assert len(grid) == expected
    assert len(dependence) == 1
