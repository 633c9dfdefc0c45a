"""A damaged kernel cache heals in the warm-up: one line says so, the kernel is compiled afresh."""

import os
import pickle
import subprocess
import sys

import pytest

from bnstudy.pipeline import kernelcache
from bnstudy.tools import warmup
from conftest import ROOT


def _entry(root, name, overloads, damage=None):
    """A kernel's cache files as Numba writes them: an index (two pickles) and a data file per overload."""
    index = pickle.dumps("0.61.0") + pickle.dumps((("stamp", 1), {f"sig{i}": f"{name}.{i}.nbc" for i in overloads}))
    (root / f"{name}.nbi").write_bytes(index)
    for i in overloads:
        (root / f"{name}.{i}.nbc").write_bytes(pickle.dumps((f"library {i}", b"\x00" * 300), protocol=5))
    if damage is not None:
        path = root / damage
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def test_heal_removes_the_entries_of_kernels_with_an_unreadable_file_and_says_so_in_one_line(tmp_path):
    root = tmp_path / "numba-0123" / "bnstudy_abc"
    root.mkdir(parents=True)
    _entry(root, "kernels.predict-10.py311", [1, 2])
    _entry(root, "blocks.norm-20.py311", [1, 2, 3], damage="blocks.norm-20.py311.2.nbc")
    _entry(root, "stats.boot-30.py311", [1], damage="stats.boot-30.py311.nbi")
    leftover = root / "kernels.predict-10.py311.nbi.tmp.0123abcd"  # another run writing: not Numba's to load
    leftover.write_bytes(b"\x80")
    assert warmup.unreadable(root / "kernels.predict-10.py311.nbi") is None
    assert warmup.unreadable(root / "kernels.predict-10.py311.1.nbc") is None
    assert warmup.unreadable(root / "blocks.norm-20.py311.2.nbc").startswith("ValueError: ")
    [line] = warmup.heal_cache(tmp_path / "numba-0123")
    assert line.startswith(f"bnstudy: damaged kernel cache in {tmp_path / 'numba-0123'}: 2 unreadable file(s) (first ")
    assert line.endswith("removed the entries of 2 kernel(s), compiling them afresh")
    assert sorted(p.name for p in root.iterdir()) == sorted(
        [
            "kernels.predict-10.py311.nbi",
            "kernels.predict-10.py311.1.nbc",
            "kernels.predict-10.py311.2.nbc",
            leftover.name,
        ]
    )
    assert warmup.heal_cache(tmp_path / "numba-0123") == []  # healthy now
    assert warmup.heal_cache(tmp_path / "absent") == []


def test_an_index_of_the_wrong_shape_is_unreadable(tmp_path):
    (tmp_path / "f-1.py311.nbi").write_bytes(pickle.dumps("0.61.0"))  # the version only
    (tmp_path / "f-1.py311.1.nbc").write_bytes(pickle.dumps(1) + pickle.dumps(2))
    assert "1 pickle(s) where an index has 2" in warmup.unreadable(tmp_path / "f-1.py311.nbi")
    assert "2 pickles where a data file has 1" in warmup.unreadable(tmp_path / "f-1.py311.1.nbc")


KERNEL_CALL = (
    "import numpy as np; from bnstudy.base import stats; "
    "print(stats.bootstrap_examples(np.array([0.0, 1.0, 1.0]), 8, 0.95, np.random.default_rng(0)))"
)

# bnstudy.tools.warmup's command line, its population part replaced by that part's bootstrap call
BOOTSTRAP_PART = (
    "import numpy as np; from bnstudy.base import stats; from bnstudy.tools import warmup; "
    "warmup.PARTS = (*warmup.PARTS[:-1], "
    "lambda: stats.bootstrap_examples(np.array([0.0, 1.0]), 4, 0.95, np.random.default_rng(0))); "
    "warmup.main()"
)


def _said(run) -> list[str]:
    """The warm-up's lines but the one saying it holds its lock (kernelcache.one_warm_up's)."""
    lines = run.stdout.splitlines() + run.stderr.splitlines()
    return [line for line in lines if line.strip() and not line.startswith(kernelcache.WARMING)]


@pytest.mark.slow
def test_warm_up_heals_a_truncated_cache_and_jobs_load_kernels_again(tmp_path):
    """The warm-up's command (its last part, the population study's, cut to the bootstrap kernel
    the jobs' call below uses: the heal does not depend on how many kernels a part compiles, and
    the whole part compiled three times over cost four times as much) in a cache of its own; every
    cache file truncated, as a full disk or a killed copy leaves them: a kernel call fails on it,
    the warm-up says so in one line, removes it and compiles afresh, and the call works again.
    Then a data file of the wrong content, which reads whole: loading it fails in the warm-up,
    which removes the whole cache (one line) and compiles afresh."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT / "src"))
    assert warmup.PARTS[-1] is warmup._population
    part = [
        sys.executable,
        "-c",
        BOOTSTRAP_PART,
        "--part",
        str(len(warmup.PARTS) - 1),
        "--parts",
        str(len(warmup.PARTS)),
    ]

    def run(cmd):
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)

    first = run(part)
    assert first.returncode == 0, first.stderr
    good = run([sys.executable, "-c", KERNEL_CALL])
    assert good.returncode == 0, good.stderr
    files = [p for p in (tmp_path / "cache").rglob("*") if p.suffix in warmup.CACHE_SUFFIXES]
    assert any(p.name.startswith("stats._resample_means") for p in files), files
    for path in files:
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    broken = run([sys.executable, "-c", KERNEL_CALL])
    assert broken.returncode != 0 and "UnpicklingError: pickle data was truncated" in broken.stderr
    healed = run(part)
    assert healed.returncode == 0, healed.stderr
    [line] = _said(healed)
    assert line.startswith(f"bnstudy: damaged kernel cache in {tmp_path / 'cache'}: {len(files)} unreadable file(s)")
    again = run([sys.executable, "-c", KERNEL_CALL])
    assert again.returncode == 0, again.stderr
    assert again.stdout == good.stdout
    quiet = run(part)
    assert quiet.returncode == 0 and "damaged" not in quiet.stdout + quiet.stderr

    # damage the file-by-file read cannot see: a whole pickle of the wrong content
    [data] = [p for p in (tmp_path / "cache").rglob("stats._resample_means-*.nbc")]
    data.write_bytes(pickle.dumps(("not", "a", "compiled", "kernel")))
    assert warmup.unreadable(data) is None
    fallback = run(part)
    assert fallback.returncode == 0, fallback.stderr
    [line] = _said(fallback)
    assert line.startswith(f"bnstudy: damaged kernel cache in {tmp_path / 'cache'} (") and line.endswith(
        "files), compiling afresh"
    ), line
    assert run([sys.executable, "-c", KERNEL_CALL]).stdout == good.stdout


def test_an_mlp_config_compiles_no_convolution_and_a_conv_config_everything():
    """``--network mlp`` (what the Snakefile passes for an MLP config, and the job server's
    ``compile_mlp``) leaves out the convolutional network's part only; ``conv`` runs every part."""
    assert warmup.network_parts("conv") == warmup.PARTS
    assert warmup.network_parts("mlp") == tuple(p for p in warmup.PARTS if p is not warmup._conv)
    assert warmup._conv in warmup.PARTS and set(warmup.NETWORKS) == {"mlp", "conv"}
    snakefile = (ROOT / "Snakefile").read_text()
    assert "--network {_network}" in snakefile and '"compile_mlp" if _network == "mlp"' in snakefile
