"""The paper's check of each study's families against the declaration, its table and its macros."""

import pytest

from bnstudy.evaluation.families import declared
from bnstudy.paper import families

DECLARED = {
    "normalisers": dict(compares="b minus none", over="batch sizes", adjustment="bonferroni", smallest_effect=0.01),
    "equal_steps": dict(compares="at equal steps", over="batch sizes", adjustment="unadjusted", smallest_effect=None),
}
FORMED = {"normalisers": "batch_size", "equal_steps": "equal_steps"}


def summaries(**changes):
    out = {
        "batch_size": {"families": {"normalisers": declared(DECLARED, "normalisers").record(0.95, 6)}},
        "equal_steps": {"families": {"equal_steps": declared(DECLARED, "equal_steps").record(0.95, 2)}},
    }
    for key, value in changes.items():
        out["batch_size"]["families"]["normalisers"][key] = value
    return out


def test_records_that_match_the_declaration_pass_in_the_catalogues_order():
    checked = families.check(DECLARED, FORMED, summaries())
    assert [f.name for f, _ in checked] == ["normalisers", "equal_steps"]


@pytest.mark.parametrize(
    "change,word",
    [
        ({"adjustment": "unadjusted"}, "adjustment"),
        ({"level": 0.95}, "level"),
        ({"smallest_effect": 0.02}, "smallest_effect"),
    ],
)
def test_a_record_that_differs_stops_the_build_naming_the_file_and_family(change, word):
    with pytest.raises(families.FamilyMismatch) as e:
        families.check(DECLARED, FORMED, summaries(**change))
    message = str(e.value)
    assert message.startswith(f"results/summary/batch_size.json: family normalisers: {word}"), message
    assert "\n" not in message


def test_a_declared_family_a_study_did_not_record_stops_the_build():
    s = summaries()
    del s["equal_steps"]["families"]
    with pytest.raises(families.FamilyMismatch, match="equal_steps.json: family equal_steps: no record"):
        families.check(DECLARED, FORMED, s)


def test_table_and_macros_say_what_each_family_applied():
    checked = families.check(DECLARED, FORMED, summaries())
    rows = families.table_rows(checked)
    assert rows[0] == ["\\raggedright B minus none", "6 batch sizes", "Bonferroni", "99.17\\%", "1.00 points"]
    assert rows[1] == [
        "\\raggedright At equal steps",
        "2 batch sizes",
        "none (exploratory)",
        "95.00\\%",
        "none declared",
    ]
    m = families.macros(checked)
    assert m["familyNormalisersPhrase"] == "Bonferroni-adjusted over the 6 batch sizes"
    assert m["familyEqualStepsPhrase"] == "unadjusted (exploratory)"
    assert m["familyNormalisersTag"] == "adjusted" and m["familyEqualStepsTag"] == "unadjusted"
    assert m["familyNormalisersSmallestEffect"] == "1.00" and "familyEqualStepsSmallestEffect" not in m
    assert m["familiesCount"] == "2" and m["familiesAdjustedCount"] == "1"


def test_a_family_without_members_in_this_build_has_no_level():
    s = summaries()
    s["equal_steps"]["families"]["equal_steps"] = declared(DECLARED, "equal_steps").record(0.95, 0)
    checked = families.check(DECLARED, FORMED, s)
    assert checked[1][1]["level"] is None
    assert families.table_rows(checked)[1][1:4] == ["0 batch sizes", "none (exploratory)", "none formed"]
    assert "familyEqualStepsLevel" not in families.macros(checked)


def test_a_family_is_read_from_the_summary_of_the_section_that_records_it():
    """A study of two sections (companions and protocols) records a family in one section's summary: the
    check reads it there; recorded in neither, the study's first summary is named; in both, an error."""
    formed = {"normalisers": "batch_size", "equal_steps": "companions"}
    sections = {"batch_size": ["batch_size"], "companions": ["companions", "protocols"]}
    record = declared(DECLARED, "equal_steps").record(0.95, 2)
    found = {"batch_size": summaries()["batch_size"], "companions": {}}
    found["protocols"] = {"families": {"equal_steps": record}}
    at = families.recorded_in(formed, sections, found)
    assert at == {"normalisers": "batch_size", "equal_steps": "protocols"}
    assert [f.name for f, _ in families.check(DECLARED, at, found)] == ["normalisers", "equal_steps"]
    missing = found | {"protocols": {}}
    assert families.recorded_in(formed, sections, missing)["equal_steps"] == "companions"
    with pytest.raises(families.FamilyMismatch, match="results/summary/companions.json: family equal_steps: no record"):
        families.check(DECLARED, families.recorded_in(formed, sections, missing), missing)
    both = found | {"companions": {"families": {"equal_steps": record}}}
    with pytest.raises(families.FamilyMismatch, match="recorded in the summaries of companions, protocols"):
        families.recorded_in(formed, sections, both)
