"""Pinned values: the numbers the paper quotes fail loudly when they drift."""

import os
import subprocess
import sys

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
    pins = pinned.pins_from(results)
    assert pinned.check(results, pins) == []
    pins["values"]["study:acc"]["value"] = 0.970
    problems = pinned.check(results, pins)
    assert len(problems) == 1
    assert problems[0].startswith("study:acc: moved from 0.97 to 0.975 (by +0.005")


def test_a_value_no_longer_written_is_reported(tmp_path):
    results = _results_with(tmp_path, {"acc": "0.975"})
    pins = pinned.pins_from(results)
    pins["values"]["study:gone"] = {"value": 1.0, "tolerance": 0.1}
    assert pinned.check(results, pins) == ["study:gone: pinned at 1 but no longer written by the pipeline"]


def _built_on(results, fingerprint):
    (results / "paper" / "macros" / "provenance.tex").write_text(
        "\\newcommand{\\torchCpuKernels}{\\texttt{AVX2}}\n"
        f"\\newcommand{{\\numericsFingerprint}}{{\\texttt{{{fingerprint}}}}}\n")


def test_pin_sets_are_kept_per_machine_and_the_build_machine_decides(tmp_path):
    results = _results_with(tmp_path / "a", {"acc": "0.975"})
    _built_on(results, "aaaa")
    pins_path = tmp_path / "pins.yaml"
    pinned.update(pins_path, results, "t")
    pins = yaml.safe_load(pins_path.read_text())
    assert pins["sets"][0]["machine"] == {"fingerprint": "aaaa", "cpu_kernels": "AVX2"}
    assert "provenance:numericsFingerprint" not in pins["sets"][0]["values"]
    assert pinned.verdict(results, pins) == ("match", [])

    other = _results_with(tmp_path / "b", {"acc": "0.970"})  # another machine rounds otherwise
    _built_on(other, "bbbb")
    status, messages = pinned.verdict(other, pins)
    assert status == "unknown machine" and "fingerprint bbbb" in messages[0]
    pinned.update(pins_path, other, "t")
    pins = yaml.safe_load(pins_path.read_text())
    assert [s["machine"]["fingerprint"] for s in pins["sets"]] == ["bbbb", "aaaa"]
    assert pinned.verdict(other, pins) == ("match", []) and pinned.verdict(results, pins) == ("match", [])

    (other / "paper" / "macros" / "study.tex").write_text("\\newcommand{\\acc}{0.975}\n")
    status, messages = pinned.verdict(other, pins)  # its own set decides, not the other machine's
    assert status == "drift" and messages[0].startswith("study:acc: moved from 0.97 to 0.975")


@pytest.mark.pipeline
def test_test_config_reproduces_its_pinned_values(runs):
    """Strict on a machine whose numerics have a recorded set; elsewhere only if some set matches."""
    base, _, _ = runs
    pins = yaml.safe_load((ROOT / "config" / "pinned" / "test.yaml").read_text())
    status, messages = pinned.verdict(base / "cores4" / "results", pins)
    if status == "unknown machine":
        pytest.skip("\n".join(messages))
    assert status == "match", "\n".join(messages)


def _fingerprint(env: dict) -> str:
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from bnstudy import provenance, runtime\n"
            "runtime.configure(1)\n"
            "print(provenance.numerics_fingerprint())") % str(ROOT / "src")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env=os.environ | env)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_numerics_fingerprint_is_stable_and_names_the_kernels():
    """Same kernels, same digest (in two processes); PyTorch's AVX2 kernels on an AVX512 machine, another."""
    import torch

    here = _fingerprint({})
    assert len(here) == 16 and here == _fingerprint({})
    if torch.backends.cpu.get_cpu_capability() != "AVX512":
        pytest.skip("needs an AVX512 machine to compare against its AVX2 kernels")
    assert _fingerprint({"ATEN_CPU_CAPABILITY": "avx2"}) != here
