"""Side by side: headline numbers of several builds, one column each, read from the macro files
their own pipelines wrote (``results/paper/macros/*.tex``).

A cell is a template over one build's macros (``@name`` stands for the macro ``\\name``), filled
with the macros' bodies as that build wrote them: the value, interval and rounding its own paper
prints. A body that calls another macro of its build has that macro's body put in its place, so
nothing in a cell resolves to this paper's macros of the same name. A row whose macros a build did
not write shows a dash in that build's column. Nothing is recomputed: the numbers of a build are
its own, checked first against the manifest the config names (:func:`verified_macros`).
"""

from __future__ import annotations

import re
from pathlib import Path

from bnstudy.base import manifest
from bnstudy.base.pinned import macro_definitions
from bnstudy.paper import latex

MACROS = "results/paper/macros/"
# never read: this study's own macros, and the build record (package versions, machine)
NOT_READ = ("compare.tex", "provenance.tex")
MISSING = "---"
_FIELD = re.compile(r"@([A-Za-z]+)")
_CALL = re.compile(r"\\([A-Za-z]+)")
MAX_DEPTH = 8  # macros calling macros: deeper than any the pipeline writes

# (row label, cell template): the abstract's numbers, each with the batch size it is taken at
ROWS = (
    ("Data set", "@dataSetName"),
    ("Training rows / test rows", "@trainRows / @testRows"),
    ("Grid", "@gridRuns networks: @gridNormalisers normalisers, @gridBatchSizes batch sizes, @gridSeeds seeds"),
    (
        "Label changes among random batches, smallest size",
        "@compNetFlipRateMin @compNetFlipRateCombinedCiMin at $b=@compSizeMin$",
    ),
    (
        "Label changes among random batches, largest size",
        "@compNetFlipRateMax @compNetFlipRateCombinedCiMax at $b=@compSizeMax$",
    ),
    (
        "Batch norm, inference-mode accuracy, smallest grid batch",
        "@accInferenceBatchnormMin @ciInferenceBatchnormMin at $b=@batchMin$",
    ),
    (
        "Batch norm, inference-mode accuracy, largest grid batch",
        "@accInferenceBatchnormMax @ciInferenceBatchnormMax at $b=@batchMax$",
    ),
    ("No normaliser, accuracy, largest grid batch", "@accInferenceNoneMax @ciInferenceNoneMax at $b=@batchMax$"),
    (
        "Batch norm minus none, points, smallest grid batch",
        "$@pairedBatchnormVsNoneMinGain$ $@pairedBatchnormVsNoneMinAdjCi$ at $b=@batchMin$ "
        "(adjusted over @pairedBatchnormVsNoneFamily sizes)",
    ),
    (
        "Batch norm minus none, points, largest grid batch",
        "$@pairedBatchnormVsNoneMaxGain$ $@pairedBatchnormVsNoneMaxAdjCi$ at $b=@batchMax$ "
        "(adjusted over @pairedBatchnormVsNoneFamily sizes)",
    ),
    (
        "The same, learning rate chosen per cell, smallest batch",
        "$@lrPairedBestMinGain$ $@lrPairedBestMinCi$ at $b=@lrBatchMin$ (adjusted over @lrFamily sizes)",
    ),
    ("Confidence of the intervals", "@compConfidence (label changes), @evalConfidencePct (accuracy)"),
)


def macro_paths(expected) -> list[str]:
    """The macro files a build's manifest ``expected`` lists (paths relative to the build's directory),
    but :data:`NOT_READ`."""
    return _macro_paths(manifest.read(expected))


def _macro_paths(table) -> list[str]:
    return [p for p in table["path"] if p.startswith(MACROS) and p.removeprefix(MACROS) not in NOT_READ]


