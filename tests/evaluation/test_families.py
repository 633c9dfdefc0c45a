"""A declared family gives each interval's level, its words and the record a study keeps."""

import pytest

from bnstudy.evaluation.families import Family, declared

SECTION = {
    "gap": {"compares": "a minus b", "over": "batch sizes", "adjustment": "bonferroni", "smallest_effect": 0.01},
    "margin": {"compares": "c minus d", "over": "cells", "adjustment": "unadjusted", "smallest_effect": None},
}


def test_bonferroni_divides_the_error_rate_among_the_members():
    gap = declared(SECTION, "gap")
    assert gap.level(0.95, 6) == pytest.approx(1 - 0.05 / 6)
    assert gap.level(0.95, 1) == pytest.approx(0.95)
    assert gap.tag == "adjusted" and gap.adjusted
    assert gap.phrase(6) == "Bonferroni-adjusted over the 6 batch sizes"


def test_an_unadjusted_family_keeps_the_level_and_says_so():
    margin = declared(SECTION, "margin")
    assert margin.level(0.95, 12) == 0.95
    assert margin.tag == "unadjusted" and not margin.adjusted
    assert margin.phrase(12) == "unadjusted (exploratory)"


def test_the_record_is_what_was_applied():
    record = declared(SECTION, "gap").record(0.95, 18)
    assert record == {
        "adjustment": "bonferroni",
        "members": 18,
        "confidence": 0.95,
        "level": pytest.approx(1 - 0.05 / 18),
        "smallest_effect": 0.01,
    }


def test_a_family_without_members_or_with_an_unknown_adjustment_is_an_error():
    with pytest.raises(ValueError, match="at least one member"):
        declared(SECTION, "gap").level(0.95, 0)
    with pytest.raises(ValueError, match="holm"):
        Family("x", "a", "b", "holm", None)
    with pytest.raises(KeyError, match="families.absent"):
        declared(SECTION, "absent")


def test_one_member_is_named_in_the_singular_and_its_adjustment_is_none_in_effect():
    gap = declared(SECTION, "gap")
    assert gap.members_text(1) == "1 batch size" and gap.members_text(2) == "2 batch sizes"
    assert gap.phrase(1) == "Bonferroni-adjusted over its 1 batch size, so at the unadjusted level"
    assert gap.level(0.95, 1) == 0.95
