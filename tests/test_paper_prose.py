"""The paper's sentences that list the follow-up studies a build includes (``\\proseItem`` and
``\\proseList`` of paper/main.tex): compiled with pdfTeX for each set of studies and read back as text.
Marked slow (pdfTeX runs); `make test` and CI run it."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow

# a macro each optional follow-up study's macros file defines (the guards of the sections' text)
GUARDS = {"lr_sweep": "lrSweepSeeds", "accumulation": "accumEpochs", "finetune": "finetuneArmCells"}
GUARDS["precise_rows"] = "preciseRowsBudgets"


def _preamble() -> str:
    """paper/main.tex's definitions of the prose list."""
    main = (ROOT / "paper" / "main.tex").read_text()
    start = main.index("\\newcount\\proseCount")
    end = main.index("\n", main.index("\\newcommand{\\proseCountWord}"))
    return main[start:end]


def _block(section: str, first: str, last: str) -> str:
    text = (ROOT / "paper" / "sections" / f"{section}.tex").read_text()
    start = text.index(first)
    return text[start : text.index(last, start) + len(last)]


def _render(tmp_path, body: str, studies) -> str:
    if not shutil.which("pdflatex") or not shutil.which("pdftotext"):
        pytest.fail("pdflatex/pdftotext missing: make tex installs them (texlive, poppler-utils)")
    defined = "".join(f"\\newcommand{{\\{GUARDS[s]}}}{{x}}\n" for s in studies)
    head = f"\\documentclass{{article}}\n{_preamble()}\n{defined}\\pagestyle{{empty}}"
    doc = f"{head}\\begin{{document}}\n{body}\n\\end{{document}}\n"
    (tmp_path / "d.tex").write_text(doc)
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "d.tex"], cwd=tmp_path,
                         capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:]
    text = subprocess.run(["pdftotext", str(tmp_path / "d.pdf"), "-"], capture_output=True, text=True).stdout
    return re.sub(r"\s+", " ", text).strip()


@pytest.mark.parametrize(
    "studies, expected",
    [
        (
            ("lr_sweep", "accumulation", "finetune", "precise_rows"),
            "Five follow-up studies take up what the published protocol left open: a learning rate tuned per "
            "batch size (section ??), live running statistics when a network serves in training mode (section "
            "??), gradient accumulation and ghost batch normalisation (section ??), fine-tuning in small batches "
            "(section ??) and how many training rows a recomputation of the statistics needs (section ??).",
        ),
        (
            ("lr_sweep", "accumulation", "finetune"),
            "Four follow-up studies take up what the published protocol left open: a learning rate tuned per "
            "batch size (section ??), live running statistics when a network serves in training mode (section "
            "??), gradient accumulation and ghost batch normalisation (section ??) and fine-tuning in small "
            "batches (section ??).",
        ),
        (
            (),
            "One follow-up study takes up what the published protocol left open: live running statistics when "
            "a network serves in training mode (section ??).",
        ),
        (
            ("finetune",),
            "Two follow-up studies take up what the published protocol left open: live running statistics when "
            "a network serves in training mode (section ??) and fine-tuning in small batches (section ??).",
        ),
    ],
)
def test_the_introduction_lists_the_follow_ups_the_build_includes(tmp_path, studies, expected):
    body = _block("introduction", "\\proseReset", "\\proseList.")
    assert _render(tmp_path, body, studies) == expected


@pytest.mark.parametrize(
    "studies, expected",
    [
        (("accumulation", "finetune"), "Follow-up studies take up serving with live statistics, gradient "
         "accumulation and fine-tuning."),
        (("accumulation",), "Follow-up studies take up serving with live statistics and gradient accumulation."),
        ((), "A follow-up study takes up serving with live statistics."),
    ],
)  # fmt: skip
def test_the_abstract_names_the_follow_ups_the_build_includes(tmp_path, studies, expected):
    body = _block("abstract", "\\proseReset", "\\proseList.")
    assert _render(tmp_path, body, studies) == expected
