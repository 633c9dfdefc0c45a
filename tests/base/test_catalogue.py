"""The studies' catalogue (bnstudy.base.catalogue) is the one list of studies: every study folder,
rules file and paper section is listed in it, and what the workflow derives from it matches the files."""

import re

import pytest
import yaml

from bnstudy.base import catalogue
from bnstudy.paper import build, figures
from conftest import ROOT

COMMON = {"common", "data", "train", "paper", "manifest"}  # rules files that are no study's


def test_every_study_folder_rules_file_and_section_is_listed_once():
    names = [s.name for s in catalogue.STUDIES]
    assert len(set(names)) == len(names)
    folders = {p.parent.name for p in (ROOT / "src" / "bnstudy" / "studies").glob("*/__init__.py")}
    assert folders == set(names)
    rules = {p.stem for p in (ROOT / "workflow" / "rules").glob("*.smk")} - COMMON
    assert rules == set(names)
    sections = {p.stem for p in (ROOT / "paper" / "sections").glob("*.tex")}
    listed = [x for s in catalogue.STUDIES for x in s.paper_sections]
    assert set(listed) <= sections and len(set(listed)) == len(listed)
    # main.tex inputs the studies' sections only through the generated list
    main = (ROOT / "paper" / "main.tex").read_text()
    assert "\\input{generated/sections.tex}" in main
    assert not [x for x in listed if f"sections/{x}.tex" in main]


def optional_in_test_config() -> list[str]:
    config = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    return [s.name for s in catalogue.included(config) if s.optional]


def test_the_test_config_runs_optional_studies_and_leaves_some_out():
    config = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    assert "precise_rows" in optional_in_test_config()
    assert "compare" not in config  # no other build to set beside it
    assert "curves" in optional_in_test_config()  # on the digits: the training loss and accuracy by epoch
    assert not [s for s in catalogue.STUDIES if not s.optional and s.config is not None and s.config not in config]


@pytest.mark.parametrize("name", optional_in_test_config())
def test_an_optional_study_runs_only_where_the_config_has_its_section(name):
    """An optional study (``precise_rows``, ...): without its section a config does not run it, print it,
    check it or declare its local rules; with it, it does all four, in the paper's order."""
    config = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    study = next(s for s in catalogue.STUDIES if s.name == name)
    assert study.optional and study in catalogue.included(config)
    order = [s.name for s in catalogue.STUDIES if s in catalogue.included(config)]
    assert [s.name for s in catalogue.included(config)] == order
    sections = catalogue.paper_sections(config)
    assert set(study.paper_sections) <= set(sections)
    assert set(study.local_rules) <= set(catalogue.local_rules(config))
    check = f"bnstudy.studies.{name}.checks"
    has_check = study.check() is not None
    assert (check in {c.__module__ for c in catalogue.checks(config)}) == has_check
    before = len(catalogue.included(config))
    del config[study.config]
    assert not set(study.paper_sections) & set(catalogue.paper_sections(config))
    assert not set(study.local_rules) & set(catalogue.local_rules(config))
    assert len(catalogue.included(config)) == before - 1
    assert check not in {c.__module__ for c in catalogue.checks(config)}


def test_the_test_configs_last_study_is_last_in_its_paper_and_its_local_rules():
    """The catalogue's order is the paper's and the local rules': the last study the test config runs (an
    optional one, added after the others) comes last in both, whichever study that is."""
    config = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    study = catalogue.included(config)[-1]
    assert study.optional and study.name != "compare"
    sections, local = list(study.paper_sections), list(study.local_rules)
    assert catalogue.paper_sections(config)[-len(sections) :] == sections
    assert catalogue.local_rules(config)[-len(local) :] == local
    assert next(s for s in catalogue.STUDIES if s.name == "precise_rows").check() is not None


def test_each_study_check_with_a_checks_module_runs_with_the_config_checks():
    config = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    added = [s.config for s in catalogue.STUDIES if s.config is not None and s.config not in config]
    for section in added:  # every optional study included
        config[section] = {}
    found = {c.__module__ for c in catalogue.checks(config)}
    modules = {
        f"bnstudy.studies.{p.parent.name}.checks" for p in (ROOT / "src" / "bnstudy" / "studies").glob("*/checks.py")
    }
    assert found == modules and len(modules) >= 7
    for section in added:
        del config[section]
    from bnstudy.base.config import study_checks

    assert study_checks(config) == catalogue.checks(config)


def test_figure_widths_come_from_the_catalogue_and_match_the_paper():
    assert figures.PRINTED_WIDTH == catalogue.printed_widths()
    printed = {}
    for tex in (ROOT / "paper" / "sections").glob("*.tex"):
        for frac, name in re.findall(
            r"\\includegraphics\[width=([\d.]*)\\linewidth\]\{generated/figures/(\w+)\.pdf\}", tex.read_text()
        ):
            printed[name] = float(frac) if frac else 1.0
    assert printed == catalogue.printed_widths()


@pytest.mark.parametrize("sections", [[], ["companions", "protocols"]])
def test_the_paper_build_writes_one_input_per_section_in_order(tmp_path, monkeypatch, sections):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.tex").write_text("x")
    monkeypatch.setattr(build.subprocess, "run", lambda *a, **k: type("R", (), {"returncode": 0})())
    build.build(tmp_path / "src", {}, tmp_path / "out", str(tmp_path / "log"), sections=sections)
    written = (tmp_path / "out" / "generated" / "sections.tex").read_text()
    assert written == "".join(f"\\input{{sections/{s}.tex}}\n" for s in sections)


def test_only_the_figure_scripts_take_the_catalogue_among_their_code_inputs():
    """The figures read their printed widths from the catalogue; any other script that reached it (say
    through the config checks) would re-run when a study is added, and the data split's re-run
    re-runs every job."""
    from bnstudy.pipeline.codedeps import code_inputs

    scripts = sorted(p.name for p in (ROOT / "workflow" / "scripts").glob("*.py") if not p.name.startswith("_"))
    reach = [s for s in scripts if "src/bnstudy/base/catalogue.py" in code_inputs(s, ROOT)]
    figures_ = [s for s in scripts if "figure" in s]
    assert reach == figures_ and "split.py" not in reach
