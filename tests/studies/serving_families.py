"""The serving study's declared families of comparisons for its tests: the test config's declarations
(``config/test.yaml``) in either adjustment, as the config's section (for ``summarise``) and as
:class:`bnstudy.evaluation.families.Family` objects by name (for the report)."""

from __future__ import annotations

import dataclasses

from bnstudy.evaluation.families import ADJUSTMENTS
from declared_families import declared_as

NAMES = ("serving_order", "serving_change", "serving_adaptation")


def families(adjustment: str = "bonferroni", **others: str) -> dict:
    """``{name: Family}`` of the study's families, each with ``adjustment``; ``others``: ``{name:
    adjustment}`` for a family declared otherwise."""
    return {name: declared_as(name, others.get(name, adjustment)) for name in NAMES}


def section(adjustment: str = "bonferroni", **others: str) -> dict:
    """The config's ``families`` section of the study's families (:func:`families`)."""
    return {name: dataclasses.asdict(f) for name, f in families(adjustment, **others).items()}


FAMILIES = {a: families(a) for a in ADJUSTMENTS}
SECTION = {a: section(a) for a in ADJUSTMENTS}
