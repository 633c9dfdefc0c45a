"""No study imports another study: what studies share lives in the layer below them (``bnstudy.evaluation``).

Read from the source with ``ast`` (no import), imports inside functions included, so a new module or a
late import is checked as soon as it is written."""

import ast
from pathlib import Path

import pytest

from conftest import ROOT

STUDIES = ROOT / "src" / "bnstudy" / "studies"
MODULES = sorted(STUDIES.glob("*/**/*.py"))


def _imported(node: ast.AST, here: tuple[str, ...]) -> list[str]:
    """The dotted modules an import statement names, relative imports resolved against package ``here``
    (``from x import y`` counts as ``x.y``: ``y`` may be a module of package ``x``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = list(here[: len(here) - node.level + 1]) if node.level else []
    module = ".".join([*base, *([node.module] if node.module else [])])
    return [module] + [f"{module}.{a.name}" for a in node.names]


def other_studies(source: str, study: str, here: tuple[str, ...]) -> list[tuple[int, str]]:
    """``(line, module)`` of every import in ``source`` (a module of study ``study``, in package ``here``)
    of a module of another study."""
    found = []
    for node in ast.walk(ast.parse(source)):
        for name in _imported(node, here):
            parts = name.split(".")
            if parts[:2] == ["bnstudy", "studies"] and len(parts) > 2 and parts[2] != study:
                found.append((node.lineno, name))
                break  # one finding per statement: the first module it names of another study
    return sorted(found)


def _study_and_package(path: Path) -> tuple[str, tuple[str, ...]]:
    """The study a module belongs to and its package, dotted parts (``__init__`` is its own package's)."""
    parts = path.relative_to(STUDIES.parent.parent).with_suffix("").parts
    return path.relative_to(STUDIES).parts[0], parts[:-1]


def test_every_study_folder_is_read():
    assert {"batch_size", "companions", "finetune", "precise_rows"} <= {
        p.relative_to(STUDIES).parts[0] for p in MODULES
    }


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(STUDIES).as_posix())
def test_no_study_module_imports_another_study(path):
    study, here = _study_and_package(path)
    found = other_studies(path.read_text(), study, here)
    where = path.relative_to(ROOT).as_posix()
    assert not found, "; ".join(f"{where}:{line} imports {name}, a module of another study" for line, name in found)


def test_the_check_sees_an_import_of_another_study():
    """The check can fail: absolute, from-package, relative and late imports of another study are caught,
    the study's own modules are not."""
    here = ("bnstudy", "studies", "finetune")
    source = (
        "from bnstudy.studies.finetune import summary\n"
        "from .science import run\n"
        "from bnstudy.studies.batch_size.paired import x\n"
        "def f():\n"
        "    from bnstudy.studies import serving\n"
        "    import bnstudy.studies.companions.science\n"
        "from ..accumulation import science\n"
    )
    assert other_studies(source, "finetune", here) == [
        (3, "bnstudy.studies.batch_size.paired"),
        (5, "bnstudy.studies.serving"),
        (6, "bnstudy.studies.companions.science"),
        (7, "bnstudy.studies.accumulation"),
    ]
