"""Which package modules a rule script can load: the code inputs of its rule.

Snakemake's code trigger sees a rule's ``script:`` file, not the modules that file
imports, so every rule lists its script, ``_setup.py`` and every ``bnstudy`` module
the script can load as inputs; a change to any of them then re-runs the rule.
The list is read from the source, not typed by hand: every ``import`` of a
``bnstudy`` module anywhere in a file (inside functions too), followed through
the modules it names, with the ``__init__`` of every subpackage on the way. That
over-approximates what one run executes (a module imported inside a function the
script never calls still counts), which errs on the side of re-running.

Modules are named by their dotted path below the package (``studies.serving.science``).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
from functools import cache
from pathlib import Path

PACKAGE = "bnstudy"


def _file(name: str, package_dir: Path) -> Path | None:
    """The source file of module ``name`` (dotted, below the package), or None if it is none."""
    parts = name.split(".")
    module = package_dir.joinpath(*parts).with_suffix(".py")
    if module.exists():
        return module
    init = package_dir.joinpath(*parts, "__init__.py")
    return init if init.exists() else None


def _absolute(level: int, module: str | None, here: str) -> str | None:
    """The dotted name below the package that ``from <level dots><module> import ...`` imports
    from (None: not this package)."""
    if level:
        base = here.split(".")[: len(here.split(".")) - level + 1] if here else []
        return ".".join([*base[1:], *([module] if module else [])])
    if module == PACKAGE:
        return ""
    if module and module.startswith(PACKAGE + "."):
        return module[len(PACKAGE) + 1 :]
    return None


SCAN_VERSION = b"codedeps-scan-1"  # part of the disk cache's key: change it when _parse changes


def _parse(text: bytes, path: Path) -> dict:
    """Every import statement of a module's source, anywhere in it (``[level, module or None,
    [names]]``; ``import a.b`` as level -1), and whether it imports Numba."""
    imports, numba = [], False
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if isinstance(node, ast.Import):
            imports.append([-1, None, [a.name for a in node.names]])
            numba |= any(a.name.split(".")[0] == "numba" for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            imports.append([node.level, node.module, [a.name for a in node.names]])
            numba |= node.level == 0 and (node.module or "").split(".")[0] == "numba"
    return {"imports": imports, "numba": numba}


def _cache_dir() -> Path:
    """Where parsed modules are kept between processes: ``$XDG_CACHE_HOME/bnstudy/codedeps``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "bnstudy" / "codedeps"


@cache  # one scan per file while the Snakefile is read
def _scan(path: Path) -> dict:
    """:func:`_parse` of ``path``, kept on disk under the digest of its bytes: every Snakemake
    process (each cluster job starts two) reads the workflow, and parsing the package's modules
    was a third of that; the digest makes a stale entry impossible, whatever the files' times."""
    text = Path(path).read_bytes()
    entry = _cache_dir() / f"{hashlib.sha256(SCAN_VERSION + text).hexdigest()}.json"
    try:
        return json.loads(entry.read_text())
    except (OSError, ValueError):
        pass
    scanned = _parse(text, path)
    try:  # atomic: a concurrent reader sees the whole entry or none
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = entry.with_name(f"{entry.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(scanned))
        os.replace(tmp, entry)
    except OSError:  # a read-only cache: parse every time
        pass
    return scanned


@cache
def imported_modules(path: Path, package_dir: Path, here: str = "") -> frozenset[str]:
    """Dotted names of the package's modules that ``path`` imports (absolute or relative).

    ``here``: the file's own package, dotted from ``bnstudy`` (for relative imports).
    """
    names: set[str] = set()
    for level, module, aliases in _scan(Path(path))["imports"]:
        if level < 0:
            names |= {a[len(PACKAGE) + 1 :] for a in aliases if a.startswith(PACKAGE + ".")}
            continue
        module = _absolute(level, module, here)
        if module is None:
            continue
        if module:
            names.add(module)
        # from bnstudy.x import y: y may be a module of subpackage x
        names |= {f"{module}.{a}".lstrip(".") for a in aliases}
    return frozenset(n for n in names if _file(n, package_dir) is not None)


def _with_parents(name: str) -> set[str]:
    """``name`` and the subpackages it lies in (whose ``__init__`` runs when it is imported)."""
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)}


def module_closure(script: Path, package_dir: Path) -> list[str]:
    """Every package module ``script`` can load, directly or through other modules, sorted.

    ``__init__`` is the package's own; a subpackage is named by its dotted path.
    """
    seen: set[str] = {"__init__"}
    todo = set().union(*map(_with_parents, imported_modules(script, package_dir)))
    while todo:
        name = todo.pop()
        seen.add(name)
        path = _file(name, package_dir)
        here = ".".join([PACKAGE, *name.split(".")[: -1 if path.name != "__init__.py" else None]])
        found = imported_modules(path, package_dir, here)
        todo |= set().union(*map(_with_parents, found)) - seen
    # Numba loads the package's cache locator (named in an environment variable by __init__, not
    # imported) when a module of the closure runs a cached kernel
    if any(_uses_numba(_file(n, package_dir)) for n in seen - {"__init__"}):
        seen |= _with_parents("pipeline.kernelcache")
    return sorted(seen)


def _uses_numba(path: Path | None) -> bool:
    """Whether the module imports Numba (anywhere in it)."""
    if path is None or not path.exists():
        return False
    return bool(_scan(path)["numba"])


def code_inputs(script: str, root: Path) -> list[str]:
    """The code inputs of the rule running ``workflow/scripts/<script>``, relative to ``root``.

    The script, ``_setup.py`` (which every script starts through) and the modules
    either can load (subpackages by their ``__init__.py``).
    """
    scripts = Path("workflow") / "scripts"
    package = Path("src") / PACKAGE
    entries = [scripts / "_setup.py", scripts / script]
    modules = sorted(set().union(*(module_closure(root / e, root / package) for e in entries)))
    files = {_file(m, root / package) if m != "__init__" else root / package / "__init__.py" for m in modules}
    return [e.as_posix() for e in entries] + sorted(f.relative_to(root).as_posix() for f in files)
