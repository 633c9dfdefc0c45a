"""The accumulation study's declared families of comparisons for its tests (``families``: the config's
section, bnstudy.evaluation.families): the headline family ``accumulation`` and the exploratory
``accumulation_other``, each in either adjustment, the headline's smallest effect given."""

from __future__ import annotations


def section(headline: str = "bonferroni", other: str = "unadjusted", smallest_effect: float | None = 0.01) -> dict:
    """The section for the study's two families: ``headline`` and ``other`` their adjustments,
    ``smallest_effect`` the headline family's (the other declares none), as the test config does by
    default."""
    return {
        "accumulation": {
            "compares": "accumulation minus the true batch and minus the micro-batch",
            "over": "comparisons",
            "adjustment": headline,
            "smallest_effect": smallest_effect,
        },
        "accumulation_other": {
            "compares": "the other comparisons",
            "over": "comparisons",
            "adjustment": other,
            "smallest_effect": None,
        },
    }


def level(section: dict, family: str, confidence: float, micro_batches: int) -> float:
    """Each interval's level in ``family`` at ``micro_batches`` micro-batches, written out: the
    headline family's members are 2 comparisons x 2 modes per micro-batch, the other's the 5
    comparisons x 3 modes and 5 recomputed-minus-running intervals less those 4."""
    members = {"accumulation": 4 * micro_batches, "accumulation_other": 16 * micro_batches}[family]
    if section[family]["adjustment"] == "bonferroni":
        return 1 - (1 - confidence) / members
    return confidence


def family_of(name: str, mode: str) -> str:
    """The family of a comparison in a mode, written out."""
    headline = name in ("accumulate_vs_large", "accumulate_vs_small") and mode in ("inference", "recomputed")
    return "accumulation" if headline else "accumulation_other"
