"""Section 4's own sentences that name the grid's normalisers and where the paired intervals of batch
normalisation minus none lie: compiled with pdfTeX in every variant (a grid with or without batch
renormalisation, with none, one or several normalisers without batch statistics; intervals on both
sides of zero, on one, or on neither) and read back as text. Marked slow (pdfTeX runs)."""

from __future__ import annotations

import pytest

from test_paper_prose import _block, _render

pytestmark = pytest.mark.slow

RENORM = "\\newcommand{\\gridHasRenorm}{1}"


def _no_stats(names):
    from bnstudy.paper.design import grid_kind_macros

    m = grid_kind_macros(names)
    return "".join(f"\\newcommand{{\\{k}}}{{{v}}}" for k, v in m.items() if k == "gridNoStatsSentence")


@pytest.mark.parametrize(
    "names, said",
    [
        (["none", "batchnorm", "groupnorm"], " Group normalisation has no batch statistics, so its two modes"),
        (
            ["none", "batchnorm", "batchrenorm", "layernorm", "groupnorm"],
            " Layer and group normalisation have no batch statistics, so their two modes",
        ),
        (
            ["none", "batchnorm", "batchrenorm", "layernorm", "groupnorm", "ghostbatchnorm", "rmsnorm"],
            " Layer, group and RMS normalisation have no batch statistics, so their two modes",
        ),
        (["none", "batchnorm"], ""),
    ],
)
def test_the_protocol_names_only_the_normalisers_the_grid_has(tmp_path, names, said):
    """A grid without batch renormalisation or layer normalisation reads no sentence about either."""
    defs = (RENORM if "batchrenorm" in names else "") + _no_stats(names)
    body = _block("batch_size", "so every test row counts exactly once.", "Running statistics are")
    text = _render(tmp_path, defs + "\n" + body.replace("~\\ref{sec:methods}", " 2"), ())
    renorm = " Batch renormalisation is evaluated in training mode" if "batchrenorm" in names else ""
    tail = " coincide by construction." if said else ""
    assert text.startswith(f"so every test row counts exactly once.{renorm}"), text
    assert ("Batch renormalisation" in text) == ("batchrenorm" in names)
    before = "(the schedule of section 2)." if renorm else "so every test row counts exactly once."
    assert text.endswith(f"{before}{said}{tail} Running statistics are"), text
    assert ("Layer" in text) == ("layernorm" in names) and ". ." not in text


@pytest.mark.parametrize("renorm", [False, True])
@pytest.mark.parametrize(
    "above, below, said",
    [
        ([], [], "excludes zero at none of our 3 batch sizes. At batch"),
        (
            ["32", "128"],
            ["2"],
            "at 3 of our 3 batch sizes (above zero at batches 32 and 128, below at batch 2). At batch",
        ),
        ([], ["2"], "at 1 of our 3 batch sizes (below zero at batch 2). At batch"),
        (["128"], [], "at 1 of our 3 batch sizes (above zero at batch 128). At batch"),
    ],
)
def test_the_paired_differences_say_each_side_once_and_name_renorm_only_where_trained(
    tmp_path, renorm, above, below, said
):
    """The count of intervals excluding zero is not followed by ``above zero at no batch size, below
    at no batch size``, which says the same verdict again; batch renormalisation minus batch
    normalisation is named only in a grid that trains batch renormalisation."""
    from bnstudy.studies.batch_size.published import sides_clause

    count = {0: "none", 1: "1", 3: "3"}[len(above) + len(below)]
    defs = (RENORM if renorm else "") + (
        f"\\newcommand{{\\gainsExcludingZero}}{{{count}}}\\newcommand{{\\gainsCompared}}{{3}}"
        f"\\newcommand{{\\gainsSidesClause}}{{{sides_clause(above, below)}}}"
        "\\newcommand{\\familyNormalisersTag}{adjusted}\\newcommand{\\evalConfidence}{95\\%}"
        "\\newcommand{\\mcnemarAlpha}{0.05}"
    )
    body = _block("batch_size", "every batch size: batch normalisation minus none", "At batch")
    text = _render(tmp_path, defs + "\n" + body.replace("~\\ref{tab:families}", " 1"), ())
    middle = ", batch renormalisation minus batch normalisation, and" if renorm else " and"
    assert text.startswith(f"every batch size: batch normalisation minus none{middle} each remedy minus"), text
    assert text.endswith(said), text
    assert "no batch size" not in text


@pytest.mark.parametrize(
    "above, below, said",
    [([], [], "at none of our 3 batch sizes overall. At batch"),
     (["32"], ["2"], "at 2 of our 3 batch sizes overall (above zero at batch 32, below at batch 2). At batch")],
)  # fmt: skip
def test_the_published_variant_says_each_side_once(tmp_path, above, below, said):
    """The paragraph beside published gains counts the intervals excluding zero and their sides once."""
    from bnstudy.studies.batch_size.published import sides_clause

    count = {0: "none", 2: "2"}[len(above) + len(below)]
    defs = (
        f"\\newcommand{{\\gainsExcludingZero}}{{{count}}}\\newcommand{{\\gainsCompared}}{{3}}"
        f"\\newcommand{{\\gainsSidesClause}}{{{sides_clause(above, below)}}}"
    )
    body = _block("batch_size", "excludes zero, and at \\gainsExcludingZero", "At batch")
    text = _render(tmp_path, defs + "\n" + body, ())
    assert text == f"excludes zero, and {said}", text


@pytest.mark.parametrize(
    "training, said",
    [
        (
            {2: 0.8205, 32: 0.8471, 128: 0.85377},
            "at 2 of the grid's 3 batch sizes and level with it to three decimals at batch 128 in our",
        ),
        ({2: 0.8205, 32: 0.8471, 128: 0.8501}, "at every one of the grid's 3 batch sizes in our"),
        ({2: 0.8400, 32: 0.8534, 128: 0.85377}, "at none of the grid's 3 batch sizes and level with it to three "
         "decimals at batches 32 and 128 in our"),
    ],
)  # fmt: skip
def test_training_mode_is_said_below_inference_mode_only_where_the_printed_means_differ(training, said):
    """The convolutional grid's batch 128: 0.85377 in training mode against 0.8542 in inference mode,
    both printed 0.854, is not counted below; the sizes whose means print alike are named."""
    from bnstudy.studies.batch_size.sentences import train_mode_loss_clause

    inference = {2: 0.8338, 32: 0.85313, 128: 0.8542}
    text = train_mode_loss_clause(inference, training)
    assert text == f"scores below inference mode {said} networks (means over seeds)", text
