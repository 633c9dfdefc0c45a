"""Building the paper reproducibly with latexmk and pdfTeX.

pdfTeX stamps PDFs with the build time and a random document ID;
``SOURCE_DATE_EPOCH=0`` with ``FORCE_SOURCE_DATE=1`` fixes both dates (and
``\\today``), and ``\\pdftrailerid{}`` in the preamble removes the ID, so the same
sources give the same bytes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
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
    write_text(gen / "sections.tex", "".join(f"\\input{{sections/{name}.tex}}\n" for name in sections))
    env = os.environ | REPRODUCIBLE_ENV
    cmd = ["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", "-file-line-error", "main.tex"]
    with open(log_file, "a") as log:
        result = subprocess.run(cmd, cwd=build_dir, env=env, stdout=log, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        raise RuntimeError(f"latexmk failed (exit {result.returncode}); see {log_file} and {build_dir}/main.log")
    return build_dir / "main.pdf"


def install(pdf: Path, target: str) -> None:
    with atomic_path(target) as tmp:
        shutil.copyfile(pdf, tmp)
