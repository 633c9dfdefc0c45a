"""A config file is read strictly: syntax errors, empty files and keys given twice name the file and line."""

import subprocess
import sys

import pytest
import yaml

from bnstudy.base.config import ConfigError, load_file
from conftest import ROOT, snakemake

CASES = {
    "key given twice": (
        "grid:\n  lr: 0.1\n  epochs: 2\n  lr: 0.2\n",
        r"{path}:4: key 'lr' is given twice (first on line 2); YAML keeps only the later value",
    ),
    "top-level key given twice": ("a: 1\nb: 2\na: 3\n", r"{path}:3: key 'a' is given twice (first on line 1)"),
    "unclosed list": ("grid:\n  lr: [1\n", r"{path}:3:1: YAML syntax error: expected ',' or ']'"),
    "tab indentation": ("grid:\n\tlr: 1\n", r"{path}:2:1: YAML syntax error: found character '\t'"),
    "empty file": ("", r"{path}: the file is empty"),
    "only a comment": ("# nothing\n", r"{path}: the file is empty"),
    "a list, not a mapping": ("- 1\n- 2\n", r"{path}:1: the top level is a list, not a mapping"),
}


@pytest.mark.parametrize("case", CASES)
def test_each_bad_file_is_refused_with_one_line_naming_file_and_line(case, tmp_path):
    text, expected = CASES[case]
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_file(path)
    message = str(e.value)
    assert message.startswith("config error: " + expected.format(path=path)), message
    assert "\n" not in message


def test_the_same_key_in_two_mappings_is_not_a_duplicate(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text("grid:\n  seed: 1\nsplit:\n  seed: 2\nlist:\n  - {a: 1}\n  - {a: 2}\n")
    assert load_file(path) == {"grid": {"seed": 1}, "split": {"seed": 2}, "list": [{"a": 1}, {"a": 2}]}


def test_the_shipped_configs_read_as_plain_yaml_does():
    import yaml

    for name in ("config.yaml", "test.yaml"):
        path = ROOT / "config" / name
        assert load_file(path) == yaml.safe_load(path.read_text())


@pytest.mark.slow
def test_snakemake_refuses_a_key_given_twice_before_any_job(tmp_path):
    bad = tmp_path / "dup.yaml"
    bad.write_text((ROOT / "config" / "test.yaml").read_text() + "compute_threads: 2\n")
    result = snakemake("-n", "--configfile", str(bad), timeout=120)
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    lines = len((ROOT / "config" / "test.yaml").read_text().splitlines()) + 1
    assert last.startswith(f"config error: {bad}:{lines}: key 'compute_threads' is given twice"), result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_the_check_command_names_file_and_line_and_exits_non_zero(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("grid:\n  lr: [1\n")
    cmd = [sys.executable, "-m", "bnstudy.base.config", "check", str(ROOT / "config" / "test.yaml"), str(bad)]
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [f"{ROOT / 'config' / 'test.yaml'}: valid"]
    assert result.stderr.splitlines() == [
        f"config error: {bad}:3:1: YAML syntax error: expected ',' or ']', but got '<stream end>'"
    ]


@pytest.mark.slow
def test_the_check_command_says_a_studys_cross_field_error_in_one_line(tmp_path):
    """A study's own check (here fine-tuning's: its source networks' batch size among the grid's)
    raises the package's ConfigError; the command, run as ``python -m``, prints it as one line, no
    traceback."""
    config = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    config["finetune"]["source_batch_size"] = 6
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(config))
    cmd = [sys.executable, "-m", "bnstudy.base.config", "check", str(bad)]
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 1
    said = f"config error: finetune.source_batch_size: 6 is not one of grid.batch_sizes [{bad}]"
    assert result.stderr.splitlines() == [said]
