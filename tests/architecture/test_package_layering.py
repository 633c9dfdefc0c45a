"""The package's layout shows its architecture: layers in one order, each module saying what it holds.

Read from the source with ``ast`` (no import), so a new module is checked as soon as it exists."""

import ast
from pathlib import PurePosixPath

import pytest

from conftest import ROOT

PACKAGE = ROOT / "src" / "bnstudy"
# each layer may import the layers before it, never one after it (bnstudy/__init__.py)
LAYERS = ["base", "pipeline", "compiled", "nets", "evaluation", "paper", "studies", "audit", "tools"]
MODULES = sorted(PACKAGE.rglob("*.py"))
# The pipeline's machinery (the cost model, the job server, the build record) stands on base alone;
# the science after it imports it only where the science meets the build: each study's cost entries
# (priced by pipeline.plan's Work) and the comparison of builds (which reads their manifests and pins).
SCIENCE = ["compiled", "nets", "evaluation", "paper", "studies", "audit"]
PIPELINE_USERS = ["studies/*/cost.py", "studies/compare/report.py"]


def _imports(source: str, here: tuple[str, ...]) -> set[str]:
    """The ``bnstudy`` modules ``source`` (a module of package ``here``) imports from, dotted,
    relative imports resolved."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(here[: len(here) - node.level + 1])
                found.add(".".join([*base, *([node.module] if node.module else [])]))
            elif node.module and node.module.startswith("bnstudy"):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("bnstudy.")}
    return found


def test_every_module_lies_in_a_layer_and_the_layers_are_the_declared_ones():
    top = {p.relative_to(PACKAGE).parts[0] for p in MODULES if len(p.relative_to(PACKAGE).parts) > 1}
    assert top == set(LAYERS)
    assert [p.name for p in PACKAGE.glob("*.py")] == ["__init__.py"]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_module_imports_a_later_layer(path):
    layer = path.relative_to(PACKAGE).parts[0]
    if layer == "__init__.py":
        return
    upward = _upward(path.read_text(), path.relative_to(PACKAGE.parent).parent.parts)
    assert not upward, f"{path.relative_to(PACKAGE)} imports {upward}, a later layer than {layer}"


def _upward(source: str, here: tuple[str, ...]) -> list[str]:
    """The imports of ``source`` (in package ``here``, e.g. ``("bnstudy", "base")``) from a later layer."""
    later = set(LAYERS[LAYERS.index(here[1]) + 1 :])
    return sorted(m for m in _imports(source, here) if m.split(".")[1:2] and m.split(".")[1] in later)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_every_module_and_subpackage_says_what_it_holds(path):
    doc = ast.get_docstring(ast.parse(path.read_text()))
    assert doc and len(doc.split()) >= 5, f"{path.relative_to(PACKAGE)} has no docstring worth the name"


def test_the_layer_check_sees_an_upward_import():
    """The check can fail: a base module importing a study is caught."""
    source = (PACKAGE / "base" / "io.py").read_text()
    assert _upward(source, ("bnstudy", "base")) == []
    assert _upward(source + "\nfrom bnstudy.studies.batch_size import evaluation\n", ("bnstudy", "base")) == [
        "bnstudy.studies.batch_size"
    ]
    assert _upward("from ..nets import model\n", ("bnstudy", "compiled")) == ["bnstudy.nets"]
    # what the studies share sits below them: it may read the networks, never a study
    assert _upward("from bnstudy.nets import network\n", ("bnstudy", "evaluation")) == []
    assert _upward("from bnstudy.studies.batch_size import remedies\n", ("bnstudy", "evaluation")) == [
        "bnstudy.studies.batch_size"
    ]


def _pipeline_imports(source: str, here: tuple[str, ...]) -> list[str]:
    """The imports of ``source`` (in package ``here``) from the pipeline's machinery."""
    return sorted(m for m in _imports(source, here) if m.split(".")[1:2] == ["pipeline"])


def _may_use_pipeline(relative: str) -> bool:
    """Whether the module at ``relative`` (to the package) may import the pipeline: not a science
    module, or one of :data:`PIPELINE_USERS`."""
    path = PurePosixPath(relative)
    return path.parts[0] not in SCIENCE or any(path.match(p) for p in PIPELINE_USERS)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_the_science_imports_the_pipeline_only_for_its_cost_and_the_comparison_of_builds(path):
    relative = path.relative_to(PACKAGE).as_posix()
    if _may_use_pipeline(relative):
        return
    used = _pipeline_imports(path.read_text(), path.relative_to(PACKAGE.parent).parent.parts)
    assert not used, f"{relative} imports the pipeline's machinery {used}: the science stands on base alone"


@pytest.mark.parametrize("pattern", PIPELINE_USERS)
def test_every_module_allowed_the_pipeline_uses_it(pattern):
    """The list names only modules that need it: each pattern matches a module importing the pipeline."""
    matched = [p for p in MODULES if PurePosixPath(p.relative_to(PACKAGE).as_posix()).match(pattern)]
    assert any(_pipeline_imports(p.read_text(), p.relative_to(PACKAGE.parent).parent.parts) for p in matched)


def test_the_pipeline_check_sees_a_science_module_importing_it():
    """The check can fail: a network or a study's science importing the pipeline is caught, relative
    imports too; a study's cost entries and the tools may import it."""
    assert _pipeline_imports("from bnstudy.pipeline import manifest\n", ("bnstudy", "nets")) == ["bnstudy.pipeline"]
    assert _pipeline_imports("from ...pipeline.plan import Work\n", ("bnstudy", "studies", "serving")) == [
        "bnstudy.pipeline.plan"
    ]
    assert not _may_use_pipeline("nets/model.py")
    assert not _may_use_pipeline("studies/serving/science.py")
    assert _may_use_pipeline("studies/serving/cost.py")
    assert _may_use_pipeline("tools/warmup.py")
    assert _may_use_pipeline("pipeline/plan/work.py")
    # and the pipeline stands on base: it is a later layer than base, an earlier one than the science
    assert _upward("from bnstudy.pipeline import plan\n", ("bnstudy", "base")) == ["bnstudy.pipeline"]
    assert _upward("from bnstudy.nets import model\n", ("bnstudy", "pipeline")) == ["bnstudy.nets"]
