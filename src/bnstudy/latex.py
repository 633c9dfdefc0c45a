"""LaTeX build products: macros for every number in the prose, and tables."""

from __future__ import annotations

import math
import re

from .io import write_text

_DIGITS = {
    str(i): w for i, w in enumerate(["Zero", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine"])
}


def macro_name(*parts) -> str:
    """A valid TeX control-sequence name from parts: ('flip', 'b', 16) -> 'flipBOneSix'."""
    words = []
    for part in parts:
        for token in re.split(r"[^A-Za-z0-9]+", str(part)):
            if not token:
                continue
            token = "".join(_DIGITS.get(ch, ch) for ch in token)
            words.append(token[0].upper() + token[1:])
    name = "".join(words)
    return name[0].lower() + name[1:]


def fmt(value, digits: int = 3, percent: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, int) and not percent:
        return f"{value:,}".replace(",", "{,}")
    if percent:
        return f"{100 * value:.{digits}f}\\%"
    return f"{value:.{digits}f}"


def write_macros(path, macros: dict[str, str], comment: str) -> None:
    """``\\newcommand`` per entry, sorted, so the file is byte-stable."""
    lines = [f"% {comment}", "% Written by the pipeline; do not edit."]
    for name in sorted(macros):
        if not re.fullmatch(r"[A-Za-z]+", name):
            raise ValueError(f"invalid macro name {name!r}")
        lines.append(f"\\newcommand{{\\{name}}}{{{macros[name]}}}")
    write_text(path, "\n".join(lines) + "\n")


def write_table(path, header: list[str], rows: list[list[str]], align: str, caption_comment: str = "") -> None:
    """A booktabs ``tabular`` body (the float and caption live in the section file)."""
    lines = [
        f"% {caption_comment}" if caption_comment else "% generated table",
        f"\\begin{{tabular}}{{{align}}}",
        "\\toprule",
        " & ".join(header) + " \\\\",
        "\\midrule",
    ]
    lines += [" & ".join(r) + " \\\\" for r in rows]
    lines += ["\\bottomrule", "\\end{tabular}"]
    write_text(path, "\n".join(lines) + "\n")


def escape(text: str) -> str:
    """Escape TeX's special characters in plain text."""
    table = {
        "\\": r"\textbackslash{}",
        "&": r"\&",
        "%": r"\%",
        "$": r"\$",
        "#": r"\#",
        "_": r"\_",
        "{": r"\{",
        "}": r"\}",
        "~": r"\textasciitilde{}",
        "^": r"\textasciicircum{}",
    }
    return "".join(table.get(ch, ch) for ch in str(text))


def verdict(lo: float, hi: float) -> str:
    """Where an interval lies with respect to zero, in words."""
    if hi < 0:
        return "lies wholly below zero"
    if lo > 0:
        return "lies wholly above zero"
    return "contains zero"


def _finite(value) -> bool:
    return value is not None and math.isfinite(value)


def points(value, digits: int = 1) -> str:
    """A share in percent, without the sign: ``0.8431`` -> ``84.3``; ``n/a`` for a missing
    or non-finite value."""
    return fmt(100 * float(value), digits) if _finite(value) else "n/a"


def signed_points(value, digits: int = 2) -> str:
    """A difference of shares in signed percentage points: ``0.0123`` -> ``+1.23``; ``n/a``
    for a missing or non-finite value."""
    return f"{100 * value:+.{digits}f}" if _finite(value) else "n/a"


def math_points(value, digits: int = 1) -> str:
    """A difference of shares in signed percentage points, in math mode: ``0.0123`` ->
    ``$+1.2$``; a value that rounds to zero, of either sign, prints unsigned: ``$0.0$``."""
    text = f"{100 * value:+.{digits}f}"
    return "$" + (text[1:] if float(text) == 0 else text) + "$"


def math_points_interval(entry: dict, digits: int = 1) -> str:
    """``entry["ci"]`` as ``[$-8.7$, $+3.1$]`` (:func:`math_points`)."""
    lo, hi = entry["ci"]
    return f"[{math_points(lo, digits)}, {math_points(hi, digits)}]"


def points_interval(lo, hi, signed: bool = False, digits: int | None = None) -> str:
    """``[lo, hi]`` in percent (signed: in signed percentage points), ``digits`` decimals
    (by default those of :func:`points` or :func:`signed_points`)."""
    f = signed_points if signed else points
    if digits is None:
        return f"[{f(lo)}, {f(hi)}]"
    return f"[{f(lo, digits)}, {f(hi, digits)}]"


def words(items) -> str:
    """A list in prose: ``2``; ``2 and 4``; ``2, 4 and 16``; empty for none."""
    items = list(items)
    if len(items) < 2:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def power_of_ten(value: float) -> str:
    """One significant digit times a power of ten, in math mode: ``3e-4`` ->
    ``$3 \\times 10^{-4}$``; zero as ``$0$``."""
    if value == 0:
        return "$0$"
    mantissa, exponent = f"{value:.0e}".split("e")
    return f"${mantissa} \\times 10^{{{int(exponent)}}}$"
