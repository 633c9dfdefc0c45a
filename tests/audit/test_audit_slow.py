"""The audit at scale and from the shell: a ResNet-18 trained here, the console script, the HTML report
in headless Chromium. Marked slow: the ResNet costs minutes of CPU, the others start processes. The
ResNet's run is also marked scale: `make test-scale` runs it, `make test` (and so CI) does not."""

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from bnstudy.audit import audit
from bnstudy.audit.engine import naive_labels
from conftest import torch_threads

pytestmark = pytest.mark.slow


class Block(nn.Module):
    """ResNet's basic block: two 3x3 convolutions with batch norm, and the shortcut."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(out + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    """ResNet-18 (He et al. 2016) for single-channel images: the ImageNet stem (7x7 convolution of
    stride 2, 3x3 max pool of stride 2), four stages of two basic blocks (64-512 channels), 20 batch-norm
    layers. On 28 x 28 inputs the stages see 7, 4, 2 and 1 pixels a side."""

    def __init__(self, classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        blocks, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            blocks += [Block(cin, cout, stride), Block(cout, cout, 1)]
            cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, 2, 1)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.blocks(x), 1), 1))


def digits_28():
    """The study's digits split as 28 x 28 single-channel images (bilinear upsampling of the 8 x 8)."""
    from bnstudy.nets.data import split_digits

    s = split_digits(0)

    def images(x):
        return F.interpolate(torch.from_numpy(x).reshape(-1, 1, 8, 8), size=(28, 28), mode="bilinear")

    return images(s.x_train), torch.from_numpy(s.y_train), images(s.x_test), s.y_test


@pytest.fixture
def two_threads():
    with torch_threads(2):
        yield


# The claim checked: a ResNet-18 audit of 500 examples takes at most 5 minutes of 2 cores. The suite
# audits 200 of them (every digit has 16 or more among them, so one-label batches of 16 are probed)
# and holds the CPU time to 200/500 of the bound. The audit's cost is a fixed part a >= 0 (the
# statistics pass over the training rows, the recomputed statistics) plus a part b n linear in the
# examples n (each design probes every example the same number of times; the exact design's 50
# examples each meet all n - 1 companions). So T(200) <= 300 s * 200/500 gives
# T(500) = T(200) + 300 b <= 2.5 T(200) <= 300 s, at 2.5 minutes less CPU than auditing all 500.
CLAIMED_EXAMPLES, CLAIMED_SECONDS_ON_2_CORES = 500, 300
AUDITED = 200


