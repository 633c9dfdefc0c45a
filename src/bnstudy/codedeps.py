"""Which package modules a rule script can load: the code inputs of its rule.

Snakemake's code trigger sees a rule's ``script:`` file, not the modules that file
imports, so every rule lists its script, ``_setup.py`` and every ``bnstudy`` module
the script can load as inputs; a change to any of them then re-runs the rule.
The list is read from the source, not typed by hand: every ``import`` of a
``bnstudy`` module anywhere in a file (inside functions too), followed through
the modules it names. That over-approximates what one run executes (a module
imported inside a function the script never calls still counts), which errs on
the side of re-running.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

PACKAGE = "bnstudy"


@cache  # one parse per file while the Snakefile is read
def imported_modules(path: Path, package_dir: Path) -> frozenset[str]:
    """Names of the package's modules that ``path`` imports (absolute or relative)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(Path(path).read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[1] for a in node.names if a.name.startswith(PACKAGE + ".")}
        elif isinstance(node, ast.ImportFrom):
            if node.module in (None, PACKAGE):  # from . import x / from bnstudy import x
                names |= {a.name for a in node.names}
            elif node.level > 0:  # from .x import y
                names.add(node.module.split(".")[0])
            elif node.module.startswith(PACKAGE + "."):  # from bnstudy.x import y
                names.add(node.module.split(".")[1])
    return frozenset(n for n in names if (package_dir / f"{n}.py").exists())


def module_closure(script: Path, package_dir: Path) -> list[str]:
    """Every package module ``script`` can load, directly or through other modules, sorted."""
    seen: set[str] = {"__init__"}
    todo = set(imported_modules(script, package_dir))
    while todo:
        name = todo.pop()
        seen.add(name)
        todo |= imported_modules(package_dir / f"{name}.py", package_dir) - seen
    # Numba loads the package's cache locator (named in an environment variable by __init__, not
    # imported) when a module of the closure runs a cached kernel
    if "kernelcache" not in seen and any(_uses_numba(package_dir / f"{n}.py") for n in seen):
        seen.add("kernelcache")
    return sorted(seen)


@cache
def _uses_numba(path: Path) -> bool:
    """Whether the module imports Numba (anywhere in it)."""
    if not path.exists():
        return False
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "numba" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "numba":
            return True
    return False


def code_inputs(script: str, root: Path) -> list[str]:
    """The code inputs of the rule running ``workflow/scripts/<script>``, relative to ``root``.

    The script, ``_setup.py`` (which every script starts through) and the modules
    either can load.
    """
    scripts = Path("workflow") / "scripts"
    package = Path("src") / PACKAGE
    entries = [scripts / "_setup.py", scripts / script]
    modules = sorted(set().union(*(module_closure(root / e, root / package) for e in entries)))
    return [e.as_posix() for e in entries] + [(package / f"{m}.py").as_posix() for m in modules]
