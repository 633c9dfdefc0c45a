"""``bnstudy audit``: the audit as a command (see docs/audit.md).

Exit status: 0 done (and the flip rate at ``--at`` within ``--fail-above``); 1 the flip rate at
``--at`` (default the serving batch) is above ``--fail-above``; 2 a bad input or option, said in one
line on stderr before any work; 3 the audit itself failed (a crash: the traceback on stderr), never 1.
"""

from __future__ import annotations

import argparse
import os
import sys

from .engine import AuditError
from .files import FileProblem
from .loading import load_data, load_model
from .options import DEFAULT_SIZES

EXIT_FAIL, EXIT_BAD_INPUT, EXIT_CRASH = 1, 2, 3


# ---- the command (what it loads: bnstudy.audit.loading) ----------------------------------


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bnstudy audit",
        description="Measure how much a network's predictions depend on batch statistics: companion dependence, "
        "grouped-batch exposure and running-statistics staleness (docs/audit.md). Exit status: 0 done, "
        "1 above --fail-above, 2 a bad input or option (before any work), 3 the audit crashed.",
    )
    p.add_argument("--model", required=True, help="TorchScript file, pipeline weights file, or module:factory")
    p.add_argument("--weights", help="safetensors or state_dict file for module:factory (loaded weights_only)")
    p.add_argument("--seed", type=int, help="which network of a pipeline weights file")
    p.add_argument("--data", required=True, help="inputs: .npy, or .npz/.safetensors with x (and y, groups)")
    p.add_argument("--labels", help="labels file (.npy, or .npz/.safetensors with y)")
    p.add_argument("--groups", help="group ids file (source, customer, day...): the headline is then one-group batches")
    p.add_argument("--stats-data", help="inputs to recompute the statistics on (default: --data)")
    p.add_argument("--x-key")
    p.add_argument("--y-key")
    p.add_argument("--group-key")
    p.add_argument("--batch-sizes", type=int, nargs="+", default=list(DEFAULT_SIZES), metavar="B")
    p.add_argument("--serving-batch", type=int, help="your serving batch size (added to the sizes)")
    p.add_argument("--probes", type=int, default=20, help="probes per example at each size and design")
    p.add_argument("--exact-sample", type=int, default=50, help="examples enumerated exactly at b=2 (0: none)")
    p.add_argument("--exact-budget", type=int, default=200_000, help="rows the exact enumeration may forward")
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (at least 200 at 95%%)")
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--noise-resamples", type=int, default=10, help="resamples of the staleness noise band (0: none)")
    p.add_argument("--noise-rows", type=int, default=256, help="rows per resample of the noise band")
    p.add_argument("--random-seed", type=int, default=0)
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    p.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    p.add_argument("--chunk", type=int, default=1024, help="rows per forward pass")
    p.add_argument("--json", help="write the results as JSON")
    p.add_argument("--figure", help="write the figure (PNG; needs matplotlib)")
    p.add_argument("--html", help="write a self-contained HTML report (needs matplotlib)")
    p.add_argument(
        "--fail-above",
        metavar="RATE",
        help="exit 1 if the flip rate at --at is above RATE: a share (0.01) or a percentage (1%%)",
    )
    p.add_argument("--at", type=int, metavar="B", help="batch size of --fail-above (default: --serving-batch)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def fail_rate(text: str) -> float:
    """``--fail-above``'s value as a share in [0, 1): ``0.01`` or ``1%``; refused otherwise (a bare 1 or 5 is
    a share of 100% or more, which no flip rate exceeds: the user meant a percentage)."""
    t = text.strip()
    try:
        rate = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise AuditError(f"--fail-above {text}: not a number (a share such as 0.01, or 1%)") from None
    if not 0 <= rate < 1 or rate != rate:
        hint = f" (for {t}% write {float(t) / 100:g} or {t}%)" if not t.endswith("%") and 1 <= rate <= 100 else ""
        raise AuditError(f"--fail-above {text}: a flip rate lies in [0, 1), 0.01 being 1%{hint}")
    return rate


def _options(args) -> dict:
    return {
        "batch_sizes": tuple(args.batch_sizes),
        "serving_batch": args.serving_batch,
        "probes": args.probes,
        "exact_sample": args.exact_sample,
        "exact_budget": args.exact_budget,
        "resamples": args.resamples,
        "confidence": args.confidence,
        "noise_resamples": args.noise_resamples,
        "noise_rows": args.noise_rows,
        "seed": args.random_seed,
        "device": args.device,
        "chunk_rows": args.chunk,
        "progress": not args.quiet,
    }


def check_args(args) -> tuple[float | None, list]:
    """Every option that needs no file, checked before any work: ``(fail rate, outputs)``, each output
    ``(kind, path)`` with its folder writable."""
    from .files import check_writable
    from .options import Options, check_options
    from .report import need_matplotlib

    sizes = check_options(Options(**_options(args)))
    if args.seed is not None and args.seed < 0:
        raise AuditError(f"--seed must be a network's seed (0 or more), got {args.seed}")
    if args.threads is not None and args.threads < 1:
        raise AuditError(f"--threads must be at least 1, got {args.threads}")
    rate = None if args.fail_above is None else fail_rate(args.fail_above)
    if rate is not None and (args.at or args.serving_batch) is None:
        raise AuditError("--fail-above needs --at B or --serving-batch B")
    if args.at is not None and rate is None:
        raise AuditError("--at B is the batch size of --fail-above: give --fail-above RATE too")
    if args.at is not None and args.at not in sizes:
        raise AuditError(
            f"--at {args.at}: not among the batch sizes measured ({', '.join(map(str, sizes))}); "
            "add it to --batch-sizes or give it as --serving-batch"
        )
    outputs, seen = [], {}
    for kind, option, path in (
        ("json", "--json", args.json),
        ("figure", "--figure", args.figure),
        ("html", "--html", args.html),
    ):
        if path:
            p = check_writable(path, option)
            key = os.path.abspath(p)
            if key in seen:
                raise AuditError(f"{option} {path}: the same file as {seen[key]}")
            seen[key] = option
            if kind != "json":
                need_matplotlib(option)
            outputs.append((kind, p))
    return rate, outputs


def check_data(args, x, groups) -> None:
    """The options that depend on the data, checked before any work: ``--at`` (and so the gate) within
    the rows, and with group ids, some group large enough for a one-group batch of ``--at``."""
    import numpy as np

    b = args.at or args.serving_batch
    if args.fail_above is None or b is None:
        return
    if b > len(x):
        raise AuditError(f"--at {b}: {args.data} holds only {len(x)} rows, no batch of {b}")
    if groups is not None:
        largest = int(np.unique(np.asarray(groups), return_counts=True)[1].max())
        if largest < b:
            raise AuditError(
                f"--at {b}: no group of {args.groups or args.data} holds {b} rows (the largest {largest}), so no "
                f"one-group batch of {b} exists to hold to --fail-above"
            )


def run(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        rate, outputs = check_args(args)
    except FileProblem as e:
        raise AuditError(str(e)) from None
    import torch

    from .core import audit
    from .files import write_all
    from .report import RENDER, summary

    if args.threads:
        torch.set_num_threads(args.threads)
    model = load_model(args.model, args.weights, args.seed)
    x, y, groups, stats_x = load_data(args)
    check_data(args, x, groups)
    names = {
        "x": f"{args.data} (inputs)",
        "y": f"{args.labels or args.data} (labels)",
        "groups": f"{args.groups or args.data} (groups)",
        "stats_x": f"{args.stats_data} (statistics inputs)",
    }
    result = audit(model, x, y, groups, stats_x=stats_x, names=names, **_options(args))
    print(summary(result))
    write_all([(path, RENDER[kind](result)) for kind, path in outputs])
    if rate is not None:
        b = args.at or args.serving_batch
        design = result.gate_design()
        row = result.flip(b, design)
        if row is None:  # checked before the audit; kept for a design the data could not form
            raise AuditError(f"--at {b}: no {design} flip rate at that size (sizes {result.settings['batch_sizes']})")
        if row["flip_rate"] > rate:
            words = "one-group batches" if design == "group" else "random batches"
            print(
                f"FAIL: flip rate {100 * row['flip_rate']:.2f}% at b={b} in {words} is above {100 * rate:.2f}%",
                file=sys.stderr,
            )
            return EXIT_FAIL
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: bnstudy audit --model MODEL --data FILE [options]   (bnstudy audit --help)")
        return 0 if argv else EXIT_BAD_INPUT
    if argv[0] != "audit":
        print(f"bnstudy: unknown command {argv[0]!r}; the command is: bnstudy audit", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        return run(argv[1:])
    except AuditError as e:
        print(f"bnstudy audit: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("bnstudy audit: interrupted", file=sys.stderr)
        return 130
    except Exception:  # a crash is never exit 1, which means 'above --fail-above'
        import traceback

        traceback.print_exc()
        print("bnstudy audit: the audit crashed (exit 3); the traceback above says where", file=sys.stderr)
        return EXIT_CRASH


if __name__ == "__main__":
    sys.exit(main())
