"""scripts/mutation-score reads `mutmut results` lines of the package's modules at any depth."""

import importlib.machinery
import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "mutation-score"


def _script():
    loader = importlib.machinery.SourceFileLoader("mutation_score", str(SCRIPT))
    spec = importlib.util.spec_from_loader("mutation_score", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_result_lines_of_nested_modules_functions_and_methods_are_read():
    name = _script().NAME
    lines = {
        "    bnstudy.studies.batch_size.macros.x_macros__mutmut_575: survived": (
            "bnstudy.studies.batch_size.macros",
            "x_macros__mutmut_575",
            "survived",
        ),
        "    bnstudy.nets.recipe.xǁRecipeǁfrom_params__mutmut_12: killed": (
            "bnstudy.nets.recipe",
            "xǁRecipeǁfrom_params__mutmut_12",
            "killed",
        ),
        "    bnstudy.base.config.x__check_network__mutmut_5: not checked": (
            "bnstudy.base.config",
            "x__check_network__mutmut_5",
            "not checked",
        ),
    }
    for line, want in lines.items():
        m = name.match(line)
        assert m is not None and m.groups() == want, line
    assert name.match("    numpy.x_f__mutmut_1: killed") is None  # not the package's
