"""How study 1's summary writes a share and its interval in LaTeX: percent or fraction, never a degenerate interval.

The companions' macros, tables and comparison with the published rates
(:mod:`~bnstudy.studies.companions.macros`, :mod:`~bnstudy.studies.companions.summary`,
:mod:`~bnstudy.studies.companions.published`) write every share through these: in percent
(:func:`pct_text`) or as a fraction (:func:`fraction_text`), with its interval
(:func:`interval_text`; :data:`NO_SPREAD` where every resample or network agrees).
"""

from __future__ import annotations

from bnstudy.paper import latex


def pct_text(v):
    """A share in percent with the sign ``\\%``; never ``0.0\\%`` or ``100.0\\%`` for a share
    that is neither 0 nor 1 (:func:`bnstudy.paper.latex.points`)."""
    text = latex.points(v)
    return text if text == "n/a" else text + "\\%"


def fraction_text(v):
    """A share as a fraction with three decimals, never ``0.000`` or ``1.000`` unless exact."""
    return latex.endpoint(v, 3, scale=1.0, bounds=(1.0,))


NO_SPREAD = "(no spread)"


def interval_text(lo, hi, percent=True):
    """``[lo, hi]``; :data:`NO_SPREAD` for a degenerate interval (every resample or network alike),
    never ``[80.0\\%, 80.0\\%]``."""
    if latex.degenerate(lo, hi):
        return NO_SPREAD
    f = pct_text if percent else fraction_text
    return f"[{f(lo)}, {f(hi)}]"


def with_interval(value, lo, hi, percent=True):
    """``value [lo, hi]``; ``every one`` / ``none`` for a degenerate interval at 1 or 0."""
    words_ = latex.degenerate_share(value, lo, hi)
    if words_ is not None:
        return words_
    f = pct_text if percent else fraction_text
    return f"{f(value)} {interval_text(lo, hi, percent)}"


def value_and_interval(value, lo, hi, percent=True) -> tuple[str, str]:
    """The value and its interval as two macros; a degenerate interval at 1 or 0 gives
    ``every one`` / ``none`` and an empty interval."""
    words_ = latex.degenerate_share(value, lo, hi)
    if words_ is not None:
        return words_, ""
    return (pct_text if percent else fraction_text)(value), interval_text(lo, hi, percent)
