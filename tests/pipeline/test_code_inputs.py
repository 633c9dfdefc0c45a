"""Rules that only print or draw load no compiled code, so editing a kernel re-runs only the rules
that compute with it (each rule's code inputs are the modules its script can load: bnstudy.pipeline.codedeps)."""

import ast
import functools
from pathlib import Path

import pytest

from bnstudy.base import catalogue
from bnstudy.pipeline.codedeps import code_inputs, module_closure
from conftest import ROOT

PACKAGE = ROOT / "src" / "bnstudy"
SCRIPTS = ROOT / "workflow" / "scripts"
# the statistics the reports compute with (bootstrap and t intervals, fixed-order moments): compiled,
# and loaded on purpose
STATISTICS = {"base.stats", "base.fixedmath", "compiled.reductions", "evaluation.means"}


@functools.cache  # parsed once a session: every parametrised test asks (about 1 s each)
def compiled_modules() -> frozenset[str]:
    """Modules that import numba or define kernels with bnstudy.base.fixedmath's JIT decorator."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import) and any(a.name == "numba" for a in node.names):
                found.add(name)
            elif (
                isinstance(node, ast.ImportFrom)
                and (node.module or "").endswith("fixedmath")
                and "JIT" in {a.name for a in node.names}
            ):
                found.add(name)
    return frozenset(found)


def test_the_compiled_modules_are_found():
    assert {
        "compiled.kernels",
        "compiled.probes",
        "compiled.backprop",
        "studies.batch_size.remedies",
        "evaluation.accuracy",
        "compiled.reductions",  # the recomputed statistics' pooled moments
        "evaluation.distance",
        "compiled.conv",
        "base.stats",
        "base.fixedmath",
    } <= compiled_modules()
    assert not {"paper.latex", "paper.figures", "base.designs", "base.io"} & compiled_modules()
    # a report's paired intervals and the batch-size summary JSON load no kernel
    assert not {"evaluation", "evaluation.paired", "studies.batch_size.estimates"} & compiled_modules()


@functools.cache
def script_modules(script: str) -> frozenset[str]:
    """The package modules (dotted, without ``bnstudy.``) a rule script can load."""
    return frozenset(
        ".".join(Path(p).relative_to("src/bnstudy").with_suffix("").parts)
        for p in code_inputs(script, ROOT)
        if p.startswith("src/")
    )


FIGURE_SCRIPTS = sorted(p.name for p in SCRIPTS.glob("*.py") if "figure" in p.stem)


@pytest.mark.parametrize("script", FIGURE_SCRIPTS)
def test_a_figure_rule_loads_no_compiled_code(script):
    loaded = script_modules(script)
    assert not loaded & compiled_modules(), f"{script} can load compiled code: {sorted(loaded & compiled_modules())}"


SUMMARY_SCRIPTS = sorted(p.name for p in SCRIPTS.glob("*.py") if "summar" in p.stem)


@pytest.mark.parametrize("script", SUMMARY_SCRIPTS)
def test_a_summary_rule_loads_only_the_compiled_statistics(script):
    """A summary computes from the jobs' tables: editing a network or probe kernel must not re-run it."""
    loaded = script_modules(script)
    assert len(SUMMARY_SCRIPTS) >= 8
    assert not (loaded & compiled_modules()) - STATISTICS, f"{script} loads {sorted(loaded & compiled_modules())}"


def report_module(study: str) -> Path | None:
    """The module that writes a study's report (its JSON, macros, tables): ``report.py``, or the two
    oldest studies' ``summary.py``."""
    folder = PACKAGE / "studies" / study
    return next((folder / f for f in ("report.py", "summary.py") if (folder / f).is_file()), None)


REPORTS = [s.name for s in catalogue.STUDIES]


def test_every_study_has_a_report_module_and_every_report_module_is_checked():
    assert [s for s in REPORTS if report_module(s) is None] == []
    on_disk = {p.parent.name for p in (PACKAGE / "studies").glob("*/report.py")}
    assert on_disk <= set(REPORTS) and len(on_disk) >= 6


@pytest.mark.parametrize("study", REPORTS)
def test_a_study_report_loads_only_the_compiled_statistics(study):
    path = report_module(study)
    module = f"studies.{study}.{path.stem}"
    loaded = set(module_closure(path, PACKAGE)) & compiled_modules()
    assert loaded <= STATISTICS, (
        f"{module} loads {sorted(loaded - STATISTICS)}: take the constants from bnstudy.base.designs"
    )


def test_the_designs_are_the_studies_own_constants():
    from bnstudy.base import designs
    from bnstudy.nets import batching
    from bnstudy.studies.accumulation import report as accumulation_report
    from bnstudy.studies.finetune import science as finetune
    from bnstudy.studies.finetune import sentences as finetune_sentences
    from bnstudy.studies.serving import science as serving

    assert serving.STREAMS == designs.SERVING_STREAMS
    assert finetune.STREAMS == designs.FINETUNE_STREAMS == batching.ORDERS
    assert finetune.MODES == designs.FINETUNE_MODES
    assert set(finetune_sentences.STREAM_WORDS) == set(batching.ORDERS)
    assert accumulation_report.CONFIGS == designs.ACCUMULATION_CONFIGS
    assert not [
        n
        for n in ast.walk(ast.parse((PACKAGE / "base" / "designs.py").read_text()))
        if isinstance(n, ast.Import | ast.ImportFrom)
    ]


def test_scans_kept_on_disk_follow_the_files_bytes_and_survive_a_damaged_entry(tmp_path, monkeypatch):
    """The parse of each module is kept under the digest of its bytes (bnstudy.pipeline.codedeps._scan):
    an edited module is parsed again, whatever its time stamp, and an unreadable entry is replaced."""
    from bnstudy.pipeline import codedeps

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    package = tmp_path / "src" / "bnstudy"
    (package / "sub").mkdir(parents=True)
    for name in ("__init__.py", "sub/__init__.py", "sub/a.py", "sub/b.py", "c.py"):
        (package / name).write_text("")
    module = package / "sub" / "a.py"

    def scan_afresh(text):
        module.write_text(text)
        for f in (codedeps._scan, codedeps.imported_modules):  # a new process: only the disk kept
            f.cache_clear()
        return codedeps.imported_modules(module, package, "bnstudy.sub"), codedeps._uses_numba(module)

    assert scan_afresh("from . import b\nimport numba\n") == (frozenset({"sub", "sub.b"}), True)
    entries = list(codedeps._cache_dir().glob("*.json"))
    assert len(entries) == 1
    assert scan_afresh("def f():\n    from bnstudy import c\n") == (frozenset({"c"}), False)
    assert len(list(codedeps._cache_dir().glob("*.json"))) == 2
    entries[0].write_text("{not json")  # damaged: parsed again and rewritten
    assert scan_afresh("from . import b\nimport numba\n") == (frozenset({"sub", "sub.b"}), True)
    assert entries[0].read_text().startswith("{")
