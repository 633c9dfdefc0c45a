"""The kernel cache is filed by code and machine, not by the checkout's path (bnstudy.pipeline.kernelcache):
a second copy of the package loads what the first compiled; another simulated machine compiles its own."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow

PROBE = """
import json, sys
import numpy as np
from bnstudy.base import fixedmath
fixedmath.powi(1.5, 3)
print(json.dumps({"hits": sum(fixedmath.powi.stats.cache_hits.values()),
                  "misses": sum(fixedmath.powi.stats.cache_misses.values()),
                  "package": fixedmath.__file__}))
"""


def _copy(target: Path) -> Path:
    shutil.copytree(ROOT / "src" / "bnstudy", target / "bnstudy", ignore=shutil.ignore_patterns("__pycache__"))
    return target


def _powi(src: Path, cache: Path, **env) -> dict:
    variables = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    variables |= {"PYTHONPATH": str(src), "XDG_CACHE_HOME": str(cache), **env}
    out = subprocess.run([sys.executable, "-c", PROBE], env=variables, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def test_a_second_copy_loads_the_kernels_the_first_compiled_and_another_machine_compiles_its_own(tmp_path):
    cache = tmp_path / "cache"
    first, second = _copy(tmp_path / "a"), _copy(tmp_path / "b")
    run = _powi(first, cache)
    assert run["package"].startswith(str(first)) and run["misses"] == 1 and run["hits"] == 0
    run = _powi(second, cache)
    assert run["package"].startswith(str(second)) and run["hits"] == 1 and run["misses"] == 0
    # a simulated machine: its own directory, compiled once, then loaded by the other copy
    generic = {"NUMBA_CPU_NAME": "generic", "NUMBA_CPU_FEATURES": ""}
    assert _powi(first, cache, **generic)["misses"] == 1
    assert _powi(second, cache, **generic)["hits"] == 1
    targets = sorted(p.name for p in next(cache.glob("bnstudy/numba-*")).iterdir())
    assert len(targets) == 2 and any(t.startswith("generic-") for t in targets), targets
    # filed by the package-relative directory, no trace of either checkout's path
    files = [p.relative_to(cache) for p in cache.rglob("*.nbi")]
    assert files and all(p.parts[3] == "bnstudy" for p in files), files


def test_an_edited_kernel_module_is_compiled_afresh_in_its_copy(tmp_path):
    cache = tmp_path / "cache"
    first, second = _copy(tmp_path / "a"), _copy(tmp_path / "b")
    assert _powi(first, cache)["misses"] == 1
    module = second / "bnstudy" / "base" / "fixedmath.py"
    module.write_text(module.read_text() + "\n# an edit\n")
    assert _powi(second, cache)["misses"] == 1  # another digest: another directory
    assert _powi(first, cache)["hits"] == 1  # the first copy's entries are still there


def test_functions_of_other_packages_keep_numbas_default_place(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "elsewhere.py").write_text("import numba\n\n@numba.njit(cache=True)\ndef f(x):\n    return x + 1\n")
    code = "import bnstudy, elsewhere; elsewhere.f(1); print(elsewhere.f.stats.cache_misses)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env |= {"PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{other}", "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    files = list((tmp_path / "cache").rglob("*.nbi"))
    assert len(files) == 1 and files[0].parent.name.startswith("other_"), files  # Numba's own filing


class _Recorded(Exception):
    pass


@pytest.mark.parametrize("config", ["fashion-cnn.yaml", "fashion-cluster.yaml", None])
def test_the_warm_up_compiles_the_convolutions_for_the_configs_number_of_layers(monkeypatch, config):
    """The convolutional kernels are typed by the number of layers: the warm-up builds its network with
    the config's layers (strides and residual connections too) when the workflow names them
    (``BNSTUDY_CONV_LAYERS``, set by the Snakefile's onstart), else the tests' two layers."""
    import yaml

    from bnstudy.nets import conv_train
    from bnstudy.tools import warmup

    if config is None:
        monkeypatch.delenv(warmup.LAYERS_VARIABLE, raising=False)
        want = ((4, 8), (1, 2), (-1, -1))
    else:
        layers = yaml.safe_load((ROOT / "config" / config).read_text())["network"]["layers"]
        monkeypatch.setenv(warmup.LAYERS_VARIABLE, json.dumps(layers))
        want = (
            (4,) * len(layers),
            tuple(layer.get("stride", 1) for layer in layers),
            tuple(layer.get("skip", -1) for layer in layers),
        )
        assert len(layers) >= 3 and max(want[2]) >= 0  # deeper than the default, with a residual connection
    assert warmup.conv_layout() == want
    built = []

    def record(kind, channels, groups, **kw):
        built.append((channels, kw["strides"], kw["skips"]))
        raise _Recorded

    monkeypatch.setattr(conv_train, "ConvSpec", record)
    with pytest.raises(_Recorded):
        warmup._conv()
    assert built == [want]


HOLD = """
import sys
from bnstudy.pipeline import kernelcache
with kernelcache.one_warm_up(lambda line: print(line, flush=True)):
    sys.stdin.read()  # held until the test closes this process's input
"""


def test_a_second_warm_up_of_one_machine_waits_for_the_first_and_another_machines_does_not(tmp_path):
    """Numba has no lock: two warm-ups of one cache used to compile the same kernels side by side."""
    import time

    from bnstudy.pipeline.kernelcache import WARMING

    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env |= {"PYTHONPATH": str(ROOT / "src"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    generic = env | {"NUMBA_CPU_NAME": "generic", "NUMBA_CPU_FEATURES": ""}
    logs = {name: tmp_path / f"{name}.log" for name in ("first", "second", "other machine")}

    def start(name, variables):
        with open(logs[name], "w") as out:
            return subprocess.Popen([sys.executable, "-c", HOLD], env=variables, stdin=subprocess.PIPE, stdout=out)

    def seen(name, text, seconds=60):
        end = time.monotonic() + seconds
        while text not in logs[name].read_text():
            assert time.monotonic() < end, f"{name}: no {text!r} in {seconds} s: {logs[name].read_text()!r}"
            time.sleep(0.05)

    first = start("first", env)
    seen("first", WARMING)
    second, other = start("second", env), start("other machine", generic)
    try:
        seen("second", "bnstudy: waiting for another warm-up of these kernels")
        seen("other machine", WARMING + "generic-")  # another target's lock: not held
        other.communicate(timeout=60)
        time.sleep(0.5)
        assert WARMING not in logs["second"].read_text()  # still waiting while the first holds the lock
        first.communicate(timeout=60)
        second.communicate(timeout=60)
        assert logs["second"].read_text().splitlines()[-1] == logs["first"].read_text().splitlines()[-1]
        assert [p.returncode for p in (first, second, other)] == [0, 0, 0]
    finally:
        for p in (first, second, other):
            p.kill()
