"""Rule scripts: each starts through _setup.start; those that say they need no PyTorch do not load it."""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bnstudy.pipeline.codedeps import code_inputs, module_closure

pytestmark = pytest.mark.slow  # rule scripts in their own processes

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS_DIR = ROOT / "workflow" / "scripts"
SCRIPTS = sorted(p for p in SCRIPTS_DIR.glob("*.py") if p.name != "_setup.py")


def start_call(tree: ast.Module) -> ast.Call:
    calls = [
        n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "start"
    ]
    assert len(calls) == 1, "a rule script calls start(snakemake) exactly once"
    return calls[0]


def without_torch(call: ast.Call) -> bool:
    return any(k.arg == "torch" and isinstance(k.value, ast.Constant) and k.value.value is False for k in call.keywords)


def imports(tree: ast.Module) -> list[str]:
    """Import statements of the script, as source lines (the bnstudy ones included)."""
    lines = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            lines += [f"import {a.name}" for a in node.names if a.name != "sys"]
        elif isinstance(node, ast.ImportFrom) and node.module not in ("_setup", "__future__"):
            lines += [f"from {node.module} import {a.name}" for a in node.names]
    return lines


# One process imports the third-party packages the scripts use (never bnstudy, never torch), then
# forks a child per script that runs the script's import statements and reports ``sys.modules``:
# what each script loads of the package is the same as in a fresh interpreter (the package is not
# loaded before the fork), without paying NumPy's, Numba's, pandas' and matplotlib's imports once
# per script (about 40 CPU s of the suite).
FORK_SERVER = r"""
import json, os, sys
import numpy, numba, pandas, scipy.stats, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot
preloaded = [m for m in sys.modules if m.split(".")[0] in ("bnstudy", "torch")]
assert not preloaded, preloaded
print(json.dumps("ready"), flush=True)
for line in sys.stdin:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            exec(json.loads(line), {"__name__": "__imports__"})
            out = " ".join(sys.modules)
        except BaseException as e:
            out = "ERROR " + repr(e)
        with os.fdopen(w, "w") as f:
            f.write(out)
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        out = f.read()
    os.waitpid(pid, 0)
    print(json.dumps(out), flush=True)
"""


@functools.cache
def _fork_server() -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", FORK_SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert json.loads(proc.stdout.readline()) == "ready", "the import server did not start"
    return proc


@pytest.fixture(scope="module", autouse=True)
def _stop_fork_server():
    yield
    if _fork_server.cache_info().currsize:
        server = _fork_server()
        server.stdin.close()  # its loop ends
        server.wait(timeout=60)


@functools.cache
def loaded_after_imports(script: Path) -> frozenset[str]:
    """The modules loaded after the script's import statements, in a process that had loaded only
    third-party packages (:data:`FORK_SERVER`), one process per script, shared by the tests that read it."""
    code = "\n".join(
        [
            "import sys",
            f"sys.path.insert(0, {str(ROOT / 'src')!r})",
            *imports(ast.parse(script.read_text())),
        ]
    )
    server = _fork_server()
    server.stdin.write(json.dumps(code) + "\n")
    server.stdin.flush()
    out = json.loads(server.stdout.readline())
    assert not out.startswith("ERROR"), f"{script.name}: {out}"
    return frozenset(out.split())


WITHOUT_TORCH = [p for p in SCRIPTS if without_torch(start_call(ast.parse(p.read_text())))]


def test_every_script_starts_once_and_most_figure_and_table_scripts_skip_pytorch():
    assert len(SCRIPTS) >= 20  # start_call asserts one start(...) per script
    assert len(WITHOUT_TORCH) >= 10


@pytest.mark.parametrize("script", WITHOUT_TORCH, ids=lambda p: p.stem)
def test_script_started_without_pytorch_does_not_import_it(script):
    loaded = loaded_after_imports(script)
    assert "torch" not in loaded, f"{script.name} starts with torch=False but its imports load torch"


