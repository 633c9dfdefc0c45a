"""Speed benchmark: the plain PyTorch loop against the pipeline's compiled code, side by side.

``python -m bnstudy.tools.benchmark`` times, in one process and interleaved repeat by
repeat, on the digits training half of the paper's split:

- training: :func:`bnstudy.nets.plain.train_plain` (one ``nn.Sequential``, autograd and
  ``torch.optim``, one model per call) against :func:`bnstudy.nets.train.train_models`
  (the compiled loop, every seed of a cell), at batch sizes 2 and 64; the figure
  compared is the time *per model-run*: a plain call's time, and a
  ``train_models`` call's time divided by its number of models; and each side's GFLOP/s
  (:func:`mlp_training_flops`) against the core's peak without FMA
  (:func:`bnstudy.tools.convbench.peak`);
- companion evaluation: one test example's whole probe design as a pipeline job
  runs it (random companions at b = 2, 4, 16, 64, every b = 2 pair, own- and
  other-class batches at b = 16), through the compiled probes
  (:class:`bnstudy.compiled.probes.Prober`: the first layer once, then every design) and
  through :func:`bnstudy.studies.companions.science.batch_logits_loop` (a plain ``nn.Sequential``
  in training mode, one batch at a time), on the models trained above at the
  largest batch size; then the random designs one by one (the ratio grows as the
  batch shrinks: the loop's cost is per batch, the probes' cost per row), each side's
  GFLOP/s from the products it performs (:func:`probe_flops`);
- the audit (:mod:`bnstudy.audit`, PyTorch): probes per second of its random design
  at b = 2, 4, 16, 64 (every row of a batch a probe, many batches per forward pass)
  against the naive loop, one forward pass of the plain module per example and batch
  (:func:`bnstudy.audit.engine.naive_labels`, row 0's label), on the MLP trained
  above and on the study's small convolutional network (its initial weights, running
  statistics moved by a few training-mode batches); the loop is timed on the first
  ``--audit-loop-batches`` batches of each size. Threads: 1, as everywhere here;
- the convolutional network (:mod:`bnstudy.tools.convbench`): training throughput of the
  network of ``config/fashion-cluster.yaml`` (28x28, four convolutions, strides 2, a residual
  connection) in the compiled kernels against PyTorch's own CPU path (``nn.Conv2d`` with
  oneDNN, autograd, ``torch.optim.Adam``) at batch 2 and 128, images/s, GFLOP/s from the
  counted multiply-adds and the fraction of the core's peak without FMA (``--conv-only``:
  only these rows).

Each figure is the median over ``--repeats`` repeats of wall-clock time
(``time.perf_counter``) and of this process's CPU time (``time.process_time``;
less disturbed by other jobs on a shared machine); ratios are plain / compiled
medians. Runs are short (``--epochs``, default 2): the time of a run grows
linearly with its epochs, so the ratios hold for the paper's 20. Threads are
fixed to 1 as in the pipeline. The labels of the two companion paths are
compared batch by batch; PyTorch rounds differently from the fixed order, so a
batch whose two largest logits are within ``NEAR_TIE`` may get either label, and
such batches are counted apart.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time

import numpy as np

from bnstudy.base import runtime
from bnstudy.nets.data import split_digits
from bnstudy.nets.model import NetSpec
from bnstudy.nets.norms import NORMALISERS
from bnstudy.nets.recipe import Recipe, batch_sizes_per_epoch
from bnstudy.tools import convbench

NEAR_TIE = 1e-4


def companions_example(y: np.ndarray) -> int:
    """The first test row of class 0: the probed example (any row would do)."""
    return int(np.flatnonzero(y == 0)[0])


def timed(fn, *args, **kwargs):
    """``(result, wall seconds, CPU seconds)`` of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def median_pair(samples: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def mlp_training_flops(spec) -> int:
    """Counted flops of one row's training step in the MLP ``spec``: every Linear's products
    forward, as many for its weight gradient and, but the first's, for its input gradient
    (neither side computes the input's gradient); 2 flops per multiply-add. The normalisers,
    ReLU, loss and optimiser are not counted, as in :func:`bnstudy.tools.convbench.training_flops`."""
    products = [a * b for a, b in zip(spec.widths[:-1], spec.widths[1:])]
    return 2 * (3 * sum(products) - products[0])


def rows_per_run(n: int, recipe) -> int:
    """Rows one training run of ``n`` rows steps through: ``epochs`` times the epoch's batches
    (:func:`bnstudy.nets.recipe.batch_sizes_per_epoch`, the cut training uses)."""
    return recipe.epochs * sum(batch_sizes_per_epoch(n, recipe.batch_size, recipe.last_batch))


def probe_flops(spec, rows: int, plans, models: int) -> tuple[int, int]:
    """``(loop, compiled)`` counted flops of probing ``plans`` on ``models`` models of the MLP
    ``spec`` over ``rows`` test rows: the products each side performs, 2 flops per multiply-add.

    The loop runs every row of every batch through every Linear. The compiled probes
    (:class:`bnstudy.compiled.probes.Prober`) run the first Linear once per test row, the second
    on the rows that reach row 0 (:func:`bnstudy.compiled.probes.probe_rows`: the batch, or
    ghost batch norm's first virtual batch; for a normaliser without batch statistics row 0
    alone, once per distinct row 0) and the last on row 0 alone."""
    from bnstudy.compiled.kernels import KIND, norm_settings
    from bnstudy.compiled.probes import BATCH_CODES, probe_rows

    w = spec.widths
    first, second, last = w[0] * w[1], w[1] * w[2], w[2] * w[3]
    settings = norm_settings(spec, (1.0, 0.0))
    loop, compiled = 0, rows * first
    for _, batches in plans:
        k, b = batches.shape
        loop += k * b * (first + second + last)
        if KIND[spec.normaliser] in BATCH_CODES:
            compiled += k * (probe_rows(settings, b) * second + last)
        else:
            compiled += len(np.unique(batches[:, 0])) * (second + last)
    return 2 * models * loop, 2 * models * compiled


def rates(label: str, flops: tuple[float, float], seconds: tuple[float, float], top: float) -> str:
    """A row's GFLOP/s over the plain and the compiled side's CPU seconds, and of ``top``."""
    plain, fast = (f / t / 1e9 for f, t in zip(flops, seconds))
    return (
        f"{'':<36}{label} GFLOP/s (CPU): plain {plain:.2f} ({100 * plain / top:.1f}% of peak), "
        f"compiled {fast:.2f} ({100 * fast / top:.1f}%)"
    )


def bench_training(spec, x, y, batch_size: int, epochs: int, seeds: list[int], repeats: int):
    """Per model-run seconds (wall, CPU) of the plain loop and of the compiled training."""
    from bnstudy.nets.plain import train_plain
    from bnstudy.nets.train import train_models

    recipe = Recipe(batch_size=batch_size, epochs=epochs)
    train_models(spec, recipe, seeds[:1], x[:64], y[:64])  # compile (or load from the cache) before timing
    plain, compiled, stacked = [], [], None
    for r in range(repeats):
        _, wall, cpu = timed(train_plain, spec, recipe, seeds[r % len(seeds)], x, y)
        plain.append((wall, cpu))
        (stacked, _), wall, cpu = timed(train_models, spec, recipe, seeds, x, y)
        compiled.append((wall / len(seeds), cpu / len(seeds)))
    return median_pair(plain), median_pair(compiled), stacked


def agreement(loop_logits: list[np.ndarray], labels: list[np.ndarray]) -> tuple[int, int, int]:
    """``(probes, label differences, of which near ties)`` over every design."""
    total = differ = near = 0
    for z, lab in zip(loop_logits, labels):
        top = np.sort(z, axis=-1)
        tie = top[..., -1] - top[..., -2] < NEAR_TIE
        d = z.argmax(-1) != lab
        total, differ, near = total + d.size, differ + int(d.sum()), near + int((d & tie).sum())
    return total, differ, near


def bench_companions(stacked, spec, x, plans, repeats: int):
    """Seconds (wall, CPU) of the per-batch loop and of the compiled probes over ``plans``.

    The compiled side is what a pipeline job does for one example: the first layer
    of every test row once, then every design through the probe kernel. Returns the
    two medians and :func:`agreement` of the last repeat.
    """
    from bnstudy.compiled.probes import Prober
    from bnstudy.studies.companions.science import batch_logits_loop

    def compiled():
        prober = Prober(stacked, spec, x)
        return [prober.labels(batches) for _, batches in plans]

    compiled()  # compile (or load from the cache) before timing
    loop, fast = [], []
    for _ in range(repeats):
        ref, wall, cpu = timed(lambda: [batch_logits_loop(stacked, spec, x, b) for _, b in plans])
        loop.append((wall, cpu))
        out, wall, cpu = timed(compiled)
        fast.append((wall, cpu))
    return median_pair(loop), median_pair(fast), agreement(ref, out)


def audit_module(spec, stacked):
    """The first model of ``stacked`` as a ``torch.nn.Sequential`` in eval mode."""
    import torch

    from bnstudy.nets.model import build_module, unstack

    net = build_module(spec)
    net.load_state_dict({k: torch.from_numpy(v) for k, v in unstack(stacked)[0].items()})
    return net.eval()


def conv_module(x_test):
    """The study's small convolutional network with batch norm, running statistics moved by five
    training-mode batches of 64 test images (the audit needs statistics, not a trained network)."""
    import torch

    from bnstudy.nets.conv_torch import build_module, images
    from bnstudy.nets.conv_train import ConvSpec

    net = build_module(ConvSpec("batchnorm"), seed=0).train()
    xs = images(x_test)
    with torch.no_grad():
        for i in range(5):
            net(xs[64 * i : 64 * i + 64])
    return net.eval(), xs


def bench_audit(net, x, sizes, probes: int, loop_batches: int, repeats: int):
    """Probes per second (wall, CPU) of the audit's random design and of the naive loop, per size.

    The audit side: :meth:`bnstudy.audit.engine.Engine.train_labels` on ``probes`` rounds
    of batches over all rows (every row a probe); the loop: the first ``loop_batches`` of
    those batches, one forward pass each, one probe (row 0) each. Returns ``{b: (audit,
    loop, agreement)}``, ``agreement`` the share of the loop's probes whose label the
    audit gives row 0 of the same batch.
    """
    import torch

    from bnstudy.audit import designs
    from bnstudy.audit.engine import Engine, naive_labels

    xt = torch.as_tensor(x)
    engine = Engine(net, xt)
    out = {}
    for b in sizes:
        batches, counted = designs.rounds(np.arange(len(xt)), b, probes, designs.generator(0, "random", b))
        fast, slow = [], []
        for _ in range(repeats):
            labels, wall, cpu = timed(engine.train_labels, batches)
            n = int(counted.sum())
            fast.append((n / wall, n / cpu))
            ref, wall, cpu = timed(naive_labels, net, xt, batches[:loop_batches])
            slow.append((len(ref) / wall, len(ref) / cpu))
        agree = float((labels[: len(ref), 0] == ref).mean())
        out[b] = (median_pair(fast), median_pair(slow), agree)
    return out


def row(label: str, slow, fast, unit: str) -> str:
    return (
        f"{label:<34} {slow[0]:9.3f} {fast[0]:9.4f} {slow[0] / fast[0]:7.1f}x"
        f"   {slow[1]:9.3f} {fast[1]:9.4f} {slow[1] / fast[1]:7.1f}x   {unit}"
    )


def same(agree: tuple[int, int, int]) -> str:
    total, differ, near = agree
    return "labels identical" if not differ else f"{differ} of {total} labels differ ({near} near ties)"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bnstudy.tools.benchmark", description=__doc__.split("\n\n")[0])
    parser.add_argument("--normaliser", default="batchnorm", choices=NORMALISERS)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[2, 64])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--seeds", type=int, default=5, help="models of one cell (the grid: 5)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--probe-batches", type=int, default=200, help="random and one-class batches per design (the paper config: 200)"
    )
    parser.add_argument("--audit-probes", type=int, default=20, help="the audit's probes per example and size")
    parser.add_argument("--audit-loop-batches", type=int, default=300, help="batches the naive loop is timed on")
    parser.add_argument("--audit-only", action="store_true", help="only the audit's rows (trains one cell, untimed)")
    parser.add_argument("--conv-only", action="store_true", help="only the convolutional network's training rows")
    args = parser.parse_args(argv)

    runtime.configure(1)
    import numba
    import torch

    split = split_digits(0)
    x, y, x_test, y_test = split.x_train, split.y_train, split.x_test, split.y_test
    spec = NetSpec(args.normaliser)
    seeds = list(range(args.seeds))

    print(
        f"bnstudy benchmark: {args.normaliser}, {args.epochs} epochs on {len(y)} rows, {len(seeds)} models "
        f"per cell, {args.repeats} repeats, torch {torch.__version__} ({torch.get_num_threads()} thread), "
        f"numba {numba.__version__}"
    )
    if args.conv_only:
        print("\n".join(convbench.rows(repeats=args.repeats)))
        return 0
    stacked = {}  # the trained models, by batch size: probed below
    if args.audit_only:
        from bnstudy.nets.train import train_models

        b = max(args.batch_sizes)
        stacked[b], _ = train_models(spec, Recipe(batch_size=b, epochs=args.epochs), seeds[:1], x, y)
        audit_rows(args, spec, stacked[b], x_test)
        return 0
    top, assumption = convbench.peak()
    print(
        f"MLP {'-'.join(map(str, spec.widths))}: {mlp_training_flops(spec) / 1e3:.1f} kFLOP counted per training "
        f"row; peak {top:.1f} GFLOP/s ({assumption})"
    )
    print(f"{'':<34} {'wall: plain':>9} {'compiled':>9} {'ratio':>8}   {'CPU: plain':>9} {'compiled':>9} {'ratio':>8}")
    for b in args.batch_sizes:
        plain, compiled, stacked[b] = bench_training(spec, x, y, b, args.epochs, seeds, args.repeats)
        print(row(f"training, batch {b} (per model-run)", plain, compiled, "seconds"))
        runs = 20 / args.epochs
        print(f"{'':<36}20-epoch model-run: plain {plain[0] * runs:.2f} s, compiled {compiled[0] * runs:.2f} s (wall)")
        flops = mlp_training_flops(spec) * rows_per_run(len(y), Recipe(batch_size=b, epochs=args.epochs))
        print(rates("training", (flops, flops), (plain[1], compiled[1]), top))
    # companion evaluation, on the models trained at the largest batch size above
    net = stacked[max(stacked)]
    from bnstudy.studies.companions.science import example_plans

    plans = [
        (f"{design} b={b}", batches)
        for design, b, batches in example_plans(
            y_test, companions_example(y_test), (2, 4, 16, 64), args.probe_batches, 16, seed=0
        )
    ]
    rows = sum(b.size for _, b in plans)
    loop, fast, agree = bench_companions(net, spec, x_test, plans, args.repeats)
    print(
        row(
            "companions, one example's design",
            loop,
            fast,
            f"seconds, {len(plans)} designs, {sum(len(b) for _, b in plans)} batches, {rows} rows, "
            f"{len(seeds)} models, {same(agree)}",
        )
    )
    print(rates("probes", probe_flops(spec, len(x_test), plans, len(seeds)), (loop[1], fast[1]), top))
    for label, batches in plans:
        if label.startswith("random"):
            loop, fast, agree = bench_companions(net, spec, x_test, [(label, batches)], args.repeats)
            print(row(f"  of which {label}", loop, fast, f"seconds, {len(batches)} batches, {same(agree)}"))
            flops = probe_flops(spec, len(x_test), [(label, batches)], len(seeds))
            print(rates("probes", flops, (loop[1], fast[1]), top))
    audit_rows(args, spec, net, x_test)
    print("\n".join(convbench.rows(repeats=args.repeats)))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of this process: {peak:.0f} MiB")
    return 0


def audit_rows(args, spec, stacked, x_test) -> None:
    """The audit's rows: probes per second against the naive loop, per size, MLP and CNN."""
    sizes = (2, 4, 16, 64)
    print(
        f"{'audit (probes/s)':<34} {'wall: loop':>9} {'audit':>9} {'ratio':>8}"
        f"   {'CPU: loop':>9} {'audit':>9} {'ratio':>8}"
    )
    cnn, images = conv_module(x_test)
    for name, net, x in (("MLP", audit_module(spec, stacked), x_test), ("CNN", cnn, images)):
        for b, (fast, slow, agree) in bench_audit(
            net, x, sizes, args.audit_probes, args.audit_loop_batches, args.repeats
        ).items():
            print(
                f"{f'  {name}, random b={b}':<34} {slow[0]:9.0f} {fast[0]:9.0f} {fast[0] / slow[0]:7.1f}x"
                f"   {slow[1]:9.0f} {fast[1]:9.0f} {fast[1] / slow[1]:7.1f}x   probes/s, "
                f"{len(x) * args.audit_probes} probes; row 0 labels agree {100 * agree:.2f}%"
            )


if __name__ == "__main__":
    sys.exit(main())