def verified_macros(directory, expected) -> tuple[dict[str, str], int]:
    """``(macros, files)``: every macro of the build in ``directory`` (name -> body) and how many files
    they came from, once each macro file the manifest ``expected`` lists is on disk with the bytes it
    records. Raises :class:`ValueError` naming the first file that is missing or differs."""
    directory = Path(directory)
    table = manifest.read(expected)  # read once: the paths and their recorded bytes
    paths, listed = _macro_paths(table), table.set_index("path")
    if not paths:
        raise ValueError(f"{expected} lists no macro files ({MACROS}*.tex)")
    on_disk = manifest.disk_hashes(paths, directory)
    macros = {}
    for path in paths:
        found, want = on_disk[path], (int(listed.at[path, "bytes"]), listed.at[path, "sha256"])
        if found is None:
            raise ValueError(f"{directory / path}: missing (listed in {expected})")
        if found != want:
            raise ValueError(f"{directory / path}: its bytes differ from those {expected} records (sha256 {found[1]})")
        macros |= macro_definitions(directory / path)
    return macros, len(paths)


def expand(body: str, macros: dict[str, str], depth: int = 0) -> str:
    """``body`` with each call of one of ``macros`` replaced by that macro's expanded body; any
    other control sequence (``\\%``, ``\\,``, ``\\textsc``) left as it is."""
    if depth > MAX_DEPTH:
        raise ValueError(f"macros call each other deeper than {MAX_DEPTH}: {body!r}")

    def one(m: re.Match) -> str:
        name = m.group(1)
        return expand(macros[name], macros, depth + 1) if name in macros else m.group(0)

    return _CALL.sub(one, body)


def cell(template: str, macros: dict[str, str]) -> str:
    """``template`` filled from one build's ``macros`` (:data:`MISSING` if it lacks any of them)."""
    names = _FIELD.findall(template)
    if any(name not in macros for name in names):
        return MISSING
    return _FIELD.sub(lambda m: expand(macros[m.group(1)], macros), template)


def network(macros: dict[str, str]) -> str:
    """The build's network: convolutional where its design macros define ``\\netConv``."""
    return "convolutional" if "netConv" in macros else "fully connected"


def table(builds: list[dict[str, str]]) -> tuple[list[str], list[list[str]]]:
    """``(header, rows)`` of the side-by-side table: this build's column, then each other's."""
    header = ["", "This paper", *(f"Other build {i}" for i in range(1, len(builds)))]
    rows = [[label, *(cell(template, m) for m in builds)] for label, template in ROWS[:1]]
    rows.append(["Network", *(network(m) for m in builds)])
    rows += [[label, *(cell(template, m) for m in builds)] for label, template in ROWS[1:]]
    return header, rows


def tabular(header: list[str], rows: list[list[str]]) -> str:
    """The booktabs ``tabular`` body: paragraph columns set ragged right (a cell's words are not
    stretched to the column's width), so each row ends with ``\\tabularnewline``, which
    ``\\raggedright`` leaves alone."""

    def line(cells: list[str]) -> str:
        return " & ".join(f"\\raggedright {c}" if c else "" for c in cells) + " \\tabularnewline"

    align = "p{4.3cm}" + "p{3.5cm}" * (len(header) - 1)
    lines = ["% headline numbers by build", f"\\begin{{tabular}}{{{align}}}", "\\toprule", line(header), "\\midrule"]
    return "\n".join([*lines, *map(line, rows), "\\bottomrule", "\\end{tabular}"]) + "\n"


def describe(macros: dict[str, str]) -> str:
    """``Fashion-MNIST with a convolutional network``: how the text names a build."""
    name = cell("@dataSetName", macros)
    return f"{name} with a {network(macros)} network"


def summary_json(builds: list[dict[str, str]], sources: list[dict]) -> dict:
    """The table as data: per build its directory, manifest, files read and every cell."""
    header, rows = table(builds)
    return {
        "rows": [r[0] for r in rows],
        "builds": [
            source | {"column": header[i + 1], "cells": {r[0]: r[i + 1] for r in rows}}
            for i, source in enumerate(sources)
        ],
    }


def macros(builds: list[dict[str, str]], files: int) -> dict[str, str]:
    """The section's macros: the other builds named, their count and the macro files checked."""
    others = builds[1:]
    return {
        "compareOthers": latex.words(describe(m) for m in others),
        "compareOtherCount": "one other build" if len(others) == 1 else f"{len(others)} other builds",
        "compareTheOthers": "the other build" if len(others) == 1 else "the other builds",
        "compareFilesChecked": latex.fmt(files),
    }
