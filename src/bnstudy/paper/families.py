"""The declared families of comparisons against what the studies applied, and the paper's table of them.

The config declares each family of comparisons before the build (its ``families`` section:
:mod:`bnstudy.evaluation.families`); each study records in its summary, under ``families``, what it
applied to that family: the adjustment, the number of members, the confidence and each interval's
level, and the smallest effect its verdicts were read against. :func:`check` reads every record
against the declaration and raises one line, naming the summary file and the family, where a study
applied anything else or recorded nothing: so the adjustment the config declares is the one every
quoted interval of the family has. :func:`table` and :func:`macros` then give the Methods section
its table of families and the words the sections use for each family's intervals
(``\\familyNormalisersPhrase``: "Bonferroni-adjusted over the 6 batch sizes").
"""

from __future__ import annotations

from bnstudy.evaluation.families import Family, declared
from bnstudy.paper import latex


class FamilyMismatch(ValueError):
    """A study's record of a family differs from the config's declaration."""


def check(declarations: dict, formed: dict[str, str], summaries: dict[str, dict], where=None) -> list[tuple]:
    """``[(family, record)]`` of every family ``formed`` (``{family: study}``, the catalogue's) in
    the paper's order, each study's record (``summaries``: ``{study: its summary}``) checked against
    ``declarations`` (the config's ``families``); ``where(study)`` names a summary in messages."""
    where = where or (lambda study: f"results/summary/{study}.json")
    out = []
    for name, study in formed.items():
        family = declared(declarations, name)
        record = summaries[study].get("families", {}).get(name)
        if record is None:
            raise FamilyMismatch(f"{where(study)}: family {name}: no record of it, but the config declares it")
        expected = family.record(record["confidence"], record["members"])
        for key in ("adjustment", "smallest_effect", "level"):
            if record[key] != expected[key]:
                raise FamilyMismatch(
                    f"{where(study)}: family {name}: {key} {record[key]!r} applied, "
                    f"the config's families.{name} gives {expected[key]!r}"
                )
        out.append((family, record))
    return out


def recorded_in(formed: dict[str, str], sections: dict[str, list[str]], summaries: dict[str, dict]) -> dict[str, str]:
    """``{family: section}``: of the study that forms each family (``formed``: ``{family: study}``), the
    section (``sections``: ``{study: its sections}``) whose summary (``summaries``: ``{section: its
    summary}``) records the family, for :func:`check`; a study's first section where none does (the check
    then names that summary). A family recorded in two summaries of one study is an error."""
    out = {}
    for name, study in formed.items():
        holding = [s for s in sections[study] if name in summaries[s].get("families", {})]
        if len(holding) > 1:
            raise FamilyMismatch(f"family {name}: recorded in the summaries of {', '.join(holding)}, one of them only")
        out[name] = holding[0] if holding else sections[study][0]
    return out


def _smallest(family: Family) -> str:
    if family.smallest_effect is None:
        return "none declared"
    return f"{latex.fmt(100 * family.smallest_effect, 2)} points"


def table_rows(checked: list[tuple]) -> list[list[str]]:
    """One row per family: what it compares, its members, adjustment, each interval's level, smallest effect."""
    rows = []
    for family, record in checked:
        members = family.members_text(record["members"])
        adjustment = "Bonferroni" if family.adjusted else "none (exploratory)"
        level = "none formed" if record["level"] is None else latex.fmt(record["level"], 2, percent=True)
        # ragged right: a justified narrow column stretches its spaces (underfull boxes); the row ends
        # in the last column, outside this cell's \raggedright
        compares = "\\raggedright " + latex.escape(family.compares[0].upper() + family.compares[1:])
        rows.append([compares, latex.escape(members), adjustment, level, _smallest(family)])
    return rows


HEADER = ["Comparison", "Members", "Adjustment", "Level", "Smallest effect"]


def macros(checked: list[tuple]) -> dict[str, str]:
    """Per family: ``family<Name>Phrase`` (its adjustment in words, with its members), ``...Tag``
    (``adjusted`` or ``unadjusted``), ``...Members``, ``...Level`` and ``...SmallestEffect``
    (points; absent where none is declared; ``...Level`` is absent where no member was formed);
    and ``familiesCount``, ``familiesAdjustedCount``."""
    m = {
        "familiesCount": str(len(checked)),
        "familiesAdjustedCount": str(sum(f.adjusted for f, _ in checked)),
    }
    for family, record in checked:
        name = family.name.replace("_", " ")
        m[latex.macro_name("family", name, "phrase")] = family.phrase(record["members"])
        m[latex.macro_name("family", name, "tag")] = family.tag
        m[latex.macro_name("family", name, "members")] = str(record["members"])
        if record["level"] is not None:
            m[latex.macro_name("family", name, "level")] = latex.fmt(record["level"], 2, percent=True)
        if family.smallest_effect is not None:
            m[latex.macro_name("family", name, "smallest effect")] = latex.fmt(100 * family.smallest_effect, 2)
    return m
