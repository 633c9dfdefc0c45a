"""Pinned values: the numbers the paper quotes fail loudly when they drift."""

import pytest
import yaml

from bnstudy import pinned
from conftest import ROOT


def test_parse_number_gives_value_and_one_unit_of_the_last_digit():
    assert pinned.parse_number("0.863") == (0.863, pytest.approx(0.001))
    assert pinned.parse_number("45.3\\%") == (pytest.approx(0.453), pytest.approx(0.001))
    assert pinned.parse_number("1{,}797") == (1797.0, 1.0)
    assert pinned.parse_number("\\texttt{abc}") is None


def _results_with(tmp_path, macros):
    d = tmp_path / "paper" / "macros"
    d.mkdir(parents=True)
    (d / "study.tex").write_text("".join(f"\\newcommand{{\\{k}}}{{{v}}}\n" for k, v in macros.items()))
    return tmp_path


def test_a_value_nudged_beyond_its_tolerance_is_reported_with_how_much(tmp_path):
    results = _results_with(tmp_path, {"flipRate": "45.3\\%", "acc": "0.975"})
    pins = pinned.pins_from(results, "t")
    assert pinned.check(results, pins) == []
    pins["values"]["study:acc"]["value"] = 0.970
    problems = pinned.check(results, pins)
    assert len(problems) == 1
    assert problems[0].startswith("study:acc: moved from 0.97 to 0.975 (by +0.005")


def test_a_value_no_longer_written_is_reported(tmp_path):
    results = _results_with(tmp_path, {"acc": "0.975"})
    pins = pinned.pins_from(results, "t")
    pins["values"]["study:gone"] = {"value": 1.0, "tolerance": 0.1}
    assert pinned.check(results, pins) == ["study:gone: pinned at 1 but no longer written by the pipeline"]


@pytest.mark.pipeline
def test_test_config_reproduces_its_pinned_values(runs):
    base, _, _ = runs
    pins = yaml.safe_load((ROOT / "config" / "pinned" / "test.yaml").read_text())
    problems = pinned.check(base / "cores4" / "results", pins)
    assert problems == [], "\n".join(problems)
