"""An interval the serving section reads against its family's smallest effect prints each end with
the decimals that tell it from that effect, as the sign rule does for zero: the digits paper's
class-sorted change at batch 8, [-1.001, +0.732] points, printed [-1.0, +0.7] beside "reaches beyond
+-1.0 points". Rendered in the table and the zero sentence, in every declaration."""

from __future__ import annotations

import pytest

from bnstudy.evaluation.families import ADJUSTMENTS
from bnstudy.paper import latex
from bnstudy.studies.serving import report as serving_report
from serving_families import FAMILIES
from test_values_serving import _entry, _summary


def test_math_points_tells_an_end_from_the_margin():
    assert latex.math_points(-0.01001) == "$-1.0$"  # no margin read: as before
    assert latex.math_points(-0.01001, margin=0.01) == "$-1.001$"
    assert latex.math_points(0.0096, margin=0.01) == "$+0.96$"
    assert latex.math_points(-0.0123, margin=0.01) == "$-1.2$"  # clear of the margin: one decimal
    assert latex.math_points(0.01, margin=0.01) == "$+1.0$"  # on the margin itself
    assert latex.math_points(-0.00004, margin=0.01) == "$-0.004$"  # the sign rule still holds


@pytest.mark.parametrize("adjustment", ADJUSTMENTS)
def test_an_end_near_the_margin_is_printed_as_the_verdict_reads_it(adjustment):
    families = FAMILIES[adjustment]
    summary = _summary()
    for cell in summary.values():
        cell["sorted"]["inference_change"] = _entry(-0.0013, -0.01001, 0.00732)
    m = serving_report.macros(summary, _settings(), families)
    for b in summary:
        assert m[latex.macro_name("serving", "sorted", "change", "ci", "b", b)] == "[$-1.001$, $+0.7$]"
    text = m["servingSortedChangeZeroSentence"]
    assert "contain zero at every" in text and "reach beyond $\\pm1.0$ points" in text, text
    assert "that contain zero" not in text, text  # said once
    rows = serving_report.table_rows(summary, families[serving_report.CHANGE])
    assert all(r[3] == "$-0.1$ [$-1.001$, $+0.7$]" for r in rows), rows
    # an interval clear of zero is read against no margin: its ends keep one decimal
    summary["4"]["sorted"]["inference_change"] = _entry(0.018, 0.0103, 0.0251)
    m = serving_report.macros(summary, _settings(), families)
    assert m[latex.macro_name("serving", "sorted", "change", "ci", "b", "4")] == "[$+1.0$, $+2.5$]"


def _settings() -> dict:
    return {
        "batch_size": 16,
        "passes": 1,
        "batches": 7,
        "served": 112,
        "momentum": 0.1,
        "confidence": 0.95,
        "test_rows": 224,
        "stream_rows": 120,
        "held_out_rows": 104,
        "held_out": 0.5,
        "replicates": 5,
    }
