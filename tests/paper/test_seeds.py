"""The Methods' grid seeds: the list (a long consecutive run as a range) and which seeds the
follow-up studies take, in every variant."""

import pytest

from bnstudy.paper.seeds import follow_up_macros, seed_list
from test_sentences import problems


@pytest.mark.parametrize(
    "seeds, text",
    [
        ([0], "0"),
        ([0, 1], "0 and 1"),
        ([0, 1, 2, 3, 4], "0, 1, 2, 3 and 4"),
        ([4, 0, 2, 1, 3, 5], "0 to 5"),
        (list(range(20)), "0 to 19"),
        ([0, 1, 2, 3, 4, 6], "0, 1, 2, 3, 4 and 6"),
    ],
)
def test_seed_list(seeds, text):
    assert seed_list(seeds) == text


def config(follow_up, studies=("serving", "accumulation", "finetune", "precise_rows")):
    grid = {"seeds": list(range(20)), "seed_block": 5} | ({} if follow_up is None else {"follow_up_seeds": follow_up})
    return {"grid": grid} | {name: {} for name in studies}


def test_no_sentence_where_the_follow_ups_take_every_seed():
    assert follow_up_macros(config(None)) == {}
    assert follow_up_macros(config(list(range(20)))) == {}


@pytest.mark.parametrize("studies", [(), ("serving",), ("serving", "accumulation", "finetune", "precise_rows")])
@pytest.mark.parametrize("follow_up", [[0, 1, 2, 3, 4], list(range(10))])
def test_the_sentence_names_the_seeds_the_blocks_and_each_follow_up_study(studies, follow_up):
    text = follow_up_macros(config(follow_up, studies))["gridFollowUpSentence"]
    assert not problems(text), text
    assert text.startswith(f"Only the grid's seeds {seed_list(follow_up)} ({len(follow_up)} networks a cell")
    assert ("its first seed block)" in text) == (len(follow_up) == 5)
    assert text.endswith("use all 20.")  # no study with seeds of its own here
    for key, what in (("serving", "serving"), ("accumulation", "gradient accumulation"), ("finetune", "fine-tuning")):
        assert (what in text) == (key in studies), (key, text)
    assert ("PreciseBN on a budget" in text) == ("precise_rows" in studies)


@pytest.mark.parametrize(
    "own, tail",
    [
        (
            {"equal_steps": [0, 1, 2, 3]},
            "use all 20; 1 study sets seeds of its own: batch size at equal steps (0, 1, 2 and 3 of the grid's).",
        ),
        (
            {"lr_sweep": [0, 1], "equal_steps": [0, 1, 2, 3], "renorm_ramp": list(range(10))},
            "use all 20; 3 studies set seeds of their own: the learning-rate sweep (0 and 1, networks of its own), "
            "batch size at equal steps (0, 1, 2 and 3 of the grid's) and batch renormalisation's ramp (0 to 9 of the "
            "grid's).",
        ),
    ],
)
def test_the_sentence_names_the_seeds_of_the_studies_that_set_their_own(own, tail):
    """A study with seeds of its own (equal steps: 4 of the grid's) is not described by the first seed
    block the other follow-ups take: the Methods name its seeds."""
    cfg = config([0, 1, 2, 3, 4]) | {key: {"seeds": seeds} for key, seeds in own.items()}
    text = follow_up_macros(cfg)["gridFollowUpSentence"]
    assert text.endswith(tail) and not problems(text), text


@pytest.mark.parametrize("precise", [False, True])
@pytest.mark.parametrize("equal_steps", [None, [0, 1, 2, 3, 4], [0, 1, 2, 3]])
@pytest.mark.parametrize("renorm_ramp", [None, [0, 1, 2, 3, 4], list(range(10))])
def test_the_limitations_count_each_follow_up_study_with_its_own_seeds(precise, equal_steps, renorm_ramp):
    """The Limitations' count of the follow-up studies' seeds names every study whose number differs
    from the follow-up block's (PreciseBN on a budget reads all 20), with its number."""
    cfg = config([0, 1, 2, 3, 4], ("serving",) + (("precise_rows",) if precise else ()))
    for key, seeds in (("equal_steps", equal_steps), ("renorm_ramp", renorm_ramp)):
        if seeds is not None:
            cfg[key] = {"seeds": seeds}
    text = follow_up_macros(cfg)["gridFollowUpSeedsPhrase"]
    assert not problems(text), text
    named = {
        "PreciseBN on a budget": "all 20" if precise else None,
        "batch size at equal steps": None if equal_steps in (None, [0, 1, 2, 3, 4]) else "4",
        "batch renormalisation's ramp": None if renorm_ramp in (None, [0, 1, 2, 3, 4]) else "10",
    }
    for name, n in named.items():
        assert (name in text) == (n is not None), (name, text)
        if n is not None:
            assert f"{name} {n}" in text or f"{name} uses {n}" in text, text
    exceptions = any(n is not None for n in named.values())
    assert text.startswith("most follow-up studies use 5 of them; " if exceptions else "the follow-up studies use 5")
