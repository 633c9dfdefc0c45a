"""The grid's seeds in the Methods: the list, and which seeds the follow-up studies take.

With ``grid.follow_up_seeds`` the batch-size study (its paired comparisons, remedies and PreciseBN
on a budget) reads every grid seed while the follow-up studies, whose per-network work is larger,
read the first seed blocks only (``workflow/rules/common.smk``: ``FOLLOW_UP_BLOCKS``); the
Methods say which, from the config.
"""

from __future__ import annotations

from bnstudy.paper.latex import words

# Runs of consecutive seeds longer than this are written as a range ("0 to 19").
LONGEST_LISTED = 5


def seed_list(seeds) -> str:
    """``[0, 1]`` -> ``0 and 1``; ``[0, 1, 2, 3, 4]`` -> ``0, 1, 2, 3 and 4``; a consecutive run of
    more than :data:`LONGEST_LISTED` seeds -> ``0 to 19``."""
    values = sorted(int(s) for s in seeds)
    if len(values) > LONGEST_LISTED and values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]} to {values[-1]}"
    return words([str(v) for v in values])


def follow_up_parts(config: dict) -> list[str]:
    """The follow-up studies' uses of the grid's networks in ``config``, in the paper's order."""
    parts = [
        "the companion probes of the grid's networks",
        "the networks retrained with the leftover rows kept or on class-sorted batches",
    ]
    for key, what in (("serving", "serving"), ("accumulation", "gradient accumulation"), ("finetune", "fine-tuning")):
        if key in config:
            parts.append(what)
    return parts


# The studies whose config names seeds of their own, in the paper's order: the config key, the study's
# name, and whether they are some of the grid's seeds (its networks then pair with the grid's).
OWN_SEEDS = (
    ("lr_sweep", "the learning-rate sweep", False),
    ("equal_steps", "batch size at equal steps", True),
    ("renorm_ramp", "batch renormalisation's ramp", True),
)


def own_seeds_clause(config: dict) -> str:
    """``; 2 studies set seeds of their own: the learning-rate sweep (0 and 1, ...) and ...``: the
    studies in ``config`` that take seeds of their own (:data:`OWN_SEEDS`), so that the seeds of every
    follow-up study are said; empty where there are none."""
    parts = []
    for key, name, grids in OWN_SEEDS:
        seeds = config.get(key, {}).get("seeds")
        if seeds:
            whose = " of the grid's" if grids else ", networks of its own"
            parts.append(f"{name} ({seed_list(seeds)}{whose})")
    if not parts:
        return ""
    one = len(parts) == 1
    return (
        f"; {len(parts)} stud{'y sets' if one else 'ies set'} seeds of {'its' if one else 'their'} own: {words(parts)}"
    )


def seeds_phrase(config: dict, follow_up) -> str:
    """The Limitations' ``most follow-up studies use 5 of them; ...``: the studies whose number
    of the grid's seeds is not the follow-up block's (PreciseBN on a budget reads every grid seed; the
    studies of :data:`OWN_SEEDS` that draw from the grid's take their own), each with its number."""
    count = len(config["grid"]["seeds"])
    others = [("PreciseBN on a budget", f"all {count}")] if "precise_rows" in config else []
    for key, name, grids in OWN_SEEDS:
        own = (config.get(key) or {}).get("seeds")
        if grids and own is not None and len(own) != len(follow_up):
            others.append((name, str(len(own))))
    if not others:
        return f"the follow-up studies use {len(follow_up)} of them"
    (first, n), *rest = others
    return f"most follow-up studies use {len(follow_up)} of them; " + words(
        [f"{first} uses {n}"] + [f"{name} {n}" for name, n in rest]
    )


def follow_up_macros(config: dict) -> dict[str, str]:
    """``gridFollowUpSentence``, ``gridFollowUpSeeds`` (their number) and ``gridFollowUpSeedsPhrase``
    (:func:`seeds_phrase`) where ``grid.follow_up_seeds`` takes some of the grid's seeds; the sentence
    also names the seeds of the studies that set their own (:func:`own_seeds_clause`), which the first
    seed blocks do not describe."""
    grid = config["grid"]
    follow_up = grid.get("follow_up_seeds")
    if follow_up is None or set(follow_up) == set(grid["seeds"]):
        return {}
    parts = follow_up_parts(config)
    listed = ", ".join(parts[:-1]) + " and " + parts[-1]
    precise = " and PreciseBN on a budget" if "precise_rows" in config else ""
    blocks = "its first seed block" if len(follow_up) <= grid["seed_block"] else "its first seed blocks"
    sentence = (
        f"Only the grid's seeds {seed_list(follow_up)} ({len(follow_up)} networks a cell, {blocks}) serve "
        f"{listed}; the batch-size comparisons, their remedies{precise} use all {len(grid['seeds'])}"
        f"{own_seeds_clause(config)}."
    )
    return {
        "gridFollowUpSentence": sentence,
        "gridFollowUpSeeds": str(len(follow_up)),
        "gridFollowUpSeedsPhrase": seeds_phrase(config, follow_up),
    }
