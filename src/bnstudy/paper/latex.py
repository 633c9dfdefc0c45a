"""LaTeX build products: macros for every number in the prose, and tables."""

from __future__ import annotations

import math
import re

from bnstudy.base.io import write_text

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


def verdict(lo: float, hi: float, plural: bool = False) -> str:
    """Where an interval lies with respect to zero, in words (``plural``: of several intervals).

    The verdict is taken on the exact ends; the printed ends agree with it because
    :func:`endpoint` prints a nonzero end with as many decimals as its sign needs."""
    verb = "lie" if plural else "lies"
    if hi < 0:
        return f"{verb} wholly below zero"
    if lo > 0:
        return f"{verb} wholly above zero"
    return "contain zero" if plural else "contains zero"


def two_verdicts(first: tuple[float, float], second: tuple[float, float]) -> str:
    """Where two intervals lie with respect to zero, each verdict said once: ``both intervals contain
    zero``, ``both lie wholly below zero``, or ``the first interval contains zero, the second lies
    wholly below zero``."""
    a, b = verdict(*first), verdict(*second)
    if a == b:
        return f"both intervals {verdict(*first, plural=True)}"
    return f"the first interval {a}, the second {b}"


def difference_clause(gain, lo, hi, other: str, digits: int = 2) -> str:
    """A paired difference ``A - B`` (shares) in words that agree with its interval, whatever its
    sign: ``a paired difference to {other} of $+0.06$ points [$-2.06$, $+2.18$], an interval that
    contains zero`` (never "above" or "below" ``other`` for an interval that contains zero)."""
    ci = points_interval(lo, hi, signed=True, digits=digits)
    return f"a paired difference to {other} of ${signed_points(gain, digits)}$ points ${ci}$, an interval that " + (
        verdict(lo, hi)
    )


def _finite(value) -> bool:
    return value is not None and math.isfinite(value)


MAX_EXTRA_DIGITS = 12


def endpoint(value, digits: int = 1, signed: bool = False, scale: float = 100.0, bounds=()) -> str:
    """``value * scale`` with ``digits`` decimals, and more where fewer would misprint it.

    The one formatting rule of every printed number that a verdict or a bound can read:
    a nonzero value that rounds to zero gets as many more decimals (up to
    :data:`MAX_EXTRA_DIGITS`) as it takes to show a nonzero digit, so its sign is
    printed truly (``0.0003`` at one decimal in points: ``+0.03``, never ``+0.0``,
    ``0.0`` or ``-0.0``); likewise a value that is not one of ``bounds`` (e.g. 0 and 1
    for a share) but rounds to one of them. A nonzero value still zero at that many decimals
    prints as its order of magnitude (``+4\\ensuremath{\\times 10^{-15}}``). Exact zero prints unsigned. ``signed``:
    a sign on every nonzero value. ``n/a`` for a missing or non-finite value.
    """
    if not _finite(value):
        return "n/a"
    v = float(value) * scale
    edges = [0.0] + [float(b) * scale for b in bounds]
    d = digits
    while True:
        text = f"{v:.{d}f}"
        rounded = float(text)
        if not any(rounded == e and v != e for e in edges) or d >= digits + MAX_EXTRA_DIGITS:
            break
        d += 1
    if v == 0:
        return f"{0:.{digits}f}"
    if float(text) == 0:  # beyond the extra decimals: the order of magnitude, never a signed zero
        mantissa, exponent = f"{v:.0e}".split("e")
        text = f"{mantissa}\\ensuremath{{\\times 10^{{{int(exponent)}}}}}"
    if signed and not text.startswith("-"):
        text = "+" + text
    return text


def points(value, digits: int = 1) -> str:
    """A share in percent, without the sign: ``0.8431`` -> ``84.3``; ``n/a`` for a missing
    or non-finite value; a share that is not 0 or 1 never prints as ``0.0`` or ``100.0``
    (:func:`endpoint`)."""
    return endpoint(value, digits, bounds=(1.0,))


def signed_points(value, digits: int = 2) -> str:
    """A difference of shares in signed percentage points: ``0.0123`` -> ``+1.23``; exact
    zero unsigned; a nonzero difference never prints as zero (:func:`endpoint`); ``n/a``
    for a missing or non-finite value."""
    return endpoint(value, digits, signed=True)


def math_points(value, digits: int = 1, margin: float | None = None) -> str:
    """A difference of shares in signed percentage points, in math mode: ``0.0123`` ->
    ``$+1.2$``; exact zero unsigned, ``$0.0$``; a nonzero value that rounds to zero gets the
    decimals its sign needs: ``-0.00049`` -> ``$-0.05$`` (:func:`endpoint`). ``margin``: a
    smallest effect the value is read against; a value that is not ``+-margin`` but rounds to
    it gets the decimals that tell it from the margin (``-0.01001`` -> ``$-1.001$``, never
    ``$-1.0$`` beside "reaches beyond $\\pm1.0$ points")."""
    bounds = () if margin is None else (-margin, margin)
    return "$" + endpoint(value, digits, signed=True, bounds=bounds) + "$"


def math_points_interval(entry: dict, digits: int = 1, margin: float | None = None) -> str:
    """``entry["ci"]`` as ``[$-8.7$, $+3.1$]`` (:func:`math_points`, each end read against
    ``margin`` where given); :data:`ALIKE` (in math mode) for a degenerate interval."""
    lo, hi = entry["ci"]
    if degenerate(lo, hi):
        return f"${ALIKE}$"
    return f"[{math_points(lo, digits, margin)}, {math_points(hi, digits, margin)}]"


