"""Pinned values: the numbers the paper quotes fail loudly when they drift."""

import subprocess
import sys

import pytest
import yaml

from bnstudy.pipeline import pinned
from conftest import ROOT


def test_parse_number_gives_value_and_one_unit_of_the_last_digit():
    assert pinned.parse_number("0.863") == (0.863, pytest.approx(0.001))
    assert pinned.parse_number("45.3\\%") == (pytest.approx(0.453), pytest.approx(0.001))
    assert pinned.parse_number("1{,}797") == (1797.0, 1.0)
    assert pinned.parse_number("\\texttt{abc}") is None
    # a count of zero as running text writes it (latex.count), or a share that is zero: exactly zero
    assert pinned.parse_number("none") == (0.0, 0.0)
    assert pinned.parse_number("none at all") is None


def _results_with(tmp_path, macros):
    d = tmp_path / "paper" / "macros"
    d.mkdir(parents=True)
    (d / "study.tex").write_text("".join(f"\\newcommand{{\\{k}}}{{{v}}}\n" for k, v in macros.items()))
    return tmp_path


def test_a_value_nudged_beyond_its_tolerance_is_reported_with_how_much(tmp_path):
    results = _results_with(tmp_path, {"flipRate": "45.3\\%", "acc": "0.975"})
    pins = pinned.pins_from(results)
    assert pinned.check(results, pins) == []
    pins["study:acc"]["value"] = 0.970
    problems = pinned.check(results, pins)
    assert len(problems) == 1
    assert problems[0].startswith("study:acc: moved from 0.97 to 0.975 (by +0.005")


def test_a_pinned_none_fails_once_the_share_is_no_longer_zero(tmp_path):
    """A share printed as "none" (a variance component set to zero) pins exactly zero: the same macro
    printing "1\\%" later is reported (a tolerance of one unit of a word would accept any share)."""
    pins = pinned.pins_from(_results_with(tmp_path / "a", {"shareNetworks": "none"}))
    assert pins["study:shareNetworks"] == {"value": 0.0, "tolerance": 0.0}
    later = _results_with(tmp_path / "b", {"shareNetworks": "1\\%"})
    (problem,) = pinned.check(later, pins)
    assert problem.startswith("study:shareNetworks: moved from 0 to 0.01")


def test_a_value_no_longer_written_is_reported(tmp_path):
    results = _results_with(tmp_path, {"acc": "0.975"})
    pins = pinned.pins_from(results)
    pins["study:gone"] = {"value": 1.0, "tolerance": 0.1}
    assert pinned.check(results, pins) == ["study:gone: pinned at 1 but no longer written by the pipeline"]


def test_a_pins_file_holds_one_set_that_update_rewrites_and_check_compares_strictly(tmp_path):
    results = _results_with(tmp_path / "a", {"acc": "0.975"})
    (results / "paper" / "macros" / "provenance.tex").write_text("\\newcommand{\\analysisFiles}{12}\n")
    pins_path = tmp_path / "pins.yaml"
    pinned.update(pins_path, results, "t")
    pins = yaml.safe_load(pins_path.read_text())
    assert pins == {"config": "t", "values": {"study:acc": {"value": 0.975, "tolerance": pytest.approx(0.001)}}}
    assert pinned.main(["check", "--results", str(results), "--pins", str(pins_path)]) == 0

    other = _results_with(tmp_path / "b", {"acc": "0.970"})  # any build, any machine: the one set decides
    assert pinned.main(["check", "--results", str(other), "--pins", str(pins_path)]) == 1
    pinned.update(pins_path, other, "ignored: the file keeps its config")
    pins = yaml.safe_load(pins_path.read_text())
    assert pins["config"] == "t" and pins["values"]["study:acc"]["value"] == 0.970
    assert pinned.main(["check", "--results", str(results), "--pins", str(pins_path)]) == 1


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "bnstudy.pipeline.pinned", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": ""},
    )


@pytest.mark.slow
def test_a_missing_pins_file_is_one_clear_line_not_a_traceback(tmp_path):
    results = _results_with(tmp_path, {"acc": "0.975"})
    out = _cli("check", "--results", str(results), "--pins", str(tmp_path / "none.yaml"))
    assert out.returncode == 2
    assert out.stderr == "" and len(out.stdout.splitlines()) == 1, out.stdout + out.stderr
    assert out.stdout.startswith(f"no pins file {tmp_path / 'none.yaml'}: ") and "pinned update" in out.stdout


@pytest.mark.slow
def test_an_old_per_machine_pins_file_is_one_clear_line(tmp_path):
    results = _results_with(tmp_path, {"acc": "0.975"})
    old = tmp_path / "old.yaml"
    old.write_text(yaml.safe_dump({"config": "t", "sets": [{"machine": {"fingerprint": "aaaa"}, "values": {}}]}))
    out = _cli("check", "--results", str(results), "--pins", str(old))
    assert out.returncode == 2 and len(out.stdout.splitlines()) == 1 and "old format" in out.stdout, out.stdout


@pytest.mark.parametrize("name", ["test", "paper"])
def test_the_pins_files_hold_one_valid_set(name):
    """Every pin a value and a tolerance, positive but for a "none" (exactly zero, tolerance zero)."""
    values = pinned.load(ROOT / "config" / "pinned" / f"{name}.yaml")
    assert values and all(set(v) == {"value", "tolerance"} for v in values.values())
    assert all(v["tolerance"] > 0 or (v["tolerance"] == 0 and v["value"] == 0) for v in values.values())


@pytest.mark.pipeline
def test_test_config_reproduces_its_pinned_values(runs):
    """Strictly, on every machine: one set of values."""
    base, _, _ = runs
    pins = pinned.load(ROOT / "config" / "pinned" / "test.yaml")
    problems = pinned.check(base / "cores1" / "results", pins)
    assert problems == [], "\n".join(problems)
