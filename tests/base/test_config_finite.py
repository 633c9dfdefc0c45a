"""NaN and infinite numbers in a config fail like any other bad value: one line naming the key.

JSON Schema's number checks let NaN pass (every comparison with it is false) and
infinity pass an open upper bound; bnstudy.base.config.validate (the workflow's check)
rejects both before the schema, through the same config-error path as
tests/base/test_config.py.
"""

import copy

import pytest
import yaml

from bnstudy.base.config import ConfigError, load_schema, validate
from conftest import ROOT, snakemake

CASES = {
    "lr .nan": (["grid", "lr"], ".nan", "grid.lr"),
    "lr .inf": (["grid", "lr"], ".inf", "grid.lr"),
    "lr -.inf": (["dependence", "lr"], "-.inf", "dependence.lr"),
    "eps .nan": (["network", "eps"], ".nan", "network.eps"),
    "a rate .inf in a list": (["lr_sweep", "lrs", 1], ".inf", "lr_sweep.lrs[1]"),
}
SHOWN = {".nan": "nan", ".inf": "inf", "-.inf": "-inf"}  # how the message prints the value


def bad_text(test_config, path, literal):
    cfg = copy.deepcopy(test_config)
    node = cfg
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = "PLACEHOLDER"
    return yaml.safe_dump(cfg).replace("PLACEHOLDER", literal)  # YAML's own .nan / .inf


@pytest.mark.parametrize("case", sorted(CASES))
def test_non_finite_number_is_rejected_with_one_line(case, test_config):
    path, literal, key = CASES[case]
    schema = load_schema(ROOT / "workflow" / "schemas" / "config.schema.yaml")
    with pytest.raises(ConfigError) as raised:
        validate(yaml.safe_load(bad_text(test_config, path, literal)), schema)
    message = str(raised.value)
    assert message == f"config error: {key}: {SHOWN[literal]} is not a finite number", message
    assert "\n" not in message


@pytest.mark.slow
def test_non_finite_number_stops_snakemake_before_any_job(test_config, tmp_path):
    path, literal, key = CASES["lr .nan"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(bad_text(test_config, path, literal))
    result = snakemake("-n", "--configfile", str(bad), timeout=60)
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if line.startswith("config error:")]
    assert len(errors) == 1, result.stderr
    assert errors[0] == result.stderr.strip().splitlines()[-1]
    assert errors[0].startswith(f"config error: {key}: "), errors[0]
    assert "not a finite number" in errors[0]
    assert "Traceback" not in result.stderr


def test_every_config_key_has_a_description():
    from conftest import ROOT

    schema = load_schema(ROOT / "workflow" / "schemas" / "config.schema.yaml")  # with every study's section
    missing = []

    def walk(node, path):
        for key, sub in node.get("properties", {}).items():
            if not sub.get("description", "").strip():
                missing.append(".".join(path + [key]))
            walk(sub, path + [key])

    walk(schema, [])
    assert not missing, f"config keys without a description in the schema: {missing}"


def test_each_study_states_its_section_beside_its_code_and_only_there():
    """A study's config section is described by its folder's schema.yaml (issue 26: a study is a
    unit), set into the schema under the catalogue's section name; the base file holds none of them."""
    from bnstudy.base import catalogue

    base = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    schema = load_schema(ROOT / "workflow" / "schemas" / "config.schema.yaml")
    for study in catalogue.STUDIES:
        fragment = study.schema()
        if fragment is None:
            continue
        assert study.config not in base["properties"], f"{study.config}: described in the base file too"
        assert schema["properties"][study.config]["description"] == fragment["description"]
        assert (study.config in schema["required"]) != study.optional, study.name
    doubled = copy.deepcopy(base)
    doubled["properties"]["serving"] = {"type": "object"}
    with pytest.raises(ValueError, match="'serving' has a schema in the base file and in"):
        catalogue.with_study_schemas(doubled)
