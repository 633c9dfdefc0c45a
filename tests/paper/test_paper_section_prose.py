"""The sections' own sentences: those that name the side by side (``\\compareOthers``, defined only
in a paper that sets other builds' numbers beside its own), the discussion's reading of PreciseBN
after many updates, the Limitations' machines and seeds, and what the running statistics' paragraph
on tests compares: compiled with pdfTeX in every variant and read back as text. Marked slow (pdfTeX
runs)."""

from __future__ import annotations

import pytest

from conftest import ROOT
from test_paper_prose import _block
from test_paper_prose import _render as _rendered


def _render(tmp_path, body: str, studies) -> str:
    """:func:`test_paper_prose._render`, with TeX's typeset apostrophe read back as typed."""
    return _rendered(tmp_path, body, studies).replace("\u2019", "'")


pytestmark = pytest.mark.slow

COMPARE = (
    "\\newcommand{\\compareOthers}{Fashion-MNIST with a fully connected network and Fashion-MNIST with a "
    "convolutional network}\\newcommand{\\compareOtherCount}{2 other builds}"
    "\\newcommand{\\compareParts}{Parts~II and~III}"
)
APPENDED = "\\newcommand{\\compareAppended}{1}"
OTHERS = "2 other builds (Fashion-MNIST with a fully connected network and Fashion-MNIST with a convolutional network)"


@pytest.mark.parametrize("compare, appended", [(False, False), (True, False), (True, True)])
def test_the_introduction_names_the_side_by_side_and_what_differs_between_builds(tmp_path, compare, appended):
    body = _block("introduction", "\\ifdefined\\compareOthers Section", "\\fi Section~\\ref{sec:discussion}")
    defs = (COMPARE if compare else "") + (APPENDED if appended else "")
    text = _render(tmp_path, defs + "\n" + body + " says.", ())
    if not compare:
        assert text == "Section ?? says."
        return
    expected = (
        f"Section ?? sets this paper's headline numbers beside those of {OTHERS}, with each build's data set, "
        "network, training rows and grid"
        + ("; their papers follow this one whole (Parts II and III)" if appended else "")
        + ". Section ?? says."
    )
    assert text == expected


@pytest.mark.parametrize("compare", [False, True])
def test_the_abstract_names_the_other_builds_only_in_a_paper_that_sets_them_beside_its_own(tmp_path, compare):
    body = _block("abstract", "\\ifdefined\\curvesAbstractSentence", "common to the builds.\\fi")
    stand_in = "\\newcommand{\\curvesAbstractSentence}{Curves}"
    text = _render(tmp_path, stand_in + (COMPARE if compare else "") + "\n" + body, ())
    assert text == "Curves." + (
        f" Section ?? sets these headline numbers beside those of {OTHERS}, as their own papers print them, each "
        "with its own data set, network and training rows; it estimates no effect common to the builds."
        if compare
        else ""
    )


@pytest.mark.parametrize("compare", [False, True])
def test_the_discussion_scopes_its_one_data_set_to_this_paper(tmp_path, compare):
    body = _block("discussion", "Our networks are small", "not general laws;")
    text = _render(tmp_path, (COMPARE if compare else "") + "\n" + body, ())
    middle = "; section ?? only sets the headline numbers of 2 other builds beside ours" if compare else ""
    assert text == (
        f"Our networks are small and we use one data set (section ??{middle}), so what follows are the checks "
        "our results support, each with the section that gives its evidence, not general laws;"
    )


def test_the_discussion_reads_no_equivalence_into_preciseBNs_intervals_after_many_updates(tmp_path):
    text = _render(tmp_path, _block("discussion", "(PreciseBN); we agree", "makes no difference."), ())
    assert "little difference" not in text and "makes no difference" in text
    assert "whether PreciseBN scores apart from the running averages is stated batch size by batch size" in text
    assert "an interval that contains zero does not show that it makes no difference." in text


def test_the_discussion_names_the_single_layer_section_once_for_sorted_batches(tmp_path):
    body = _block("discussion", "\\emph{Shuffle.}", "(both in section~\\ref{sec:running-stats}).")
    text = _render(tmp_path, body, ())
    assert text.count("section ??") == 1, text


