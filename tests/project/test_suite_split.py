"""`make test` runs pytest in two processes (scripts/test-suite): every test `make test` selects runs in
exactly one of them, and no unit-side test waits for a pipeline build."""

import itertools
import re
import tomllib

from _pytest.mark.expression import Expression

from conftest import ROOT

SCRIPT = ROOT / "scripts" / "test-suite"
MAKE_TEST = "not paper_config and not scale"  # what `make test` has always selected


def _selection(name: str) -> str:
    match = re.search(rf'^{name}="([^"]+)"$', SCRIPT.read_text(), re.MULTILINE)
    assert match, f"{SCRIPT.name} sets no {name}"
    return match.group(1)


def _markers() -> list[str]:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    return [line.split(":")[0].split("(")[0].strip() for line in declared]


def test_every_selected_test_runs_in_exactly_one_process():
    unit, rest, whole = (Expression.compile(e) for e in (_selection("UNIT"), _selection("REST"), MAKE_TEST))
    markers = _markers()
    assert {"pipeline", "slow", "slurm", "paper_config", "scale"} <= set(markers)
    for n in range(len(markers) + 1):
        for marked in itertools.combinations(markers, n):
            has = set(marked)

            def matcher(name, **kwargs):
                return name in has

            runs = [unit.evaluate(matcher), rest.evaluate(matcher)]
            assert runs.count(True) == (1 if whole.evaluate(matcher) else 0), (marked, runs)


def test_make_test_runs_the_split_suite():
    recipe = (ROOT / "Makefile").read_text().split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "scripts/test-suite" in recipe
    assert "pytest" not in recipe.replace("scripts/test-suite", "")
