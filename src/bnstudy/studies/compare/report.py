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

from bnstudy.paper import latex
from bnstudy.pipeline import manifest
from bnstudy.pipeline.pinned import macro_definitions

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
        "$@pairedBatchnormVsNoneMinGain$ $@pairedBatchnormVsNoneMinAdjCi$ at $b=@batchMin$ (@familyNormalisersPhrase)",
    ),
    (
        "Batch norm minus none, points, largest grid batch",
        "$@pairedBatchnormVsNoneMaxGain$ $@pairedBatchnormVsNoneMaxAdjCi$ at $b=@batchMax$ (@familyNormalisersPhrase)",
    ),
    (
        "The same, learning rate chosen per cell, smallest batch",
        "$@lrPairedBestMinGain$ $@lrPairedBestMinCi$ at $b=@lrBatchMin$ (@familyLrGapPhrase)",
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
    paths = _macro_paths(table)
    if not paths:
        raise ValueError(f"{expected} lists no macro files ({MACROS}*.tex)")
    check_bytes(directory, expected, table, paths)
    macros = {}
    for path in paths:
        macros |= macro_definitions(directory / path)
    return macros, len(paths)


def check_bytes(directory: Path, expected, table, paths: list[str]) -> None:
    """Each of ``paths`` (relative to ``directory``) on disk with the bytes the manifest ``table`` (read
    from ``expected``) records; a :class:`ValueError` naming the first that is missing or differs."""
    listed = table.set_index("path")
    on_disk = manifest.disk_hashes(paths, directory)
    for path in paths:
        found, want = on_disk[path], (int(listed.at[path, "bytes"]), listed.at[path, "sha256"])
        if found is None:
            raise ValueError(f"{directory / path}: missing (listed in {expected})")
        if found != want:
            raise ValueError(f"{directory / path}: its bytes differ from those {expected} records (sha256 {found[1]})")


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
    header = ["", *columns(len(builds))]
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
        "compareParts": "Part~II" if len(others) == 1 else "Parts~II and~III",
    }


# ---- findings across builds: generated verdicts from each build's own macros -----------------

_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def numbers(text: str) -> list[float]:
    """The numbers of a macro body as its build printed them (``[-25.10, -17.40]``, ``45.3\\%``,
    ``55{,}000``), in order."""
    return [float(v) for v in _NUMBER.findall(text.replace("{,}", ""))]


def _side(lo: float, hi: float) -> str:
    return "below" if hi < 0 else "above" if lo > 0 else "neither"


def bn_versus_none(builds: list[dict[str, str]], names: list[str], end: str = "Min") -> str:
    """Whether batch norm falls below no normaliser at each build's smallest (``end`` Min) or largest
    (Max) grid batch: the sign of each build's paired interval at the level its config declares for the
    family ``normalisers`` (its tag, ``adjusted`` or ``unadjusted``, beside it), one verdict per build,
    and the builds grouped by verdict."""
    label = {"Min": "smallest", "Max": "largest"}[end]
    groups: dict[str, list[str]] = {"below": [], "above": [], "neither": []}
    shown = []
    for name, m in zip(names, builds, strict=True):
        gain, ci = m.get(f"pairedBatchnormVsNone{end}Gain"), m.get(f"pairedBatchnormVsNone{end}AdjCi")
        b, tag = m.get(f"batch{end}"), m.get("familyNormalisersTag")
        if gain is None or ci is None or b is None or tag is None:
            continue
        lo, hi = numbers(expand(ci, m))[:2]
        groups[_side(lo, hi)].append(name)
        shown.append(f"{name}, $b = {expand(b, m)}$: ${expand(gain, m)}$ ${expand(ci, m)}$ ({tag})")
    if not shown:
        return ""
    verdicts = {
        "below": "batch normalisation scores below no normaliser",
        "above": "batch normalisation scores above no normaliser",
        "neither": "the interval contains zero, so the two cannot be told apart",
    }
    parts = []
    for side in ("below", "above", "neither"):
        if groups[side]:
            where = "in every build" if len(groups[side]) == len(shown) else f"for {latex.words(groups[side])}"
            parts.append(f"{where} {verdicts[side]}")
    return (
        f"At each build's {label} grid batch size, {'; '.join(parts)} (inference-mode accuracy, batch "
        f"normalisation minus none in points, with each build's interval at the level its config declares: "
        f"{'; '.join(shown)})."
    )


# What may differ between two builds' dependence networks, each by the macros that say it.
DIFFERENCES = (
    ("data set", ("dataSetName",)),
    ("training rows", ("trainRows",)),
    ("the dependence networks' recipe", ("depLr", "depLrSchedule", "depEpochs", "depBatchSize", "depMomentum")),
)


def differences(a: dict[str, str], c: dict[str, str]) -> list[str]:
    """What differs between the builds of macros ``a`` and ``c``: data set, network, training rows and
    the dependence networks' recipe, in that order, each named where its macros differ."""
    named = [name for name, keys in DIFFERENCES[:1] if any(a.get(k) != c.get(k) for k in keys)]
    named += ["network"] if network(a) != network(c) else []
    return named + [name for name, keys in DIFFERENCES[1:] if any(a.get(k) != c.get(k) for k in keys)]


