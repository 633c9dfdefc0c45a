"""A family of comparisons as the test config declares it (``config/test.yaml``, its ``families``
section), in either adjustment, for the tests that render a study's text under both declarations."""

from __future__ import annotations

import dataclasses
from functools import cache
from pathlib import Path

import yaml

from bnstudy.evaluation.families import ADJUSTMENTS, Family, declared

ROOT = Path(__file__).resolve().parents[1]


@cache
def _section() -> dict:
    return yaml.safe_load((ROOT / "config" / "test.yaml").read_text())["families"]


def declared_as(name: str, adjustment: str) -> Family:
    """Family ``name`` of the test config with ``adjustment`` (one of :data:`ADJUSTMENTS`) in place of
    the declared one: its words (``compares``, ``over``) and smallest effect as declared."""
    assert adjustment in ADJUSTMENTS
    return dataclasses.replace(declared(_section(), name), adjustment=adjustment)