def test_every_rule_declares_its_script_and_the_package_modules_the_script_can_load(tmp_path):
    """Snakemake's code trigger sees the script: file only; the modules it uses must be inputs. The
    tiny Fashion config runs the training curves (the digits configs have no validation split) and
    most other studies: that config is read with ``compare``'s section added (a design macros file and
    its manifest as the other build) and the test config's section of every other optional study it
    leaves out, so that every study's rules are."""
    import yaml
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, ResourceSettings

    from bnstudy.base import catalogue
    from test_compare import write_build

    expected = write_build(tmp_path / "other", {"design": {"dataSetName": "Fashion-MNIST"}})
    compare = {"compare": {"builds": [{"directory": str(tmp_path / "other"), "expected": str(expected)}]}}
    tiny = yaml.safe_load((ROOT / "config" / "fashion-tiny.yaml").read_text())
    test = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    added = {
        s.config: test[s.config] for s in catalogue.STUDIES if s.optional and s.config not in tiny and s.config in test
    }
    config = tiny | added | compare
    # the families the added studies form, declared as the test config declares them
    config["families"] = {f: tiny["families"].get(f, test["families"].get(f)) for f in catalogue.families(config)}
    (tmp_path / "compare.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    with SnakemakeApi() as api:
        workflow = api.workflow(
            resource_settings=ResourceSettings(cores=1),
            snakefile=ROOT / "Snakefile",
            config_settings=ConfigSettings(configfiles=[tmp_path / "compare.yaml"]),
            workdir=ROOT,
        )._workflow
        rules = [r for r in workflow.rules if r.script]
        missing = {}
        for rule in rules:
            script = (ROOT / "workflow" / "rules" / rule.script).resolve()
            undeclared = set(code_inputs(script.name, ROOT)) - {str(f) for f in rule.input}
            if undeclared:
                missing[rule.name] = sorted(undeclared)
    assert len(rules) >= 20 and {script.name for script in SCRIPTS} <= {Path(r.script).name for r in rules}
    assert not missing, missing


def test_code_inputs_follow_imports_inside_functions_and_through_modules():
    package = ROOT / "src" / "bnstudy"
    # the shared evaluation imports model inside a function; model and kernels read the registry of
    # normalisers (which names the PyTorch modules by string: no pipeline job imports norms)
    assert {
        "evaluation",
        "evaluation.accuracy",
        "nets.model",
        "base.normalisers",
        "nets.recipe",
        "compiled.kernels",
    } <= set(module_closure(SCRIPTS_DIR / "running_stats_sorted.py", package))
    # another study's script scores its networks through the shared layer, not through study 2
    assert not [m for m in module_closure(SCRIPTS_DIR / "running_stats_sorted.py", package) if "batch_size" in m]
    assert module_closure(SCRIPTS_DIR / "figure_batch_size.py", package) == [
        "__init__",
        "base",
        "base.catalogue",  # the figures' printed widths
        "base.io",
        "base.normalisers",
        "paper",
        "paper.figures",
        "studies",
        "studies.batch_size",
        "studies.batch_size.figure",
    ]
    # every script starts through _setup.py, which loads the job server's hand-off and runtime
    assert code_inputs("figure_batch_size.py", ROOT) == [
        "workflow/scripts/_setup.py",
        "workflow/scripts/figure_batch_size.py",
        "src/bnstudy/__init__.py",
        "src/bnstudy/base/__init__.py",
        "src/bnstudy/base/catalogue.py",
        "src/bnstudy/base/io.py",
        "src/bnstudy/base/normalisers.py",
        "src/bnstudy/base/runtime.py",
        "src/bnstudy/paper/__init__.py",
        "src/bnstudy/paper/figures.py",
        "src/bnstudy/pipeline/__init__.py",
        "src/bnstudy/pipeline/jobserver.py",
        "src/bnstudy/studies/__init__.py",
        "src/bnstudy/studies/batch_size/__init__.py",
        "src/bnstudy/studies/batch_size/figure.py",
    ]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_modules_a_script_loads_on_import_are_among_its_code_inputs(script):
    """The static reading is checked against what importing the script's imports really loads."""
    loaded = {m.partition(".")[2] for m in loaded_after_imports(script) if m.startswith("bnstudy.")}
    assert loaded and loaded <= set(module_closure(script, ROOT / "src" / "bnstudy"))
