"""LaTeX build products by value: macro names, number formats, the macro and table files."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bnstudy.paper import latex


@pytest.mark.parametrize(
    "parts, name",
    [
        (("flip", "b", 16), "flipBOneSix"),
        (("comp", "exact", "in", "interval"), "compExactInInterval"),
        (("gain", "compared-to", "b_2"), "gainComparedToBTwo"),
        (("Acc", 0), "accZero"),
        (("x", "0123456789"), "xZeroOneTwoThreeFourFiveSixSevenEightNine"),
        (("batchnorm", "b64", "seed 3"), "batchnormBSixFourSeedThree"),
        (("a", "", "--", "b"), "aB"),
        (("gain", "_at b=2"), "gainAtBTwo"),  # a part that starts with a separator keeps its words
        (("aBc",), "aBc"),
    ],
)
def test_macro_name_by_hand(parts, name):
    assert latex.macro_name(*parts) == name


def test_fmt_by_hand():
    assert latex.fmt(0.123456) == "0.123"
    assert latex.fmt(0.123456, 2) == "0.12"
    assert latex.fmt(2.0, 0) == "2"
    assert latex.fmt(0.123456, percent=True) == "12.346\\%"  # x 100, three digits
    assert latex.fmt(0.5, 1, percent=True) == "50.0\\%"
    assert latex.fmt(1, percent=True) == "100.000\\%"  # an int as a fraction
    assert latex.fmt(1234567) == "1{,}234{,}567"  # thousands separated for TeX
    assert latex.fmt(12) == "12"
    assert latex.fmt(np.int64(7)) == "7.000"  # not a Python int: formatted as a number
    assert latex.fmt(None) == "n/a"
    assert latex.fmt(float("nan")) == "n/a"
    assert latex.fmt(float("nan"), percent=True) == "n/a"
    assert latex.fmt(-0.0126, 3) == "-0.013"
    assert latex.fmt(-1.5, 1) == "-1.5"


def test_write_macros_sorted_one_newcommand_each(tmp_path):
    path = tmp_path / "m.tex"
    latex.write_macros(path, {"zeta": "1", "alpha": "2{,}000", "Mid": "\\%"}, "a comment")
    assert path.read_text() == (
        "% a comment\n"
        "% Written by the pipeline; do not edit.\n"
        "\\newcommand{\\Mid}{\\%}\n"
        "\\newcommand{\\alpha}{2{,}000}\n"
        "\\newcommand{\\zeta}{1}\n"
    )


@pytest.mark.parametrize("bad", ["b16", "a_b", "a b", "", "é"])
def test_write_macros_refuses_names_tex_cannot_define(tmp_path, bad):
    path = tmp_path / "m.tex"
    with pytest.raises(ValueError, match="invalid macro name"):
        latex.write_macros(path, {"fine": "1", bad: "2"}, "c")
    assert not path.exists()


def test_write_table_by_hand(tmp_path):
    path = tmp_path / "t.tex"
    latex.write_table(path, ["a", "b"], [["1", "2"], ["3", "4"]], "lr", "caption text")
    assert path.read_text() == (
        "% caption text\n"
        "\\begin{tabular}{lr}\n"
        "\\toprule\n"
        "a & b \\\\\n"
        "\\midrule\n"
        "1 & 2 \\\\\n"
        "3 & 4 \\\\\n"
        "\\bottomrule\n"
        "\\end{tabular}\n"
    )
    latex.write_table(path, ["a"], [], "l")
    assert path.read_text().splitlines()[0] == "% generated table"
    assert path.read_text().splitlines()[-3:] == ["\\midrule", "\\bottomrule", "\\end{tabular}"]


def test_escape_every_special_character():
    assert latex.escape("a\\b&c%d$e#f_g{h}i~j^k") == (
        "a\\textbackslash{}b\\&c\\%d\\$e\\#f\\_g\\{h\\}i\\textasciitilde{}j\\textasciicircum{}k"
    )
    assert latex.escape("plain text 1.0") == "plain text 1.0"
    assert latex.escape(3.5) == "3.5"


def test_points_and_signed_points_by_hand():
    assert latex.points(0.12345) == "12.3"
    assert latex.points(0.12345, 2) == "12.35"
    assert latex.points(1) == "100.0"  # an integer share prints as a share, not as a count
    assert latex.points(None) == "n/a" and latex.points(float("nan")) == "n/a"
    assert latex.points(float("inf")) == "n/a"
    assert latex.signed_points(0.0123) == "+1.23"
    assert latex.signed_points(-0.0123, 1) == "-1.2"
    assert latex.signed_points(0.0) == "0.00"  # exact zero: no sign
    assert latex.signed_points(None) == "n/a"
    assert latex.signed_points(float("inf")) == "n/a"


def test_math_points_are_signed_and_a_nonzero_value_never_prints_as_zero():
    cases = {0.0123: "$+1.2$", -0.0456: "$-4.6$", -0.00049: "$-0.05$", 0.00049: "$+0.05$", 0.0: "$0.0$"}
    cases |= {0.0005: "$+0.1$"}
    assert {v: latex.math_points(v) for v in cases} == cases
    assert latex.math_points(-0.00049, 2) == "$-0.05$" and latex.math_points(-0.000049, 2) == "$-0.005$"
    assert latex.math_points_interval({"ci": [-0.0871, 0.0312], "mean": 0.5}) == "[$-8.7$, $+3.1$]"
    assert latex.math_points_interval({"ci": [-0.0004, 0.01234]}, 2) == "[$-0.04$, $+1.23$]"


def test_points_interval_by_hand():
    assert latex.points_interval(0.1, 0.25) == "[10.0, 25.0]"
    assert latex.points_interval(0.1, 0.25, digits=2) == "[10.00, 25.00]"
    assert latex.points_interval(-0.0123, 0.004) == "[-1.2, 0.4]"
    assert latex.points_interval(-0.0123, 0.004, signed=True) == "[-1.23, +0.40]"
    assert latex.points_interval(-0.0123, 0.004, signed=True, digits=1) == "[-1.2, +0.4]"
    # the cases: an end that rounds to zero keeps its sign with one more decimal
    assert latex.points_interval(0.0003, 0.012, signed=True, digits=1) == "[+0.03, +1.2]"
    assert latex.points_interval(-0.037, 0.00004, signed=True) == "[-3.70, +0.004]"
    assert latex.points_interval(-0.00004, 0.011, signed=True, digits=1) == "[-0.004, +1.1]"
    assert latex.points_interval(float("nan"), float("nan"), signed=True) == "[n/a, n/a]"


@pytest.mark.parametrize(
    "items, text",
    [
        ([], ""),
        (["2"], "2"),
        (["2", "4"], "2 and 4"),
        (["2", "4", "16"], "2, 4 and 16"),
        (("a", "b", "c", "d"), "a, b, c and d"),
    ],
)
def test_words_by_hand(items, text):
    assert latex.words(items) == text


@pytest.mark.parametrize(
    "value, text",
    [
        (3e-4, "$3 \\times 10^{-4}$"),
        (1e-2, "$1 \\times 10^{-2}$"),
        (2.4e-7, "$2 \\times 10^{-7}$"),
        (0.0, "$0$"),
        (5e3, "$5 \\times 10^{3}$"),
        (-2e-3, "$-2 \\times 10^{-3}$"),
    ],
)
def test_power_of_ten_by_hand(value, text):
    assert latex.power_of_ten(value) == text


def test_verdict_at_the_boundaries():
    assert latex.verdict(-0.2, -0.1) == "lies wholly below zero"
    assert latex.verdict(0.1, 0.2) == "lies wholly above zero"
    assert latex.verdict(-0.1, 0.0) == "contains zero"  # an end at zero: zero is in the interval
    assert latex.verdict(0.0, 0.1) == "contains zero"


@settings(max_examples=300, deadline=None)
@given(
    st.floats(-1, 1, allow_nan=False).filter(lambda v: v == 0 or abs(v) > 1e-9),
    st.integers(0, 3),
    st.booleans(),
)
def test_endpoint_prints_the_sign_of_every_nonzero_value(value, digits, signed):
    text = latex.endpoint(value, digits, signed=signed)
    printed = float(text)
    if value == 0:
        assert printed == 0 and not text.startswith(("+", "-"))
    else:
        assert printed != 0 and (printed > 0) == (value > 0)
        assert text.startswith("-") == (value < 0) and text.startswith("+") == (signed and value > 0)
        assert abs(printed - 100 * value) <= 0.5 * 10**-digits + 1e-9


def read_endpoint(text: str) -> float:
    """The number a reader takes from a printed endpoint, in either of its forms: decimals
    (``+0.03``) or, past the extra decimals, an order of magnitude (``+3\\ensuremath{\\times 10^{-15}}``)."""
    if "\\ensuremath" in text:
        mantissa, rest = text.split("\\ensuremath{\\times 10^{")
        return float(f"{mantissa}e{int(rest.rstrip('}'))}")
    return float(text)


def test_an_endpoint_past_the_extra_decimals_reads_as_its_order_of_magnitude():
    assert latex.endpoint(3e-17, 1, signed=True) == "+3\\ensuremath{\\times 10^{-15}}"
    assert read_endpoint(latex.endpoint(-3e-17, 1, signed=True)) == -3e-15
    assert read_endpoint("+0.03") == 0.03


@settings(max_examples=300, deadline=None)
@given(
    st.floats(-0.2, 0.2, allow_nan=False),
    st.floats(0, 0.2, allow_nan=False),
    st.integers(1, 2),
)
def test_a_verdict_can_be_read_off_the_printed_interval(lo, width, digits):
    hi = lo + width
    text = latex.points_interval(lo, hi, signed=True, digits=digits)
    if hi == lo:  # every seed alike: no interval printed, the point carries the sign
        assert text == latex.ALIKE
        return
    plo, phi = (read_endpoint(v) for v in text.strip("[]").split(", "))
    words = latex.verdict(lo, hi)
    assert words == {(True, False): "lies wholly above zero", (False, True): "lies wholly below zero"}.get(
        (plo > 0, phi < 0), "contains zero"
    )


def test_points_never_rounds_a_share_to_a_bound_it_does_not_reach():
    assert latex.points(0.99996) == "99.996" and latex.points(0.00004) == "0.004"
    assert latex.points(1.0) == "100.0" and latex.points(0.0) == "0.0"


def test_degenerate_shares_are_said_in_words():
    assert latex.share_with_interval(1.0, 1.0, 1.0) == "every one"
    assert latex.share_with_interval(0.0, 0.0, 0.0) == "none"
    assert latex.share_with_interval(0.5, 0.4, 0.6) == "50.0\\% [40.0\\%, 60.0\\%]"
    assert latex.share_with_interval(0.99, 0.98, 1.0) == "99.0\\% [98.0\\%, 100.0\\%]"


def test_verdict_agrees_in_number():
    assert latex.verdict(0.1, 0.2, plural=True) == "lie wholly above zero"
    assert latex.verdict(-0.1, 0.2, plural=True) == "contain zero"


def test_a_degenerate_interval_prints_no_interval():
    """Every seed alike: no ``[0.00, 0.00]`` or ``[80.0, 80.0]`` (issue 29, item 4), in text and in math."""
    assert latex.points_interval(0.0, 0.0, signed=True) == "\\text{(every seed alike)}"
    assert latex.points_interval(0.8, 0.8) == "\\text{(every seed alike)}"
    assert latex.math_points_interval({"ci": [0.0, 0.0]}) == "$\\text{(every seed alike)}$"
    assert latex.points_interval(0.1, 0.2) == "[10.0, 20.0]"
    assert latex.points_interval(float("nan"), float("nan")) == "[n/a, n/a]"


def test_two_verdicts_say_a_shared_verdict_once():
    from bnstudy.paper.latex import two_verdicts

    assert two_verdicts((-1.0, 2.0), (-3.0, 0.5)) == "both intervals contain zero"
    assert two_verdicts((-2.0, -1.0), (-3.0, -0.5)) == "both intervals lie wholly below zero"
    mixed = "the first interval contains zero, the second lies wholly above zero"
    assert two_verdicts((-1.0, 2.0), (0.5, 1.0)) == mixed


def test_a_count_of_zero_reads_none_in_running_text():
    """'in favour of batch normalisation in none', 'at none of the 6 batch sizes': never 'in 0'."""
    assert latex.count(0) == "none"
    assert latex.count(3) == "3"
    assert latex.count(12345) == "12{,}345"
    assert latex.count(np.int64(0)) == "none"


def test_a_percent_interval_gives_each_end_its_unit():
    assert latex.percent_interval(0.837, 0.861) == "[83.7\\%, 86.1\\%]"
    assert latex.percent_interval(0.5, 0.5) == latex.ALIKE  # degenerate: no interval printed