ALIKE = "\\text{(every seed alike)}"


def degenerate(lo, hi) -> bool:
    """An interval of one point (both ends finite and equal): the values it is over are all alike
    (zero spread), and ``[x, x]`` would say nothing; print :data:`ALIKE` instead."""
    return _finite(lo) and _finite(hi) and lo == hi


def points_interval(lo, hi, signed: bool = False, digits: int | None = None) -> str:
    """``[lo, hi]`` in percent (signed: in signed percentage points), ``digits`` decimals
    (by default those of :func:`points` or :func:`signed_points`), each end with the
    decimals its sign needs (:func:`endpoint`); :data:`ALIKE` for a degenerate interval
    (every seed's value the same), never ``[0.00, 0.00]``."""
    if degenerate(lo, hi):
        return ALIKE
    f = signed_points if signed else points
    if digits is None:
        return f"[{f(lo)}, {f(hi)}]"
    return f"[{f(lo, digits)}, {f(hi, digits)}]"


def percent_interval(lo, hi, digits: int = 1) -> str:
    """``[lo\\%, hi\\%]``: a share's interval in percent, each end carrying its unit as in
    :func:`share_with_interval`; :data:`ALIKE` for a degenerate interval."""
    if degenerate(lo, hi):
        return ALIKE
    return f"[{points(lo, digits)}\\%, {points(hi, digits)}\\%]"


def degenerate_share(mean, lo, hi) -> str | None:
    """``"every one"`` or ``"none"`` when a share and its interval are all exactly 1 or all
    exactly 0 (an interval with nothing to say), else ``None``."""
    if _finite(mean) and mean == 1 and lo == 1 and hi == 1:
        return "every one"
    if _finite(mean) and mean == 0 and lo == 0 and hi == 0:
        return "none"
    return None


def share_with_interval(mean, lo, hi, digits: int = 1, percent_sign: bool = True) -> str:
    """A share with its interval: ``45.3\\% [40.1\\%, 50.2\\%]``; ``every one`` / ``none``
    instead of a degenerate interval such as ``[100.0\\%, 100.0\\%]``."""
    words_ = degenerate_share(mean, lo, hi)
    if words_ is not None:
        return words_
    pct = "\\%" if percent_sign else ""
    return f"{points(mean, digits)}{pct} [{points(lo, digits)}{pct}, {points(hi, digits)}{pct}]"


def count(n) -> str:
    """A count for running text: ``none`` for zero (a sentence never reads ``in 0 and 0`` or
    ``at 0 of the 6``), else the number (thousands grouped, as :func:`fmt`)."""
    return "none" if int(n) == 0 else fmt(int(n))


def words(items) -> str:
    """A list in prose: ``2``; ``2 and 4``; ``2, 4 and 16``; empty for none."""
    items = list(items)
    if len(items) < 2:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def span(low: str, high: str) -> str:
    """A range of two printed values, ``0.05 to 0.06``, or the one value where both print alike
    (``0.01``, never ``0.01 to 0.01``)."""
    return low if low == high else f"{low} to {high}"


def at_batches(sizes) -> str:
    """``at batch 2``, ``at batches 2 and 4``, or ``at no batch size``."""
    sizes = list(sizes)
    if not sizes:
        return "at no batch size"
    return f"at batch{'es' if len(sizes) > 1 else ''} {words(sizes)}"


def zero_sentence(subject: str, above, below, total: int) -> str:
    """Where a family of intervals (one per batch size) lies with respect to zero, in words.

    ``subject`` names the intervals in the plural (``the paired intervals of PreciseBN``);
    ``above``/``below``: the batch sizes whose interval lies wholly above / below zero;
    ``total``: the number of batch sizes. Every variant agrees in number with its plural
    subject and names each batch size once: ``... contain zero at every batch size``;
    ``... lie wholly above zero at batch 16, and contain zero at the other batch size``;
    ``... lie wholly below zero at batches 2 and 4, wholly above zero at batch 64, and
    contain zero at the other 3 batch sizes``; ``... lie wholly above zero at every batch
    size``."""
    above, below = list(above), list(below)
    rest = total - len(above) - len(below)
    if not above and not below:
        return f"{subject} contain zero at every batch size"
    clauses = []
    if below:
        clauses.append(f"wholly below zero {'at every batch size' if len(below) == total else at_batches(below)}")
    if above:
        clauses.append(f"wholly above zero {'at every batch size' if len(above) == total else at_batches(above)}")
    if rest > 0:
        clauses.append(f"contain zero at {'the other batch size' if rest == 1 else f'the other {rest} batch sizes'}")
    # parts joined by commas, the last by ", and", so that a list of sizes ("2 and 4") stays one
    text = f"{subject} lie {clauses[0]}" if len(clauses) == 1 else f"{subject} lie {', '.join(clauses[:-1])}, and "
    if len(clauses) > 1:
        text += clauses[-1]
    return text


def power_of_ten(value: float) -> str:
    """One significant digit times a power of ten, in math mode: ``3e-4`` ->
    ``$3 \\times 10^{-4}$``; zero as ``$0$``."""
    if value == 0:
        return "$0$"
    mantissa, exponent = f"{value:.0e}".split("e")
    return f"${mantissa} \\times 10^{{{int(exponent)}}}$"
