"""A warm-up that completed leaves a mark (bnstudy.pipeline.kernelcache.mark_warmed): the next warm-up of
the same kernels loads them in one process instead of splitting the work over ``--jobs`` processes, each
paying for its own imports and loads. A cache that lost kernels loses its marks, so its next warm-up
splits again. The warm-up's parts are replaced here by fakes that record how they were run."""

import os
import subprocess

import pytest

from bnstudy.pipeline import kernelcache
from bnstudy.tools import warmup


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache directory of its own, and a record of how the warm-up ran: ``[("parts", n)]`` when it
    started ``n`` processes, ``[("here", parts)]`` when it compiled (or loaded) in its own process."""
    from numba.core import config

    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    runs = []

    class Process:
        def __init__(self, command):
            runs.append(("part", int(command[command.index("--parts") + 1])))

        def wait(self):
            return 0

    monkeypatch.setattr(subprocess, "Popen", Process)  # main imports it when it runs
    monkeypatch.setattr(warmup, "compile_healing", lambda part, parts, network: runs.append(("here", parts)) or [])
    monkeypatch.setattr(warmup, "heal_cache", lambda: [])
    return tmp_path, runs


def test_a_cold_warm_up_splits_over_its_jobs_then_the_next_loads_in_one_process(cache):
    root, runs = cache
    warmup.main(["--jobs", "2", "--network", "mlp"])
    assert runs == [("part", 2), ("part", 2)]
    assert kernelcache.warmed("mlp") and not kernelcache.warmed(repr(warmup.conv_layout()))
    runs.clear()
    warmup.main(["--jobs", "2", "--network", "mlp"])
    assert runs == [("here", 1)]
    # the convolutions were never compiled: their warm-up splits
    runs.clear()
    warmup.main(["--jobs", "2", "--network", "conv"])
    assert runs == [("part", 2), ("part", 2)]


def test_a_conv_warm_up_marks_the_mlps_kernels_and_its_own_layout_only(cache):
    root, runs = cache
    warmup.main(["--jobs", "1", "--network", "conv"])
    assert runs == [("here", 1)]
    assert kernelcache.warmed("mlp") and kernelcache.warmed(repr(warmup.conv_layout()))
    runs.clear()
    warmup.main(["--jobs", "2", "--network", "mlp"])
    assert runs == [("here", 1)]
    runs.clear()
    three = '[{"channels": 4, "stride": 1}, {"channels": 4, "stride": 1}, {"channels": 8, "stride": 2}]'
    warmup.main(["--jobs", "2", "--network", "conv", "--layers", three])  # another number of layers: other kernels
    assert runs == [("part", 2), ("part", 2)]


def test_a_healed_cache_forgets_its_marks_and_a_removed_one_takes_them_along(cache, monkeypatch):
    root, runs = cache
    warmup.main(["--jobs", "2", "--network", "mlp"])
    assert kernelcache.warmed("mlp")
    monkeypatch.setattr(warmup, "heal_cache", lambda: ["bnstudy: damaged kernel cache in ...: removed ..."])
    runs.clear()
    warmup.main(["--jobs", "2", "--network", "mlp"])
    assert runs == [("part", 2), ("part", 2)]  # the damaged kernels compile in parts again
    assert kernelcache.warmed("mlp")  # and the warm-up that did so marks them
    assert warmup.remove_cache(root) == 1 and not kernelcache.warmed("mlp")
