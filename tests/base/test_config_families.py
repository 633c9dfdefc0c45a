"""The config's ``families`` section declares exactly the families its studies form, each checked in one line."""

import copy

import pytest
import yaml

from bnstudy.base import catalogue
from bnstudy.base.config import ConfigError, load_schema, validate
from conftest import ROOT

CONFIGS = sorted(p.name for p in (ROOT / "config").glob("*.yaml"))


@pytest.fixture(scope="module")
def schema():
    return load_schema(ROOT / "workflow" / "schemas" / "config.schema.yaml")


def load(name):
    with open(ROOT / "config" / name) as f:
        return yaml.safe_load(f)


def error(cfg, schema):
    try:
        validate(cfg, schema)
    except ConfigError as e:
        return str(e)
    return None


@pytest.mark.parametrize("name", CONFIGS)
def test_each_config_declares_exactly_the_families_its_studies_form(name):
    cfg = load(name)
    assert list(cfg["families"]) == list(catalogue.families(cfg))


def test_a_family_forms_only_where_its_condition_holds():
    """Batch renorm's family needs batch renorm; the learning-rate choice's families need folds."""
    cfg = load("test.yaml")
    assert {"renorm", "lr_choice", "lr_margin"} <= set(catalogue.families(cfg))
    cfg["normalisers"] = [n for n in cfg["normalisers"] if n != "batchrenorm"]
    del cfg["lr_sweep"]["folds"]
    formed = catalogue.families(cfg)
    assert "renorm" not in formed and "lr_choice" not in formed and "lr_margin" not in formed
    assert formed["lr_gap"] == "lr_sweep" and formed["normalisers"] == "batch_size"
    del cfg["renorm_ramp"]
    assert "renorm_ramp" not in catalogue.families(cfg)


@pytest.mark.parametrize(
    "change,message",
    [
        (
            lambda c: c["families"].pop("remedies"),
            "config error: families.remedies: not declared, but the study batch_size",
        ),
        (
            lambda c: c["families"].__setitem__("serving", c["families"]["equal_steps"]),
            "config error: families.serving: no study forms it",
        ),
        (
            lambda c: c.pop("renorm_ramp"),
            "config error: families.renorm_ramp: no study of this config forms it",
        ),
        (
            lambda c: c["families"]["renorm"].__setitem__("adjustment", "holm"),
            "config error: families.renorm.adjustment",
        ),
        (lambda c: c["families"]["lr_gap"].pop("smallest_effect"), "config error: families.lr_gap"),
        (
            lambda c: c["families"]["lr_gap"].__setitem__("smallest_effect", 0),
            "config error: families.lr_gap.smallest_effect",
        ),
        (
            lambda c: c["families"]["lr_gap"].__setitem__("over", "batch_sizes"),
            "config error: families.lr_gap.over",
        ),
    ],
    ids=["missing", "unknown", "study absent", "adjustment", "no smallest effect", "zero effect", "TeX special"],
)
def test_a_bad_declaration_is_refused_in_one_line(change, message, schema):
    cfg = copy.deepcopy(load("test.yaml"))
    assert error(cfg, schema) is None
    change(cfg)
    got = error(cfg, schema)
    assert got is not None and got.startswith(message), got
    assert "\n" not in got


def test_a_null_smallest_effect_is_accepted(schema):
    cfg = copy.deepcopy(load("test.yaml"))
    cfg["families"]["lr_gap"]["smallest_effect"] = None
    assert error(cfg, schema) is None
