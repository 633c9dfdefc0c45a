"""The audit as a practitioner installs it: a fresh venv holding torch and nothing but the audit's own
install (``pip install .``: torch, NumPy), no study package. Marked slow (it starts pip and the
console script); `make test` and CI run it, `make test-fast` does not.

It needs Python 3.11 (``python3.11``, as `make` does) and a package index for pip: PyPI or the
machine's pip configuration (NumPy and the build backend come from there).

The user's torch is this environment's, placed in the fresh venv as an install leaves it: every file
its distribution's RECORD lists (and those of what it requires), linked into the venv's
site-packages, so pip sees an installed torch with its metadata. ``pip install torch`` would unpack
the same files from a 700 MB wheel, 60 to 100 s of the CI's two cores; what the test holds (the
audit's install keeps that torch, adds NumPy and the audit, nothing of the study) does not depend on
how torch got there.
"""

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import ROOT, torch_threads

pytestmark = pytest.mark.slow

STUDY_ONLY = {
    "numba",
    "llvmlite",
    "pandas",
    "scipy",
    "scikit-learn",
    "matplotlib",
    "safetensors",
    "pyyaml",
    "snakemake",
}
MODEL = """
import torch


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(6, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(), torch.nn.Linear(16, 3)
    )
"""


def _pip(venv, *args, env):
    out = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", *args], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def _requirement_closure(name: str) -> list[importlib.metadata.Distribution]:
    """The installed distribution ``name`` and every one it requires, transitively (extras not taken)."""
    from packaging.requirements import Requirement

    found, todo = {}, [name]
    while todo:
        dist = importlib.metadata.distribution(todo.pop())
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in found:
            continue
        found[key] = dist
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return [found[k] for k in sorted(found)]


def _place_installed(name: str, site: Path) -> None:
    """Put ``name`` and what it requires into the venv whose site-packages is ``site``, as installed here:
    each file of each distribution's RECORD inside site-packages (console scripts outside it are not
    needed), hard-linked, or copied where a link cannot be made."""
    for dist in _requirement_closure(name):
        for file in dist.files:
            if file.parts[0] == "..":
                continue
            source, target = Path(dist.locate_file(file)), site / file
            if not source.is_file():  # a RECORD names files an install may not have written (.pyc)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source, target)
            except OSError:
                shutil.copy2(source, target)


def _source(tmp_path):
    """What ``pip install .`` reads, copied out of the checkout (a build in place would leave build/)."""
    src = tmp_path / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    shutil.copytree(ROOT / "src", src / "src", ignore=ignore)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    return src


def test_a_fresh_venv_with_torch_and_only_the_audits_install_audits_a_model_end_to_end(tmp_path):
    python = shutil.which("python3.11")
    assert python, "no python3.11: apt-get install python3.11 python3.11-venv (as make setup needs)"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env |= {"OMP_NUM_THREADS": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    venv = tmp_path / "venv"
    started = time.perf_counter()
    subprocess.run([python, "-m", "venv", str(venv)], check=True, env=env)
    _place_installed("torch", venv / "lib" / "python3.11" / "site-packages")
    assert "torch" in _pip(venv, "list", "--format=freeze", env=env)
    (record,) = venv.glob("lib/python3.11/site-packages/torch-*.dist-info/RECORD")
    torch_before = (record.name, record.stat().st_ino, record.stat().st_mtime_ns, record.read_bytes())
    _pip(venv, "install", "--quiet", str(_source(tmp_path)), env=env)
    installed = {p["name"].lower(): p["version"] for p in json.loads(_pip(venv, "list", "--format=json", env=env))}
    assert "bnstudy" in installed and "torch" in installed and "numpy" in installed
    assert not STUDY_ONLY & set(installed), STUDY_ONLY & set(installed)
    # the user's torch is kept, never replaced (the same files, not installed again)
    assert (record.name, record.stat().st_ino, record.stat().st_mtime_ns, record.read_bytes()) == torch_before
    assert installed["torch"] == torch.__version__
    setup = time.perf_counter() - started

    # a model of the user's: a factory in their own module, weights in safetensors, data in .npz
    work = tmp_path / "work"
    work.mkdir()
    (work / "mymodels.py").write_text(MODEL)
    sys.path.insert(0, str(work))
    try:
        import mymodels

        net = mymodels.mlp()
    finally:
        sys.path.remove(str(work))
        sys.modules.pop("mymodels", None)
    x = torch.randn(160, 6, generator=torch.Generator().manual_seed(1))
    net.train()
    with torch.no_grad():
        for i in range(8):
            net(x[20 * i : 20 * i + 20])
    net.eval()
    from safetensors.torch import save_file

    save_file({k: v.contiguous() for k, v in net.state_dict().items()}, work / "mlp.safetensors")
    y = ((x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()).numpy()
    np.savez(work / "d.npz", x=x.numpy(), y=y, groups=np.arange(len(x)) // 40)

    bnstudy = str(venv / "bin" / "bnstudy")
    argv = [bnstudy, "audit", "--model", "mymodels:mlp", "--weights", "mlp.safetensors", "--data", "d.npz"]
    argv += ["--batch-sizes", "2", "4", "--serving-batch", "8", "--probes", "4", "--exact-sample", "6", "--quiet"]
    argv += ["--threads", "1"]
    ran = time.perf_counter()
    out = subprocess.run(
        [*argv, "--json", "a.json", "--fail-above", "0.99"], cwd=work, env=env, capture_output=True, text=True
    )
    ran = time.perf_counter() - ran
    assert out.returncode == 0, out.stderr[-3000:]
    assert "At your serving batch of 8 with every batch from one group" in out.stdout
    theirs = json.loads((work / "a.json").read_text())
    # the same audit in this process (the study's environment) gives the same numbers
    from bnstudy.audit import audit

    with torch_threads(1):
        ours = audit(
            net, x, y, np.arange(len(x)) // 40, batch_sizes=(2, 4), serving_batch=8, probes=4, exact_sample=6
        ).to_dict()
    assert [(f["design"], f["batch_size"], f["flips"], f["probes"]) for f in theirs["flips"]] == [
        (f["design"], f["batch_size"], f["flips"], f["probes"]) for f in ours["flips"]
    ]
    assert [r.get("mean_distance") for r in theirs["layers"]] == [r.get("mean_distance") for r in ours["layers"]]

    # what needs more than the audit's install says so in one line, with exit 2 and before any work
    html = subprocess.run([*argv, "--html", "a.html"], cwd=work, env=env, capture_output=True, text=True)
    assert html.returncode == 2 and html.stderr.count("\n") == 1, html.stderr
    assert "pip install matplotlib" in html.stderr and not (work / "a.html").exists()
    save_file({"w": torch.zeros(2)}, work / "run.safetensors", metadata={"normaliser": "batchnorm", "seeds": "[0]"})
    study = subprocess.run(
        [bnstudy, "audit", "--model", "run.safetensors", "--data", "d.npz"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert study.returncode == 2 and "pip install 'bnstudy[study]'" in study.stderr, study.stderr
    print(f"fresh venv: setup {setup:.0f} s (venv, torch, the audit), audit {ran:.1f} s")