@pytest.mark.scale  # about 4 minutes of 2 cores: `make test-scale`, not `make test`
def test_resnet18_audit_of_500_examples_takes_under_5_minutes_on_2_cores(two_threads):
    """200 of the 500 examples, 20 probes per example at b = 2, 4, 16, 64 in random and one-label
    batches, 50 examples exact at b = 2, statistics and the remedy, within 200/500 of 5 minutes of 2
    cores (see above why that bounds the 500-example audit); the exact design enumerates every one
    of the n - 1 companions, so its cost is linear in n too.

    The bound is on CPU time over 2 (what the audit takes on 2 cores of its own): the suite
    runs the pipeline's determinism runs beside the tests, so wall time measures the load.
    """
    x_train, y_train, x_test, y_test = digits_28()
    torch.manual_seed(0)
    net = ResNet18()
    opt = torch.optim.Adam(net.parameters(), 1e-3)
    g = torch.Generator().manual_seed(0)
    net.train()
    for _ in range(60):  # briefly: about 0.9 test accuracy
        idx = torch.randint(0, len(x_train), (32,), generator=g)
        opt.zero_grad()
        F.cross_entropy(net(x_train[idx]), y_train[idx]).backward()
        opt.step()
    net.eval()
    n = AUDITED
    x, y = x_test[:n], y_test[:n]

    wall, cpu = time.perf_counter(), time.process_time()
    r = audit(net, x, y, probes=20, stats_x=x_train)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"ResNet-18 audit of {n} examples: {wall:.1f} s wall, {cpu:.1f} s CPU, {r.timing['probes']} probes")
    assert cpu / 2 <= CLAIMED_SECONDS_ON_2_CORES * n / CLAIMED_EXAMPLES, (wall, cpu)

    assert r.settings["batch_sizes"] == [2, 4, 16, 64] and len(r.layers) == 20
    for design, sizes in (("random", (2, 4, 16, 64)), ("label", (2, 4, 16))):
        for b in sizes:
            f = r.flip(b, design)
            assert f["examples"] == n and f["probes"] == n * 20
            assert 0 <= f["ci_low"] <= f["flip_rate"] <= f["ci_high"] <= 1
    # no digit has 64 of the examples: no one-label batch of 64, and the notes say so
    assert r.flip(64, "label") is None
    assert f"label batches of 64: {n} rows in labels of fewer than 64 rows not probed" in r.notes
    assert r.flip(2, "exact")["examples"] == 50
    assert r.flip_rate(2) > r.flip_rate(64)  # fewer companions, more dependence
    assert all(row["updates"] == 60 and row["mean_distance"] is not None for row in r.layers)
    assert 0.5 < r.accuracy["running"] <= 1 and r.accuracy["recomputed"] is not None
    # the batched probes are the plain module's training-mode labels, batch by batch
    from bnstudy.audit import designs
    from bnstudy.audit.engine import Engine

    batches, _ = designs.rounds(np.arange(n), 4, 1, designs.generator(0, "random", 4))
    fast = Engine(net, x).train_labels(batches[:25])
    assert (fast == naive_labels(net, x, batches[:25], first_only=False)).mean() >= 0.99


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def test_the_console_script_writes_a_report_whose_figure_chromium_shows(tmp_path):
    """``bnstudy audit`` as installed (the console script) on a TorchScript model: exit statuses,
    JSON, and the HTML report opened in headless Chromium, whose figure must load."""
    script = Path(sys.executable).parent / "bnstudy"
    assert script.exists(), "no bnstudy console script: pip install --no-deps --no-build-isolation -e ."
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 3)).train()
    x = torch.randn(200, 6)
    with torch.no_grad():
        for i in range(5):
            net(x[40 * i : 40 * i + 40])
    torch.jit.save(torch.jit.script(net.eval()), tmp_path / "net.pt")
    np.savez(tmp_path / "d.npz", x=x.numpy(), y=(x[:, 0] > 0).long().numpy() + (x[:, 1] > 1).long().numpy())
    argv = [str(script), "audit", "--model", str(tmp_path / "net.pt"), "--data", str(tmp_path / "d.npz")]
    argv += ["--batch-sizes", "2", "8", "--serving-batch", "4", "--probes", "4", "--exact-sample", "5"]
    env = os.environ | {"OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [*argv, "--json", str(tmp_path / "a.json"), "--html", str(tmp_path / "a.html")],
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "At your serving batch of 4" in out.stdout and "100.0%" in out.stderr  # the summary; the progress bar
    rate = json.loads((tmp_path / "a.json").read_text())["flips"]
    at4 = next(f["flip_rate"] for f in rate if f["design"] == "random" and f["batch_size"] == 4)
    assert (
        subprocess.run([*argv, "--quiet", "--fail-above", str(at4 / 2)], env=env, capture_output=True).returncode == 1
    )
    bad = subprocess.run([*argv[:4], "--data", str(tmp_path / "none.npz")], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.strip().endswith("none.npz: no such file")
    assert bad.stderr.count("\n") == 1

    browser = chromium()
    if browser is None:
        pytest.skip("chromium not installed: apt-get install -y chromium")
    dom = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=5000",
            "--dump-dom",
            (tmp_path / "a.html").as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    width = re.search(r'data-figure-width="(\d+)"', dom.stdout)
    assert width is not None, dom.stderr[-2000:]
    assert int(width.group(1)) > 100  # the embedded PNG decoded (0 if it had not)
