"""The companions section's variance components over networks and examples
(bnstudy.studies.companions.macros.components_macros): a component whose method-of-moments
estimate falls to or below zero is set to zero, and the text says so instead of printing ``0%``
and ``0.0 points`` as if measured. Every variant rendered in its place in the section."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from bnstudy.studies.companions.macros import floored_note, sd_words, share_words, shares_words
from test_sentences import problems, render

ROOT = Path(__file__).resolve().parents[2]
SECTION = (ROOT / "paper" / "sections" / "companions.tex").read_text()


def test_a_component_set_to_zero_reads_in_words():
    assert sd_words(0.0) == "zero"
    assert sd_words(0.000494) == "2.2 points"
    assert share_words(0.0, 0.0) == "none"
    assert share_words(0.2467, 0.0005) == "25\\%"
    assert share_words(0.004, 1e-6) == "under 1\\%"  # not zero, never printed as 0%
    assert share_words(0.047, None) == "5\\%"  # the residual is never set to zero
    assert floored_note({"networks": [], "examples": []}) == ""


def test_the_shares_printed_add_up_to_the_whole():
    """The digits' shares at b = 2 (24.6%, 70.6% and 4.8%) add up to 101 in whole percent: they get the
    one decimal at which they add up to 100; shares that do so whole stay whole; a share set to zero
    counts as zero."""
    assert shares_words([0.246, 0.706, 0.048], [1.0, 1.0, None]) == ["24.6\\%", "70.6\\%", "4.8\\%"]
    assert shares_words([0.25, 0.70, 0.05], [1.0, 1.0, None]) == ["25\\%", "70\\%", "5\\%"]
    assert shares_words([0.0, 0.92, 0.08], [0.0, 1.0, None]) == ["none", "92\\%", "8\\%"]
    assert shares_words([0.004, 0.9, 0.096], [1.0, 1.0, None]) == ["under 1\\%", "90\\%", "10\\%"]
    assert shares_words([0.004, 0.902, 0.094], [1.0, 1.0, None]) == ["0.4\\%", "90.2\\%", "9.4\\%"]
    assert share_words(0.0004, 1.0, 1) == "under 0.1\\%"
    for shares in ([1 / 3, 1 / 3, 1 / 3], [0.2467, 0.7061, 0.0472], [0.125, 0.125, 0.75]):
        said = shares_words(shares, [1.0, 1.0, None])
        decimals = {len(t.removesuffix("\\%").partition(".")[2]) for t in said}
        assert len(decimals) == 1, said  # one precision for the three
        total = sum(float(t.removesuffix("\\%")) for t in said)
        assert abs(total - 100) < 0.5 * 10.0 ** -decimals.pop() or said[0] == "33.33\\%", said


@pytest.mark.parametrize(
    "floored_min, floored_max",
    list(itertools.product([(), ("networks",), ("networks", "examples")], [(), ("networks",), ("examples",)])),
)
def test_every_variant_in_the_section(floored_min, floored_max):
    sizes = {"min": 2, "max": 64}
    var = {
        end: {who: 0.0 if who in f else 0.0005 for who in ("networks", "examples")}
        for end, f in (("min", floored_min), ("max", floored_max))
    }
    floored = {who: [sizes[e] for e in ("min", "max") if var[e][who] == 0] for who in ("networks", "examples")}
    macros = {"compSizeMin": "2", "compSizeMax": "64", "compComponentsFloored": floored_note(floored)}
    for end in ("Min", "Max"):
        v = var[end.lower()]
        macros[f"compSdNetworksSaid{end}"] = sd_words(v["networks"])
        macros[f"compSdExamplesSaid{end}"] = sd_words(v["examples"])
        macros[f"compShareNetworks{end}"] = share_words(0.3 if v["networks"] else 0.0, v["networks"])
        macros[f"compShareExamples{end}"] = share_words(0.6 if v["examples"] else 0.0, v["examples"])
        macros[f"compShareResidual{end}"] = share_words(0.1, None)
    text = render(SECTION, macros)
    start = text.index("Counting networks and examples together")
    passage = text[start : text.index("The exact rate", start)]
    assert not problems(passage), passage
    assert "0.0 points" not in passage and not re.search(r"(?<![0-9])0\\\\%", passage)
    assert passage.count("points") == sum(var["min"][w] > 0 for w in ("networks", "examples"))
    for who in ("networks", "examples"):
        said = re.search(rf"{who}' (variance component )?(is set to zero )?\(([^)]*)\)", passage)
        assert bool(said) == bool(floored[who]), passage
        if said:
            assert said.group(3) == " and ".join(f"$b={b}$" for b in floored[who])
    assert passage.count("method-of-moments") == (1 if any(floored.values()) else 0)


@pytest.mark.parametrize("renorm", [True, False])
def test_the_figure_caption_names_batch_renormalisation_only_where_the_grid_trains_it(renorm):
    """The bottom panels hold the grid's normalisers that use batch statistics; the CNN's grid has no
    batch renormalisation, and its caption read '..., batch renormalisation on its own scale.'"""
    start = SECTION.index("\\caption{Flip rate against the probe batch size")
    caption = SECTION[start : SECTION.index("\\label{fig:companions}", start)]
    keep = r"\1" if renorm else ""
    resolved = re.sub(r"\\ifdefined\\gridHasRenorm(.*?)\\fi", keep, caption, flags=re.S)
    tail = resolved[resolved.index("Bottom:") :]
    assert ("batch renormalisation" in tail) == renorm, tail
    assert tail.rstrip().endswith(("style).}", "own scale.}")[renorm]), tail
    assert not problems(tail), tail