PHRASES = [None, "the follow-up studies use 5 of them",
           "most follow-up studies use 5 of them; PreciseBN on a budget uses all 20"]  # fmt: skip


@pytest.mark.parametrize("phrase", PHRASES)
def test_the_limitations_count_the_runs_and_the_seeds_as_the_appendix_and_config_do(tmp_path, phrase):
    machines = _render(tmp_path, _block("limitations", "\\paragraph{Machines.}", "AVX-512."), ())
    assert "three simulated" not in machines
    assert "the three runs of appendix ??, one native and two as simulated x86-64 Linux machines, give" in machines
    seeds = _block("limitations", "Each cell of the grid has", "dependence networks.")
    defs = "\\newcommand{\\gridSeeds}{20}\\newcommand{\\compDepNetworks}{5}"
    defs += f"\\newcommand{{\\gridFollowUpSeedsPhrase}}{{{phrase}}}" if phrase else ""
    text = _render(tmp_path, defs + "\n" + seeds, ())
    told = f" ({phrase})" if phrase else ""
    assert text == f"Each cell of the grid has 20 seeds{told}; study 1 has 5 dependence networks."


def test_the_running_statistics_tests_paragraph_says_what_the_ratio_compares(tmp_path):
    defs = (
        "\\newcommand{\\rsSelfCheckPasses}{48}\\newcommand{\\rsSelfCheckTotal}{48}"
        "\\newcommand{\\rsDivergenceRatioHigh}{9.1}\\newcommand{\\rsDifferentialTol}{0.1}"
        "\\newcommand{\\rsDifferentialPassesShuffled}{1}\\newcommand{\\rsDifferentialPassesSorted}{none}"
        "\\newcommand{\\rsPasses}{6}"
    )
    body = _block("running_stats", "On every pass, shuffled and sorted", "sorted ones.")
    text = _render(tmp_path, defs + "\n" + body.replace("~\\ref{tab:running-stats-selfchecks}", " 13"), ())
    assert "while sorted batches diverge up to 9.1 times as far as shuffled ones." in text, text
    assert "-fold" not in text and "agrees to an" not in text
    assert "it agrees within an RMSE of 0.1 on 1 of 6 shuffled passes and on none of 6 sorted ones." in text, text


@pytest.mark.parametrize("decayed", [False, True])
def test_the_limitations_say_the_dependence_networks_rate_decays_where_it_does(tmp_path, decayed):
    defs = "\\newcommand{\\depLr}{0.003}\\newcommand{\\depBatchSize}{64}"
    defs += "\\newcommand{\\depLrSchedule}{, decayed linearly over the epochs, scaled}" if decayed else ""
    body = _block("limitations", "dependence networks use SGD", "(\\depBatchSize).")
    text = _render(tmp_path, defs + "\n" + body, ())
    rate = "0.003, decayed linearly over the epochs" if decayed else "0.003"
    assert text == f"dependence networks use SGD with one learning rate ({rate}) and one batch size (64)."


def test_the_limitations_say_which_families_are_adjusted_and_over_what(tmp_path):
    body = _block("limitations", "Only the families", "weak evidence.").replace("\\mcnemarAlpha", "0.05")
    text = _render(tmp_path, body, ())
    assert text.startswith(
        "Only the families that Table ?? declares adjusted are corrected for multiplicity, each over its own "
        "members (its batch sizes, or the comparisons of a follow-up study; section ??);"
    ), text
    assert "family of batch sizes" not in text


def test_preciseBNs_budget_is_not_named_by_the_keep_factors_letter(tmp_path):
    """Section 6's keep-factor is $k$; the budget of rows has its own letter, and no "$k$ = 64" with an
    equals sign outside math beside the section's $b=2$."""
    defs = "\\newcommand{\\preciseRowsBudgets}{64 and 256}\\newcommand{\\trainPart}{training half}"
    body = _block("precise_rows", "the first $\\lfloor", "pooled as")
    text = _render(tmp_path, defs + "\n" + body.replace("~\\ref{tab:precise-rows}", " 21"), ())
    assert "for budgets of n rows, n being 64 and 256 (none where n < b: a dash in Table 21), pooled as" in text, text
    section = (ROOT / "paper" / "sections" / "precise_rows.tex").read_text()
    assert "$k$" not in section and "k/b" not in section