def flip_rates(builds: list[dict[str, str]], names: list[str]) -> str:
    """The label-change rate among random companions at the smallest probe size, each build's with its
    interval counting networks and examples; two builds compared only where they probe the same size,
    and called different only where their intervals do not overlap (a conservative comparison), with
    what differs between the two builds (:func:`differences`)."""
    rows = []
    for name, m in zip(names, builds, strict=True):
        rate, ci, b = m.get("compNetFlipRateMin"), m.get("compNetFlipRateCombinedCiMin"), m.get("compSizeMin")
        if rate is None or ci is None or b is None:
            continue
        bounds = numbers(expand(ci, m))
        if len(bounds) < 2:
            continue
        rows.append(
            (name, expand(b, m), numbers(expand(rate, m))[0], bounds[0], bounds[1], expand(rate, m), expand(ci, m), m)
        )
    if len(rows) < 2:
        return ""
    shown = "; ".join(f"{r[0]}, $b = {r[1]}$: {r[5]} {r[6]}" for r in rows)
    lower, overlap, apart = [], [], []
    for i in range(len(rows)):
        for j in range(i + 1, len(rows)):
            a, c = rows[i], rows[j]
            if a[1] != c[1]:
                apart.append(f"{a[0]} and {c[0]}")
            elif a[4] < c[3] or c[4] < a[3]:
                low, high = (a, c) if a[4] < c[3] else (c, a)
                differ = differences(low[7], high[7])
                which = f", builds that differ in {latex.words(differ)}" if differ else ""
                lower.append(f"{low[0]}'s rate is lower than {high[0]}'s{which}")
            else:
                overlap.append(f"for {a[0]} with {c[0]}")
    verdicts = list(lower)  # each verdict once: the pairs that share one are named together
    if overlap:
        which = "that pair" if len(overlap) == 1 else "those pairs"
        verdicts.append(f"the intervals overlap {latex.words(overlap)}, so this comparison cannot order {which}")
    if apart:
        verdicts.append(f"{latex.words(apart)} probe different sizes and are not compared")
    return (
        f"Among random companions at the smallest probe size a test example's training-mode label changes "
        f"in this share of the batches: {shown} (each with its interval counting networks and examples). "
        f"Read by whether two intervals overlap, a conservative comparison: {'; '.join(verdicts)}."
    )


def columns(count: int) -> list[str]:
    """The table's name of each build's column: this paper's, then the others' in order."""
    return ["This paper", *(f"Other build {i}" for i in range(1, count))]


def short_names(builds: list[dict[str, str]]) -> list[str]:
    """How the findings name each build: ``the digits (fully connected)``; where two builds share
    that name (the same data set and kind of network), each of them with its table column as well,
    ``the digits (fully connected, other build 1)``, so that no two builds read alike."""
    names = [f"{cell('@dataSetName', m)} ({network(m)})" for m in builds]
    return [
        name if names.count(name) == 1 else f"{name[:-1]}, {column.lower()})"
        for name, column in zip(names, columns(len(builds)), strict=True)
    ]


def findings_macros(builds: list[dict[str, str]]) -> dict[str, str]:
    """The side-by-side section's generated verdicts across builds (empty where no build has the numbers)."""
    names = short_names(builds)
    found = {
        "compareFindingsSmallest": bn_versus_none(builds, names, "Min"),
        "compareFindingsLargest": bn_versus_none(builds, names, "Max"),
        "compareFindingsFlips": flip_rates(builds, names),
    }
    return {name: text for name, text in found.items() if text}


def parts_tex(sources: list[dict], builds: list[dict[str, str]], parts: list[str]) -> str:
    """The pages that append each other build's paper (``parts``: their copies, as the paper build
    names them) after this paper's references, each after a heading naming it and its manifest."""
    lines = ["% each other build's paper, appended (compare.append_papers)"]
    for i, (source, m, path) in enumerate(zip(sources[1:], builds[1:], parts, strict=True)):
        numeral = ("II", "III", "IV")[i]
        lines += [
            "\\clearpage",
            f"\\section*{{Part {numeral}: {describe(m)}}}\\label{{part:{i + 1}}}",
            f"The pages that follow are the paper of the build in \\texttt{{{latex.escape(source['directory'])}}}, "
            f"whole and as that build wrote it (its bytes checked against "
            f"\\texttt{{{latex.escape(source['expected'])}}}); its page numbers, sections and references are its own.",
            f"\\includepdf[pages=-]{{{path}}}",
        ]
    return "\n".join(lines) + "\n"


def copy_verified(directory, expected, path: str, target) -> None:
    """Copy the build's file ``path`` (relative to ``directory``) to ``target`` once its bytes match
    what its manifest ``expected`` records; a :class:`ValueError` naming the file otherwise."""
    import shutil

    from bnstudy.base.io import atomic_path

    table = manifest.read(expected)
    if path not in set(table["path"]):
        raise ValueError(f"{expected} does not list {path}")
    check_bytes(Path(directory), expected, table, [path])
    with atomic_path(target) as tmp:
        shutil.copyfile(Path(directory) / path, tmp)
