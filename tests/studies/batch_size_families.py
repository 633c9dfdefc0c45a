"""The config's declared families of comparisons for study 2's tests (``families``: the config's section,
bnstudy.evaluation.families), with every family adjusted alike or one family declared otherwise."""

from __future__ import annotations

from bnstudy.evaluation.families import declared

NAMES = ("normalisers", "renorm", "remedies", "last_batch")


def section(adjustment: str = "bonferroni", smallest_effect: float | None = 0.01, **overrides: dict) -> dict:
    """The section for study 2's families, each ``adjustment`` with ``smallest_effect``; ``overrides``:
    ``{family: {key: value}}`` changed in one family."""
    out = {
        name: {
            "compares": f"the {name} comparison",
            "over": "batch sizes",
            "adjustment": adjustment,
            "smallest_effect": smallest_effect,
        }
        for name in NAMES
    }
    for name, changes in overrides.items():
        out[name] = out[name] | changes
    return out


def family(name: str, adjustment: str = "bonferroni", smallest_effect: float | None = 0.01):
    """One declared family (:class:`bnstudy.evaluation.families.Family`)."""
    return declared(section(adjustment, smallest_effect), name)


ADJUSTED = section()
UNADJUSTED = section("unadjusted")
