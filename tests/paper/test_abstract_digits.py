"""The abstract prints at most three significant digits (bnstudy.paper.build.significant,
abstract_macros); the body keeps every digit its macros print."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from bnstudy.paper.build import abstract_macros, interval_digits, significant

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "printed, short",
    [
        ("-12.32", "-12.3"),
        ("[-15.08, -9.57]", "[-15.1, -9.57]"),
        ("2.6982 [2.6975, 2.6988]", "2.70 [2.70, 2.70]"),
        ("0.0175 [0.0139, 0.0221]", "0.0175 [0.0139, 0.0221]"),
        ("45.1\\%", "45.1\\%"),
        ("+6.12 points [-0.02, +12.26]", "+6.12 points [-0.02, +12.3]"),
        ("9.996", "10.0"),
        ("0.9996", "1.00"),
        ("123.45", "123"),
        ("1{,}797 rows, b = 256, $1 \\times 10^{-3}$", "1{,}797 rows, b = 256, $1 \\times 10^{-3}$"),
    ],
)
def test_numbers_get_three_significant_digits_and_integers_stay(printed, short):
    assert significant(printed) == short


def test_a_printed_half_is_kept_rather_than_rounded_the_wrong_way():
    """``12.25`` may stand for 12.2499 or 12.2501: rounding the printed digits could give a wrong last
    digit, so the number is kept as printed."""
    assert significant("12.25") == "12.25" and significant("12.251") == "12.3"


@pytest.mark.parametrize("value", ["-0.004", "0.031", "-0.0449", "0.00096"])
def test_no_number_rounds_to_zero_or_changes_sign(value):
    short = significant(value)
    assert Decimal(short) != 0 and (Decimal(short) < 0) == (Decimal(value) < 0)


def test_the_abstract_renews_only_its_own_macros_with_long_numbers(tmp_path):
    abstract = (ROOT / "paper/sections/abstract.tex").read_text()
    (tmp_path / "batch_size.tex").write_text(
        "% generated\n"
        "\\newcommand{\\pairedBatchnormVsNoneMinGain}{-12.32}\n"
        "\\newcommand{\\pairedBatchnormVsNoneMinAdjCi}{[-15.08, -9.57]}\n"
        "\\newcommand{\\pairedBatchnormVsNoneMaxGain}{+0.60}\n"
        "\\newcommand{\\pairedBatchnormVsNoneTable}{-12.3456}\n"
    )
    (tmp_path / "running_stats.tex").write_text("\\newcommand{\\rsRepRunningErrorMax}{2.6982}\n")
    text = abstract_macros(abstract, [tmp_path / "running_stats.tex", tmp_path / "batch_size.tex"])
    renewed = re.findall(r"\\renewcommand\{\\(\w+)\}\{(.*)\}", text)
    assert renewed == [
        ("pairedBatchnormVsNoneMinGain", "-12.3"),
        ("pairedBatchnormVsNoneMinAdjCi", "[-15.1, -9.57]"),
        ("rsRepRunningErrorMax", "2.70"),
    ]


def test_main_tex_reads_the_short_numbers_inside_the_abstracts_group_only():
    main = (ROOT / "paper/main.tex").read_text()
    begin, end = main.index("\\begin{abstract}"), main.index("\\end{abstract}")
    assert main.count("generated/abstract.tex") == 1 and begin < main.index("generated/abstract.tex") < end


def test_an_interval_whose_ends_three_digits_print_alike_keeps_the_digits_that_tell_them_apart(tmp_path):
    abstract = (ROOT / "paper/sections/abstract.tex").read_text()
    assert "\\rsRepRunningErrorMaxCi" in abstract and "\\rsRepRunningErrorMax{}" in abstract
    (tmp_path / "running_stats.tex").write_text(
        "\\newcommand{\\rsRepRunningErrorMax}{2.6982}\n\\newcommand{\\rsRepRunningErrorMaxCi}{[2.6975, 2.6988]}\n"
    )
    text = abstract_macros(abstract, [tmp_path / "running_stats.tex"])
    renewed = dict(re.findall(r"\\renewcommand\{\\(\w+)\}\{(.*)\}", text))
    # at three digits both ends would be 2.70; at four they would print to different decimals (2.6975 ends
    # in a half, kept as printed): so the interval and its value keep every printed digit
    assert renewed == {}
    (tmp_path / "running_stats.tex").write_text(
        "\\newcommand{\\rsRepRunningErrorMax}{2.69821}\n\\newcommand{\\rsRepRunningErrorMaxCi}{[2.69754, 2.69882]}\n"
    )
    renewed = dict(
        re.findall(r"\\renewcommand\{\\(\w+)\}\{(.*)\}", abstract_macros(abstract, [tmp_path / "running_stats.tex"]))
    )
    assert renewed == {"rsRepRunningErrorMax": "2.698", "rsRepRunningErrorMaxCi": "[2.698, 2.699]"}
    # a wide interval keeps three
    assert interval_digits("[-15.08, -9.57]") == 3 and interval_digits("no interval 2.6982") == 3
