"""The grid's seeds in the Methods: the list, and which seeds the follow-up studies take.

With ``grid.follow_up_seeds`` the batch-size study (its paired comparisons, remedies and PreciseBN
on a budget) reads every grid seed while the follow-up studies, whose per-network work is larger,
read the first seed blocks only (``workflow/rules/common.smk``: ``FOLLOW_UP_BLOCKS``); the
Methods say which, from the config.
"""

from __future__ import annotations

# Runs of consecutive seeds longer than this are written as a range ("0 to 19").
LONGEST_LISTED = 5


def seed_list(seeds) -> str:
    """``[0, 1]`` -> ``0 and 1``; ``[0, 1, 2, 3, 4]`` -> ``0, 1, 2, 3 and 4``; a consecutive run of
    more than :data:`LONGEST_LISTED` seeds -> ``0 to 19``."""
    values = sorted(int(s) for s in seeds)
    if len(values) > LONGEST_LISTED and values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]} to {values[-1]}"
    text = [str(v) for v in values]
    return text[0] if len(text) == 1 else ", ".join(text[:-1]) + " and " + text[-1]


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


# The follow-up studies that draw their own seeds from the grid's (config key ``seeds``), in the
# paper's order, with their names in the Limitations.
OWN_SEEDS = (("equal_steps", "batch size at equal steps"), ("renorm_ramp", "batch renormalisation's ramp"))


def seeds_phrase(config: dict, follow_up) -> str:
    """The Limitations' ``most follow-up studies use 5 of them; ...``: the studies whose number
    of seeds is not the follow-up block's (PreciseBN on a budget reads every grid seed; batch size at
    equal steps and batch renormalisation's ramp take their own), each with its number."""
    count = len(config["grid"]["seeds"])
    others = [("PreciseBN on a budget", f"all {count}")] if "precise_rows" in config else []
    for key, name in OWN_SEEDS:
        own = (config.get(key) or {}).get("seeds")
        if own is not None and len(own) != len(follow_up):
            others.append((name, str(len(own))))
    if not others:
        return f"the follow-up studies use {len(follow_up)} of them"
    (first, n), *rest = others
    listed = [f"{first} uses {n}"] + [f"{name} {n}" for name, n in rest]
    tail = listed[0] if len(listed) == 1 else ", ".join(listed[:-1]) + " and " + listed[-1]
    return f"most follow-up studies use {len(follow_up)} of them; {tail}"


def follow_up_macros(config: dict) -> dict[str, str]:
    """``gridFollowUpSentence``, ``gridFollowUpSeeds`` (their number) and ``gridFollowUpSeedsPhrase``
    (:func:`seeds_phrase`) where ``grid.follow_up_seeds`` takes some of the grid's seeds."""
    grid = config["grid"]
    follow_up = grid.get("follow_up_seeds")
    if follow_up is None or set(follow_up) == set(grid["seeds"]):
        return {}
    parts = follow_up_parts(config)
    listed = ", ".join(parts[:-1]) + " and " + parts[-1]
    precise = " and PreciseBN on a budget" if "precise_rows" in config else ""
    blocks = "its first seed block" if len(follow_up) <= grid["seed_block"] else "its first seed blocks"
    sentence = (
        f"The follow-up studies use the grid's seeds {seed_list(follow_up)} only ({len(follow_up)} networks a "
        f"cell, {blocks}): {listed}; the batch-size comparisons, their remedies{precise} use all "
        f"{len(grid['seeds'])}."
    )
    return {
        "gridFollowUpSentence": sentence,
        "gridFollowUpSeeds": str(len(follow_up)),
        "gridFollowUpSeedsPhrase": seeds_phrase(config, follow_up),
    }
