"""The paper's sections type no number: every value comes from a macro the pipeline writes.

Digits may appear only in names (float32, AVX-512, SHA-256...), in the structure of a
formula ($b-1$, $1-k^u$, $\\gamma^2$: the digits 0, 1 and 2 in math mode), and in the one
worked example of a conformance check listed below. Anything else is a number typed beside
the macros, which a change of config could leave wrong (issue 15)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SECTIONS = Path(__file__).resolve().parents[2] / "paper" / "sections"

# Names and fixed facts that contain digits; removed before the check.
NAMES = (
    "BatchNorm1d",
    "float32",
    "float64",
    "x86-64",
    "x86",
    "AVX-512",
    "AVX2",
    "IEEE~754",
    "PCG64",
    "SHA-256",
    "study~1",
    "fvcore",
    # PyTorch's initial running statistics, by definition
    "running values 0 and 1",
    "(mean~0, variance~1)",
    # the fine-tuning arm named by its momentum (training mode, the statistics never updated)
    "momentum~0",
    # a worked example of the conformance suite: the input and its normalised output
    "$2,4,4,6$ to about $-1.41, 0, 0, 1.41$",
    # the range a difference of two percentages can take, by definition
    "$[-100, +100]$ points",
)
MATH_DIGITS = {"0", "1", "2"}  # $b-1$, $N-1$, $1-k^u$, $\gamma^2$, $2\times$, $\pm1$


def prose(tex: str) -> str:
    """The section without comments, cross-reference and file arguments, macro names and NAMES."""
    tex = re.sub(r"(?<!\\)%.*", "", tex)
    tex = re.sub(r"\\(label|ref|cite|input|includegraphics)(\[[^\]]*\])?\{[^}]*\}", "", tex)
    tex = re.sub(r"\\setlength\{[^}]*\}\{[^}]*\}", "", tex)  # a layout length, not a result
    tex = re.sub(r"\\[A-Za-z]+", "", tex)
    for name in sorted(NAMES, key=len, reverse=True):
        tex = tex.replace(re.sub(r"\\[A-Za-z]+", "", name), " ")
    return tex


def typed_numbers(tex: str) -> list[str]:
    """Numbers left in ``tex`` after :func:`prose`: any outside math mode, and in math mode
    any but the single digits of a formula's structure (a digit assigned to a variable,
    as in $b=2$, is a typed value)."""
    found = []
    for i, part in enumerate(re.split(r"(?<!\\)\$", prose(tex))):
        in_math = i % 2 == 1
        for match in re.finditer(r"\d+(?:\.\d+)?", part):
            number = match.group(0)
            assigned = re.search(r"[A-Za-z}]\s*=\s*$", part[: match.start()])  # $b=2$: a typed value
            if not (in_math and number in MATH_DIGITS and not assigned):
                found.append(f"{number} in {'$' + part + '$' if in_math else part.strip()[:80]!r}")
    return found


@pytest.mark.parametrize("path", sorted(p for p in SECTIONS.glob("*.tex") if p.name != "references.tex"), ids=str)
def test_sections_type_no_number(path):
    assert typed_numbers(path.read_text()) == []


def test_typed_numbers_are_found_beside_macros_and_in_math():
    found = typed_numbers(r"at $b=2, 4, 16, 64$ the flip rate is \compFlipMin{} (95\% interval)")
    assert [f.split()[0] for f in found] == ["2", "4", "16", "64", "95"]
    assert typed_numbers(r"at $b=\compSizeMin$, $1-k^u$ and $\gamma^2$; float64, \ref{sec:2}") == []
    assert [f.split()[0] for f in typed_numbers(r"at $b=2$ and $r_{\max}=1$, with $\gamma=1$")] == ["2", "1"]
    assert typed_numbers("% a comment with 42\nno number") == []
