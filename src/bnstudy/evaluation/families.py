"""Families of comparisons, declared in the config before the build (its ``families`` section).

A family is the set of intervals that one claim reads together: one comparison at every batch size
of its study, or every cell of a design. The config declares each family a study forms
(:data:`bnstudy.base.catalogue.Study.families`): what it compares and over what (``compares``,
``over``: words for the paper's table of families), the ``adjustment`` every interval of it gets
wherever it is quoted, and its ``smallest_effect``, the smallest difference in accuracy (a share:
0.01 is one point) that the text treats as mattering, or null for an exploratory family whose
verdicts are not read against one.

- ``bonferroni``: each of a family's ``m`` intervals at level ``1 - (1 - confidence) / m``, so all
  of them hold together with probability at least ``confidence``;
- ``unadjusted``: each at ``confidence``, unadjusted, and the text calls such intervals exploratory.

A study takes its family from the declaration (:func:`declared`), forms the intervals at
:meth:`Family.level`, words them with :meth:`Family.tag` and :meth:`Family.phrase`, and records
what it applied in its summary (:meth:`Family.record`, under the summary's ``families`` key). The
rule ``families`` (:mod:`bnstudy.paper.families`) reads every record against the declaration before
the paper is built and refuses a build where the two differ, so the declared adjustment is the one
every quoted interval of the family has.
"""

from __future__ import annotations

from dataclasses import dataclass

from bnstudy.base.stats import adjusted_confidence

ADJUSTMENTS = ("bonferroni", "unadjusted")


def within(lo: float, hi: float, margin: float | None) -> bool | None:
    """Whether an interval ``[lo, hi]`` lies wholly inside ``(-margin, +margin)``: two one-sided tests,
    each at half the interval's error rate, reject a difference of ``margin`` or more (the equivalence
    test every study reads against a family's smallest effect); None where no margin is declared."""
    if margin is None:
        return None
    return -margin < lo and hi < margin


@dataclass(frozen=True)
class Family:
    """One declared family (see the module's docstring)."""

    name: str
    compares: str
    over: str
    adjustment: str
    smallest_effect: float | None

    def __post_init__(self):
        if self.adjustment not in ADJUSTMENTS:
            raise ValueError(f"families.{self.name}.adjustment: {self.adjustment!r} is not one of {ADJUSTMENTS}")

    @property
    def adjusted(self) -> bool:
        """Whether the family's intervals are adjusted for multiplicity."""
        return self.adjustment != "unadjusted"

    def level(self, confidence: float, members: int) -> float:
        """The level of each of the family's ``members`` intervals."""
        if members < 1:
            raise ValueError(f"family {self.name}: a family has at least one member, got {members}")
        return adjusted_confidence(confidence, members) if self.adjusted else confidence

    def within(self, lo: float, hi: float) -> bool | None:
        """:func:`within` the family's smallest effect (None where it declares none)."""
        return within(lo, hi, self.smallest_effect)

    @property
    def tag(self) -> str:
        """How the text names one of its intervals: ``adjusted`` or ``unadjusted``."""
        return "adjusted" if self.adjusted else "unadjusted"

    def members_text(self, members: int) -> str:
        """``6 batch sizes``; one member in the singular, ``1 batch size`` (``over`` is a plural noun
        phrase ending in s, as the schema says)."""
        return f"{members} {self.over[:-1] if members == 1 and self.over.endswith('s') else self.over}"

    def phrase(self, members: int) -> str:
        """The adjustment in words: ``Bonferroni-adjusted over the 6 batch sizes`` or
        ``unadjusted (exploratory)``; a family of one is adjusted by nothing: ``Bonferroni-adjusted
        over its 1 batch size, so at the unadjusted level``."""
        if not self.adjusted:
            return "unadjusted (exploratory)"
        if members == 1:
            return f"Bonferroni-adjusted over its {self.members_text(1)}, so at the unadjusted level"
        return f"Bonferroni-adjusted over the {self.members_text(members)}"

    def record(self, confidence: float, members: int) -> dict:
        """What a study applied, for its summary's ``families`` key (``members`` 0: the study formed
        no member in this build, such as no cell whose chosen rate differs from the grid's; no level)."""
        return {
            "adjustment": self.adjustment,
            "members": int(members),
            "confidence": confidence,
            "level": self.level(confidence, members) if members else None,
            "smallest_effect": self.smallest_effect,
        }


def declared(families: dict, name: str) -> Family:
    """Family ``name`` of a config's ``families`` section (``families``: that section)."""
    if name not in families:
        raise KeyError(f"config error: families.{name}: the family is not declared")
    d = families[name]
    return Family(name, d["compares"], d["over"], d["adjustment"], d.get("smallest_effect"))
