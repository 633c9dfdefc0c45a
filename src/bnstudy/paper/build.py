"""Building the paper reproducibly with latexmk and pdfTeX.

pdfTeX stamps PDFs with the build time and a random document ID;
``SOURCE_DATE_EPOCH=0`` with ``FORCE_SOURCE_DATE=1`` fixes both dates (and
``\\today``), and ``\\pdftrailerid{}`` in the preamble removes the ID, so the same
sources give the same bytes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

from bnstudy.base.io import atomic_path, write_text

REPRODUCIBLE_ENV = {"SOURCE_DATE_EPOCH": "0", "FORCE_SOURCE_DATE": "1", "TZ": "UTC"}


def build(sources: Path, generated: dict[str, str], build_dir: Path, log_file: str, sections: list[str] = ()) -> Path:
    """Copy ``sources`` (main.tex, sections/) and the generated files into a
    clean ``build_dir``, write ``generated/inputs.tex`` (every macros file) and
    ``generated/sections.tex`` (an ``\\input`` of each of the studies' ``sections``, in
    order), run latexmk; return the PDF path."""
    if build_dir.exists():
        shutil.rmtree(build_dir)
    shutil.copytree(sources, build_dir, ignore=shutil.ignore_patterns("*.pdf", "*.aux", "*.log"))
    gen = build_dir / "generated"
    macros = []
    for name, path in sorted(generated.items()):
        path = Path(path)
        kind = path.parent.name  # macros / tables / figures
        target = gen / kind / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        if kind == "macros":
            macros.append(f"\\input{{generated/macros/{path.name}}}")
    write_text(gen / "inputs.tex", "\n".join(sorted(macros)) + "\n")
    abstract_file = build_dir / "sections" / "abstract.tex"
    abstract = abstract_file.read_text() if abstract_file.exists() else ""  # no abstract: nothing to renew
    write_text(
        gen / "abstract.tex",
        abstract_macros(
            abstract, [gen / "macros" / Path(p).name for p in generated.values() if Path(p).parent.name == "macros"]
        ),
    )
    write_text(gen / "sections.tex", "".join(f"\\input{{sections/{name}.tex}}\n" for name in sections))
    env = os.environ | REPRODUCIBLE_ENV
    cmd = ["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", "-file-line-error", "main.tex"]
    with open(log_file, "a") as log:
        result = subprocess.run(cmd, cwd=build_dir, env=env, stdout=log, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        raise RuntimeError(f"latexmk failed (exit {result.returncode}); see {log_file} and {build_dir}/main.log")
    return build_dir / "main.pdf"


NUMBER = re.compile(r"(?<![\d.])(\d+)\.(\d+)")  # a decimal number as the macros print it (sign aside)
NEWCOMMAND = re.compile(r"^\\newcommand\{\\([A-Za-z]+)\}\{(.*)\}$")


def significant(text: str, digits: int = 3) -> str:
    """Every decimal number in ``text`` to at most ``digits`` significant digits, half away from zero
    (``-12.32`` to ``-12.3``, ``2.6982`` to ``2.70``, ``0.0175`` kept). Only the printed digits are
    known here: where the digits dropped are exactly a half (``12.25``), the value behind them may lie
    on either side, so the number is kept as printed rather than risk a wrong last digit. Integers and
    numbers already short enough are unchanged; no number rounds to zero or changes sign."""

    def shorten(match):
        whole, frac = match.group(1), match.group(2)
        value = Decimal(f"{whole}.{frac}")
        if value == 0:
            return match.group(0)
        lead = value.adjusted()  # the power of ten of the first significant digit
        keep = digits - 1 - lead  # decimals that leave ``digits`` significant ones
        if keep >= len(frac):
            return match.group(0)
        dropped = frac[max(keep, 0) :] if keep >= 0 else whole[keep:] + frac
        if dropped.rstrip("0") == "5":
            return match.group(0)
        rounded = value.quantize(Decimal(1).scaleb(-max(keep, 0)), rounding=ROUND_HALF_UP)
        if rounded.adjusted() > lead and keep > 0:  # 9.996 to 10.0, not 10.00
            rounded = rounded.quantize(Decimal(1).scaleb(1 - keep))
        return f"{rounded}"

    return NUMBER.sub(shorten, text)


INTERVAL = re.compile(r"\[([^\[\],]+), ([^\[\],]+)\]")  # an interval as the macros print it: [low, high]


def interval_digits(text: str, digits: int = 3, most: int = 8) -> int:
    """The fewest significant digits, at least ``digits``, at which no interval in ``text`` that
    :func:`significant` shortens prints its two ends alike, nor, past ``digits``, to different decimals (a tight
    ``[2.6975, 2.6988]`` is ``[2.70, 2.70]`` at three, ``[2.6975, 2.699]`` at four, whose first end
    is kept as printed because its dropped digit is a half, and as printed at five: the reader sees an
    interval, not a point)."""

    def decimals(number: str) -> int:
        return len(number.partition(".")[2])

    for d in range(digits, most + 1):
        ends = INTERVAL.findall(significant(text, d))
        if all(low != high and (d == digits or decimals(low) == decimals(high)) for low, high in ends):
            return d
    return most


def abstract_macros(abstract: str, macro_files) -> str:
    """``\\renewcommand``s that give the abstract's numbers at most three significant digits: for each
    macro the abstract names whose text has a longer number, the same text through :func:`significant`.
    An interval whose ends three digits would print alike keeps the digits that tell them apart
    (:func:`interval_digits`), and so does its value: the macro of the same name without ``Ci``.
    main.tex reads them inside the abstract's group, so the body keeps every digit."""
    used = set(re.findall(r"\\([A-Za-z]+)", abstract))
    texts = {}
    for path in sorted(macro_files, key=lambda p: Path(p).name):
        for line in Path(path).read_text().splitlines():
            found = NEWCOMMAND.match(line)
            if found and found.group(1) in used:
                texts[found.group(1)] = found.group(2)
    digits = {name: interval_digits(text) for name, text in texts.items()}
    for name in list(digits):
        if name.endswith("Ci") and name[:-2] in digits:
            digits[name[:-2]] = max(digits[name[:-2]], digits[name])
    lines = ["% The abstract's numbers to three significant digits (bnstudy.paper.build.abstract_macros)"]
    for name, text in texts.items():
        short = significant(text, digits[name])
        if short != text:
            lines.append(f"\\renewcommand{{\\{name}}}{{{short}}}")
    return "\n".join(lines) + "\n"


def install(pdf: Path, target: str) -> None:
    with atomic_path(target) as tmp:
        shutil.copyfile(pdf, tmp)
