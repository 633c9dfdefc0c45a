"""Whether one network drives a mean over networks, and the words that say so beside the mean.

The rule (:func:`drives`): a mean over three or more networks is *driven by one network* when the
largest value exceeds the sum of all the others, that is, when that one network contributes more
than half of the mean. The values are shares (never negative), so the rule compares like with
like; it reads the unrounded values. With two networks the rule is not applied: of two unequal
values the larger always exceeds the other, so it would call every mean of two driven; with one
network there is no mean over networks to speak of.

Where the rule holds, the text gives every network's value (seeds ascending) and the median beside
the mean (:func:`driven_clause`), and states the rule it applied. Nothing here depends on the CPU:
the median of an odd count is one of the values, of an even count the correctly rounded half-sum
of the two middle ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bnstudy.paper.latex import words
from bnstudy.paper.network_prose import number_word

MIN_NETWORKS = 3  # below this the rule is not applied (module docstring)


def drives(values: Sequence[float]) -> bool:
    """True when one value of three or more exceeds the sum of the others (module docstring)."""
    values = sorted(float(v) for v in values)
    if len(values) < MIN_NETWORKS:
        return False
    rest = 0.0
    for v in values[:-1]:  # ascending: the same sum for the same values in any order
        rest += v
    return values[-1] > rest


def median(values: Sequence[float]) -> float:
    """The middle value, or the half-sum of the two middle ones (exact to the last bit: x / 2 is exact)."""
    values = sorted(float(v) for v in values)
    if not values:
        raise ValueError("the median of no values")
    half = len(values) // 2
    return values[half] if len(values) % 2 else values[half - 1] / 2 + values[half] / 2


def driven_clause(values: Sequence[float], seeds: Sequence[int], fmt: Callable[[float], str]) -> str:
    """Words that follow a mean driven by one network: `` (one network drives this mean, its value
    exceeding the sum of the other four: per network 1.0\\%, 3.1\\%, 4.0\\%, 1.3\\% and 33.8\\%
    for seeds 0, 1, 2, 3 and 4; median 3.1\\%)``, each value printed by ``fmt``; empty where no network drives it
    (:func:`drives`). ``values[i]`` is the network of ``seeds[i]``; printed in seed order."""
    if len(values) != len(seeds):
        raise ValueError(f"{len(values)} values for {len(seeds)} seeds")
    if not drives(values):
        return ""
    pairs = sorted(zip((int(s) for s in seeds), (float(v) for v in values)))
    others = number_word(len(pairs) - 1)
    listed = words([fmt(v) for _, v in pairs])
    seed_words = words([str(s) for s, _ in pairs])
    return (
        f" (one network drives this mean, its value exceeding the sum of the other {others}: per network "
        f"{listed} for seeds {seed_words}; median {fmt(median(values))})"
    )
