"""When one network drives a mean over networks (bnstudy.studies.companions.driven): the rule, the median
and every variant of the words printed beside such a mean, against values written out here."""

from __future__ import annotations

import pytest

from bnstudy.studies.companions import driven


@pytest.mark.parametrize(
    "values,drives",
    [
        ([0.010, 0.031, 0.040, 0.013, 0.338], True),  # 33.8 > 1.0 + 3.1 + 4.0 + 1.3
        ([0.055, 0.089, 0.076, 0.059, 0.367], True),  # 36.7 > 27.9
        ([0.285, 0.343, 0.279, 0.281, 0.506], False),  # 50.6 < 118.8
        ([0.1, 0.1, 0.2], False),  # equal to the others' sum: not more than half
        ([0.0, 0.0, 0.0], False),  # no network above the others
        ([0.0, 0.1, 0.0], True),
        ([0.01, 0.5], False),  # two networks: the rule is not applied
        ([0.3], False),
        ([], False),
    ],
)
def test_one_network_drives_a_mean_when_it_exceeds_the_sum_of_the_others(values, drives):
    assert driven.drives(values) is drives
    assert driven.drives(list(reversed(values))) is drives  # any order


def test_the_median_is_the_middle_value_or_the_half_sum():
    assert driven.median([0.3, 0.1, 0.2]) == 0.2
    assert driven.median([0.4, 0.1, 0.2, 0.3]) == 0.25
    assert driven.median([0.010, 0.031, 0.040, 0.013, 0.338]) == 0.031
    with pytest.raises(ValueError, match="^the median of no values$"):
        driven.median([])


def _pct(v):
    return f"{100 * v:.1f}\\%"


def test_the_words_beside_a_driven_mean_give_every_network_in_seed_order_and_the_median():
    text = driven.driven_clause([0.338, 0.010, 0.031, 0.040, 0.013], [4, 0, 1, 2, 3], _pct)
    assert text == (
        " (one network drives this mean, its value exceeding the sum of the other four: per network "
        "1.0\\%, 3.1\\%, 4.0\\%, 1.3\\% and 33.8\\% for seeds 0, 1, 2, 3 and 4; median 3.1\\%)"
    )
    three = driven.driven_clause([0.0, 0.1, 0.0], [5, 7, 9], _pct)
    assert three == (
        " (one network drives this mean, its value exceeding the sum of the other two: per network "
        "0.0\\%, 10.0\\% and 0.0\\% for seeds 5, 7 and 9; median 0.0\\%)"
    )
    eleven = driven.driven_clause([0.0] * 10 + [0.5], list(range(11)), _pct)
    assert "the sum of the other ten: per network" in eleven


@pytest.mark.parametrize("values", [[0.2, 0.21, 0.19], [0.01, 0.5], [0.0, 0.0, 0.0]])
def test_a_mean_no_network_drives_gets_no_words(values):
    assert driven.driven_clause(values, list(range(len(values))), _pct) == ""


def test_values_and_seeds_must_pair():
    with pytest.raises(ValueError, match=r"^3 values for 2 seeds$"):
        driven.driven_clause([0.1, 0.2, 0.3], [0, 1], _pct)
