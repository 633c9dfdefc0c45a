"""Verify a sample before spending a CPU-day (bnstudy.pipeline.sample): the sample file of a config, the
comparison of a build's hashes with it, and the copy of the checkout it builds in."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd
import pytest

from bnstudy.pipeline import sample
from conftest import ROOT


def table(rows):
    return pd.DataFrame(rows, columns=sample.COLUMNS)


def test_a_configs_sample_sits_beside_its_expected_manifest():
    assert sample.sample_for_config("config/fashion-cluster.yaml") == Path("config/expected/fashion-cluster.sample.tsv")


def test_compare_names_each_file_whose_bytes_differ_and_nothing_else():
    expected = table([("results/a.csv", 10, "aa"), ("results/b.csv", 20, "bb")])
    assert sample.compare(expected, expected) == []
    found = table([("results/a.csv", 10, "aa"), ("results/b.csv", 21, "cc")])
    lines = sample.compare(expected, found)
    assert len(lines) == 1 and "results/b.csv: 21 bytes, sha256 cc; the sample has bb" in lines[0]


def test_hashes_marks_a_missing_file(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "a.csv").write_text("x\n")
    found = sample.hashes(["results/a.csv", "results/gone.csv"], tmp_path)
    assert list(found["bytes"]) == [2, -1] and found["sha256"].iloc[1] == "missing"


@pytest.mark.slow
def test_the_copy_holds_the_checkouts_files_with_their_times_and_no_ignored_ones(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / ".gitignore").write_text("results/\n")
    (repo / "kept.py").write_text("a = 1\n")
    (repo / "results").mkdir()
    (repo / "results" / "big.npy").write_text("not copied\n")
    subprocess.run(["git", "add", "kept.py", ".gitignore"], cwd=repo, check=True)
    (repo / "new.yaml").write_text("b: 2\n")  # not yet added: copied too
    import os

    os.utime(repo / "kept.py", (1_000_000_000, 1_000_000_000))
    sample.copy_checkout(repo, tmp_path / "copy")
    copy = tmp_path / "copy"
    assert (copy / "kept.py").read_text() == "a = 1\n" and (copy / "new.yaml").exists()
    assert not (copy / "results").exists()
    assert (copy / "kept.py").stat().st_mtime == 1_000_000_000


def test_the_cluster_configs_sample_is_two_grid_networks_of_two_normalisers_and_a_probe_job():
    rows = pd.read_csv(ROOT / "config" / "expected" / "fashion-cluster.sample.tsv", sep="\t")
    paths = list(rows["path"])
    grid = [p for p in paths if p.startswith("results/runs/grid/") and p.endswith(".safetensors")]
    assert len({p.split("/")[3] for p in grid}) >= 2
    assert any(p.startswith("results/companions/grid/") for p in paths)
    assert rows["sha256"].str.fullmatch(r"[0-9a-f]{64}").all()
