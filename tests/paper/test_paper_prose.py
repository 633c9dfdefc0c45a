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
GUARDS |= {"equal_steps": "equalStepsAbstractSentence", "renorm_ramp": "renormRampAbstractSentence"}


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
            ("lr_sweep", "accumulation", "finetune", "precise_rows", "equal_steps", "renorm_ramp"),
            "Seven follow-up studies take up what the published protocol left open: a learning rate tuned per "
            "batch size (section ??), live running statistics when a network serves in training mode (section "
            "??), gradient accumulation and ghost batch normalisation (section ??), fine-tuning in small batches "
            "(section ??), how many training rows a recomputation of the statistics needs (section ??), the "
            "training batch size with the optimiser steps held equal (section ??) and other schedules of batch "
            "renormalisation\u2019s limits (section ??).",  # the typeset apostrophe
        ),
        (
            ("equal_steps",),
            "Two follow-up studies take up what the published protocol left open: live running statistics when "
            "a network serves in training mode (section ??) and the training batch size with the optimiser steps "
            "held equal (section ??).",
        ),
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


# each follow-up study's sentence in the abstract (generated by its report), stood in for by a word
SENTENCES = {
    "servingAbstractSentence": "Serving",
    "accumAbstractSentence": "Accumulation",
    "finetuneAbstractSentence": "Fine-tuning",
    "preciseRowsAbstractSentence": "Budget",
}


@pytest.mark.parametrize(
    "studies, expected",
    [
        (("accumulation", "finetune", "precise_rows"), "Serving. Accumulation. Fine-tuning. Budget."),
        (("accumulation", "finetune"), "Serving. Accumulation. Fine-tuning."),
        (("finetune", "precise_rows"), "Serving. Fine-tuning. Budget."),
        (("accumulation",), "Serving. Accumulation."),
        (("precise_rows",), "Serving. Budget."),
        ((), "Serving."),
    ],
)
def test_the_abstract_gives_each_follow_up_the_build_includes_its_sentence(tmp_path, studies, expected):
    """One generated sentence per follow-up study, each under its section's guard; its lines end in
    ``%``, so that a study left out leaves no second space between two sentences."""
    block = _block("abstract", "\\servingAbstractSentence", "\\preciseRowsAbstractSentence.\\fi")
    assert all(line.endswith("%") for line in block.splitlines()[:-1]), block
    stand_ins = "".join(f"\\newcommand{{\\{name}}}{{{word}}}" for name, word in SENTENCES.items())
    assert _render(tmp_path, stand_ins + "\n" + block, studies) == expected
