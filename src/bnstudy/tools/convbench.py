"""The convolutional network's rows of ``python -m bnstudy.tools.benchmark``: training throughput.

The network is the one ``config/fashion-cluster.yaml`` studies (:func:`study_network`; until
2026-12-05 a smaller candidate, channels 16, 32, 32, 32): 28x28 images of one channel, 3x3
convolutions with the config's channels and strides, the last adding an earlier layer's output (a
residual connection), batch norm after each, global average pool, linear map. One
training run (forward in training mode, backward, Adam, as :func:`bnstudy.nets.train.train_one`
runs it, one compiled call) against PyTorch's own CPU path on the same batches
(:func:`bnstudy.nets.conv_torch.train_plain`: ``nn.Conv2d`` with oneDNN, autograd,
``torch.optim.Adam``), interleaved repeat by repeat in one process, 1 thread each, on seeded
standard-normal images (the standardised pixels' scale; the arithmetic does not depend on the
values).

Figures: images per second (median over the repeats of wall-clock and of CPU time), GFLOP/s
from the counted multiply-adds (:func:`training_flops`: the convolutions' and the linear map's
forward, weight-gradient and input-gradient products, 2 flops each; the normalisers, ReLU, pool,
loss and Adam are not counted) and that rate as a fraction of the machine's peak single-core
float32 rate without FMA (:func:`peak`).
"""

from __future__ import annotations

import re
import statistics
import time
from pathlib import Path

import numpy as np

STUDY_CONFIG = Path(__file__).resolve().parents[3] / "config" / "fashion-cluster.yaml"
SIDE = 28  # Fashion-MNIST's images


def study_network(normaliser: str = "batchnorm", config: Path = STUDY_CONFIG):
    """The convolutional network of ``config``'s ``network`` section with ``normaliser``."""
    import yaml

    from bnstudy.nets.conv_train import ConvSpec

    return ConvSpec.from_params(normaliser, yaml.safe_load(config.read_text())["network"])


def describe(spec) -> str:
    """``channels 16-32-64-64, strides 1-2-2-1, layer 4 adds layer 3``: the layers of ``spec``."""
    strides = spec.strides or (1,) * len(spec.channels)
    skips = [f"layer {i + 1} adds layer {s + 1}" for i, s in enumerate(spec.skips) if s >= 0]
    layers = [f"channels {'-'.join(map(str, spec.channels))}", f"strides {'-'.join(map(str, strides))}"]
    return ", ".join(layers + skips)


def training_flops(spec, side: int) -> int:
    """Counted flops of one image's training step: per convolution ``P_out x 9 C_in x C_out``
    multiply-adds forward, as many for the weight gradient and (but the first) for the input
    gradient; the same three for the linear map; 2 flops per multiply-add."""
    blocks, macs = spec.blocks(side), 0
    for i, b in enumerate(blocks):
        per = b.positions * 9 * b.in_channels * b.channels
        macs += per * (3 if i > 0 else 2)
    macs += 3 * blocks[-1].channels * 10
    return 2 * macs


def peak(cpuinfo: str | None = None) -> tuple[float, str]:
    """``(GFLOP/s, assumption)``: the peak single-core float32 rate without FMA, from the widest
    vector unit in the CPU's flags (AVX-512: 16 floats, AVX: 8, else SSE: 4) and its clock
    (``cpu MHz`` of /proc/cpuinfo), assuming two vector floating-point operations per cycle
    (a multiply and an add in two pipes, as a multiply-add without FMA needs)."""
    text = Path("/proc/cpuinfo").read_text() if cpuinfo is None else cpuinfo
    flags = set(re.search(r"^flags\s*:(.*)$", text, re.M).group(1).split())
    width = 16 if "avx512f" in flags else 8 if "avx" in flags else 4
    mhz = float(re.search(r"^cpu MHz\s*:\s*([0-9.]+)", text, re.M).group(1))
    model = re.search(r"^model name\s*:\s*(.*)$", text, re.M)
    gflops = 2 * width * mhz / 1000
    name = model.group(1).strip() if model else "unknown CPU"
    return gflops, f"{name} at {mhz:.0f} MHz, {width} float32 lanes x 2 vector pipes (mul + add, no FMA)"


def _timed(fn, *args):
    wall, cpu = time.perf_counter(), time.process_time()
    fn(*args)
    return time.perf_counter() - wall, time.process_time() - cpu


def bench(spec, side: int, batch: int, images: int, repeats: int) -> dict:
    """Images per second (wall, CPU medians) of the compiled run and of PyTorch's, interleaved."""
    from bnstudy.nets import conv_torch
    from bnstudy.nets.recipe import Recipe

    rng = np.random.default_rng(0)
    x = rng.standard_normal((images, side * side)).astype(np.float32)
    y = (np.arange(images) % 10).astype(np.int64)
    recipe = Recipe(batch_size=batch, epochs=1)
    spec.train_one(recipe, 0, x[: 2 * batch], y[: 2 * batch])  # compile before timing
    conv_torch.train_plain(spec, recipe, 0, x[: 2 * batch], y[: 2 * batch])
    ours, theirs = [], []
    for r in range(repeats):
        ours.append(_timed(spec.train_one, recipe, r, x, y))
        theirs.append(_timed(conv_torch.train_plain, spec, recipe, r, x, y))
    med = lambda s, k: images / statistics.median(t[k] for t in s)  # noqa: E731
    return {"compiled": (med(ours, 0), med(ours, 1)), "torch": (med(theirs, 0), med(theirs, 1))}


def rows(batches=(2, 128), images: dict | None = None, repeats: int = 3) -> list[str]:
    """The printed rows: per batch size, images/s and GFLOP/s of both, ratio, fraction of peak."""
    spec, side = study_network(), SIDE
    images = images or {2: 256, 128: 1024}
    flops = training_flops(spec, side)
    top, assumption = peak()
    out = [
        f"convolutional network of {STUDY_CONFIG.name} (28x28; {describe(spec)}; batch norm): training, "
        f"{flops / 1e6:.2f} MFLOP counted per image; peak {top:.1f} GFLOP/s ({assumption})",
        f"{'':<26}{'images/s (wall, CPU)':>26}{'GFLOP/s (CPU)':>16}{'of peak':>9}{'ratio (CPU)':>13}",
    ]
    for b in batches:
        n = images.get(b, 64 * b)
        got = bench(spec, side, b, n, repeats)
        for name in ("torch", "compiled"):
            wall, cpu = got[name]
            rate = cpu * flops / 1e9
            ratio = f"{cpu / got['torch'][1]:12.2f}x" if name == "compiled" else ""
            out.append(
                f"  batch {b:>3}, {name:<9} ({n} images) {wall:9.0f} {cpu:9.0f} {rate:13.2f} "
                f"{100 * rate / top:7.1f}% {ratio}"
            )
        out.append(f"{'':<26}compiled training time per image: {1e3 / got['compiled'][1]:.3f} ms (CPU)")
    return out
