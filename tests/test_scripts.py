"""Rule scripts: each starts through _setup.start; those that say they need no PyTorch do not load it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for p in (ROOT / "workflow" / "scripts").glob("*.py") if p.name != "_setup.py")


def start_call(tree: ast.Module) -> ast.Call:
    calls = [n for n in ast.walk(tree)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "start"]
    assert len(calls) == 1, "a rule script calls start(snakemake) exactly once"
    return calls[0]


def without_torch(call: ast.Call) -> bool:
    return any(k.arg == "torch" and isinstance(k.value, ast.Constant) and k.value.value is False
               for k in call.keywords)


def imports(tree: ast.Module) -> list[str]:
    """Import statements of the script, as source lines (the bnstudy ones included)."""
    lines = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            lines += [f"import {a.name}" for a in node.names if a.name != "sys"]
        elif isinstance(node, ast.ImportFrom) and node.module not in ("_setup", "__future__"):
            lines += [f"from {node.module} import {a.name}" for a in node.names]
    return lines


WITHOUT_TORCH = [p for p in SCRIPTS if without_torch(start_call(ast.parse(p.read_text())))]


def test_every_script_starts_once_and_most_figure_and_table_scripts_skip_pytorch():
    assert len(SCRIPTS) >= 20  # start_call asserts one start(...) per script
    assert len(WITHOUT_TORCH) >= 10


@pytest.mark.parametrize("script", WITHOUT_TORCH, ids=lambda p: p.stem)
def test_script_started_without_pytorch_does_not_import_it(script):
    code = "\n".join(["import sys", f"sys.path.insert(0, {str(ROOT / 'src')!r})", *imports(ast.parse(script.read_text())),
                      "print('torch' in sys.modules)"])
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False", f"{script.name} starts with torch=False but its imports load torch"
