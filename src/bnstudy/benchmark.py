"""Speed benchmark: the plain per-model loop against the vectorised code, side by side.

``python -m bnstudy.benchmark`` times, in one process and interleaved repeat by
repeat, on the digits training half of the paper's split:

- training: :func:`bnstudy.train.train_plain` (one ``nn.Sequential``, a standard
  PyTorch loop, one model per call) against :func:`bnstudy.train.train_lockstep`
  (all seeds in lockstep), at batch sizes 2 and 64; the figure compared is the
  time *per model-run*: a plain call's time, and a lockstep call's time divided
  by its number of models;
- companion evaluation: one test example's whole probe design as a pipeline job
  runs it (random companions at b = 2, 4, 16, 64, every b = 2 pair, own- and
  other-class batches at b = 16), through
  :func:`bnstudy.companions.probe_labels` (vectorised over batches and models)
  and through :func:`bnstudy.companions.batch_predictions_loop` (a plain
  ``nn.Sequential`` in training mode, one batch at a time), on the models trained
  above at the largest batch size; then the random designs one by one (the ratio
  grows as the batch shrinks: the loop's cost is per batch, the vectorised cost
  per row).

Each figure is the median over ``--repeats`` repeats of wall-clock time
(``time.perf_counter``) and of this process's CPU time (``time.process_time``;
less disturbed by other jobs on a shared machine); ratios are plain / vectorised
medians. Runs are short (``--epochs``, default 2): the time of a run grows
linearly with its epochs, so the ratios hold for the paper's 20. Threads are
fixed to 1 as in the pipeline.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time

import torch

from . import model as mlp
from . import runtime, train
from .data import split_digits
from .norms import NORMALISERS


def companions_example(y: torch.Tensor) -> int:
    """The first test row of class 0: the probed example (any row would do)."""
    return int((y == 0).nonzero()[0])


def timed(fn, *args, **kwargs):
    """``(result, wall seconds, CPU seconds)`` of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def median_pair(samples: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def bench_training(spec, x, y, batch_size: int, epochs: int, seeds: list[int], repeats: int):
    """Per model-run seconds (wall, CPU) of the plain loop and of lockstep training."""
    recipe = train.Recipe(batch_size=batch_size, epochs=epochs)
    plain, lockstep, stacked = [], [], None
    for r in range(repeats):
        _, wall, cpu = timed(train.train_plain, spec, recipe, seeds[r % len(seeds)], x, y)
        plain.append((wall, cpu))
        (stacked, _), wall, cpu = timed(train.train_lockstep, spec, recipe, seeds, x, y)
        lockstep.append((wall / len(seeds), cpu / len(seeds)))
    return median_pair(plain), median_pair(lockstep), stacked


def bench_companions(stacked, spec, x, plans, repeats: int):
    """Seconds (wall, CPU) of the per-batch loop and of the vectorised probes over ``plans``.

    The vectorised side is what a pipeline job does: the first layer once, then
    every plan through :func:`bnstudy.companions.probe_labels`. Returns the two
    medians and whether every label agrees.
    """
    from .companions import batch_predictions_loop, first_layer, probe_labels

    def vectorised():
        pre, workspace = first_layer(stacked, x), {}
        return [probe_labels(stacked, spec, pre, batches, workspace=workspace) for _, batches in plans]

    loop, fast, same = [], [], True
    for _ in range(repeats):
        ref, wall, cpu = timed(lambda: [batch_predictions_loop(stacked, spec, x, b) for _, b in plans])
        loop.append((wall, cpu))
        out, wall, cpu = timed(vectorised)
        fast.append((wall, cpu))
        same = same and all(torch.equal(a, b) for a, b in zip(ref, out))
    return median_pair(loop), median_pair(fast), same


def row(label: str, slow, fast, unit: str) -> str:
    return (f"{label:<34} {slow[0]:9.3f} {fast[0]:9.4f} {slow[0] / fast[0]:7.1f}x"
            f"   {slow[1]:9.3f} {fast[1]:9.4f} {slow[1] / fast[1]:7.1f}x   {unit}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bnstudy.benchmark", description=__doc__.split("\n\n")[0])
    parser.add_argument("--normaliser", default="batchnorm", choices=NORMALISERS)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[2, 64])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--seeds", type=int, default=5, help="models trained in lockstep (the grid: 5)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--probe-batches", type=int, default=200,
                        help="random and one-class batches per design (the paper config: 200)")
    args = parser.parse_args(argv)

    runtime.configure(1)
    split = split_digits(0)
    x, y = torch.from_numpy(split.x_train), torch.from_numpy(split.y_train)
    x_test, y_test = torch.from_numpy(split.x_test), torch.from_numpy(split.y_test)
    spec = mlp.NetSpec(args.normaliser)
    seeds = list(range(args.seeds))

    print(f"bnstudy benchmark: {args.normaliser}, {args.epochs} epochs on {len(y)} rows, {len(seeds)} models "
          f"in lockstep, {args.repeats} repeats, torch {torch.__version__}, {torch.get_num_threads()} thread")
    print(f"{'':<34} {'wall: plain':>9} {'vector':>9} {'ratio':>8}   {'CPU: plain':>9} {'vector':>9} {'ratio':>8}")
    stacked = {}  # the lockstep-trained models, by batch size: probed below
    for b in args.batch_sizes:
        plain, lockstep, stacked[b] = bench_training(spec, x, y, b, args.epochs, seeds, args.repeats)
        print(row(f"training, batch {b} (per model-run)", plain, lockstep, "seconds"))
        runs = 20 / args.epochs
        print(f"{'':<36}20-epoch model-run: plain {plain[0] * runs:.2f} s, lockstep {lockstep[0] * runs:.2f} s (wall)")
    # companion evaluation, on the models trained at the largest batch size above
    net = stacked[max(stacked)]
    from .companions import example_plans

    plans = [(f"{design} b={b}", batches) for design, b, batches in
             example_plans(y_test, companions_example(y_test), (2, 4, 16, 64), args.probe_batches, 16, seed=0)]
    rows = sum(b.numel() for _, b in plans)
    loop, fast, same = bench_companions(net, spec, x_test, plans, args.repeats)
    print(row("companions, one example's design", loop, fast,
              f"seconds, {len(plans)} designs, {sum(len(b) for _, b in plans)} batches, {rows} rows, "
              f"{len(seeds)} models, labels identical: {same}"))
    for label, batches in plans:
        if label.startswith("random"):
            loop, fast, same = bench_companions(net, spec, x_test, [(label, batches)], args.repeats)
            print(row(f"  of which {label}", loop, fast, f"seconds, {len(batches)} batches, identical: {same}"))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of this process: {peak:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
