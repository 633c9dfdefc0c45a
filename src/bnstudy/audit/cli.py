"""``bnstudy audit``: the audit as a command (see docs/audit.md).

Exit status: 0 done; 1 the flip rate at ``--at`` (default the serving batch) is above
``--fail-above``; 2 a bad input, said in one line on stderr.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import zipfile
from pathlib import Path

from .core import DEFAULT_SIZES
from .engine import AuditError

X_KEYS = ("x", "inputs", "X", "images", "data")
Y_KEYS = ("y", "labels", "targets", "label")
GROUP_KEYS = ("groups", "group", "source")


# ---- loading ---------------------------------------------------------------------


def _is_safetensors(path: Path) -> bool:
    with open(path, "rb") as f:
        head = f.read(9)
    return len(head) == 9 and int.from_bytes(head[:8], "little") < os.path.getsize(path) and head[8:9] == b"{"


def _safetensors_metadata(path: Path) -> dict:
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        return json.loads(f.read(n)).get("__metadata__") or {}


def _check_file(path) -> Path:
    p = Path(path)
    if not p.is_file():
        raise AuditError(f"{path}: no such file")
    return p


def load_state_dict(path) -> dict:
    """A state dict from a safetensors file or a ``torch.save``d dict of tensors (``weights_only=True``)."""
    import torch

    p = _check_file(path)
    try:
        if _is_safetensors(p):
            from safetensors.torch import load_file

            return load_file(str(p))
        state = torch.load(str(p), map_location="cpu", weights_only=True)
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise AuditError(f"{path}: not a safetensors or weights-only state_dict file ({first[:200]})") from None
    for key in ("state_dict", "model", "model_state_dict"):
        if isinstance(state, dict) and isinstance(state.get(key), dict):
            state = state[key]
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise AuditError(f"{path}: not a state_dict (a dict of tensors)")
    return state


def load_model(spec: str, weights: str | None = None, seed: int | None = None):
    """The model named by ``spec``: a TorchScript file, the pipeline's weights file, or
    ``module:factory`` (called with no arguments) with ``weights`` loaded into it."""
    import torch

    if ":" in spec and not Path(spec).exists():
        mod_name, _, attr = spec.partition(":")
        sys.path.insert(0, os.getcwd())
        try:
            factory = getattr(importlib.import_module(mod_name), attr)
        except (ImportError, AttributeError) as e:
            raise AuditError(f"{spec}: cannot import the factory ({e})") from None
        model = factory()
        if not isinstance(model, torch.nn.Module):
            raise AuditError(f"{spec}: the factory returned {type(model).__name__}, not a torch.nn.Module")
        if weights:
            state = load_state_dict(weights)
            try:
                model.load_state_dict(state)
            except RuntimeError as e:
                raise AuditError(f"{weights}: weights do not fit {spec}: {str(e).splitlines()[1].strip()}") from None
        return model.eval()
    p = _check_file(spec)
    if weights:
        raise AuditError(f"--weights goes with --model module:factory, not with the model file {spec}")
    if _is_safetensors(p):
        meta = _safetensors_metadata(p)
        if "normaliser" in meta and "seeds" in meta:
            from bnstudy.nets import weights as pipeline_weights

            try:
                return pipeline_weights.load_module(p, seed=seed)
            except ValueError as e:
                raise AuditError(f"{spec}: {e}") from None
        raise AuditError(
            f"{spec}: a safetensors file holds weights, not a model: give --model module:factory --weights"
        )
    if not zipfile.is_zipfile(p):
        raise AuditError(f"{spec}: not a TorchScript file (torch.jit.save), a pipeline weights file or module:factory")
    names = zipfile.ZipFile(p).namelist()
    if not any("/code/" in n or n.startswith("code/") for n in names):
        raise AuditError(
            f"{spec}: not TorchScript (a torch.save pickle is never loaded): save with torch.jit.save, "
            "or give --model module:factory --weights FILE"
        )
    try:
        return torch.jit.load(str(p), map_location="cpu").eval()
    except Exception as e:
        raise AuditError(f"{spec}: TorchScript file does not load ({str(e).splitlines()[0][:200]})") from None


def _arrays(path) -> dict:
    import numpy as np

    p = _check_file(path)
    suffix = p.suffix.lower()
    try:
        if suffix == ".npy":
            return {"": np.load(p, allow_pickle=False)}
        if suffix == ".npz":
            with np.load(p, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
        if suffix == ".safetensors":
            if not _is_safetensors(p):
                raise ValueError("no safetensors header")
            from safetensors.torch import load_file

            return dict(load_file(str(p)))
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise AuditError(f"{path}: not a valid {suffix} file ({first[:200]})") from None
    raise AuditError(f"{path}: data must be .npy, .npz or .safetensors")


def _pick(arrays: dict, path, key: str | None, defaults, what: str, required: bool):
    if "" in arrays:
        return arrays[""]
    if key is not None:
        if key not in arrays:
            raise AuditError(f"{path}: no key {key!r} (keys: {', '.join(sorted(arrays))})")
        return arrays[key]
    for k in defaults:
        if k in arrays:
            return arrays[k]
    if required and len(arrays) == 1:
        return next(iter(arrays.values()))
    if required:
        raise AuditError(f"{path}: no {what} (looked for keys {', '.join(defaults)}; give --{what[0]}-key)")
    return None


def load_data(args):
    """``(x, y, groups, stats_x)`` from the command's data options."""
    arrays = _arrays(args.data)
    x = _pick(arrays, args.data, args.x_key, X_KEYS, "x inputs", True)
    y = _pick(arrays, args.data, args.y_key, Y_KEYS, "y labels", False) if "" not in arrays else None
    groups = _pick(arrays, args.data, args.group_key, GROUP_KEYS, "groups", False) if "" not in arrays else None
    if args.labels:
        y = _pick(_arrays(args.labels), args.labels, args.y_key, Y_KEYS, "y labels", True)
    if args.groups:
        groups = _pick(_arrays(args.groups), args.groups, args.group_key, GROUP_KEYS, "groups", True)
    stats_x = None
    if args.stats_data:
        stats_x = _pick(_arrays(args.stats_data), args.stats_data, args.x_key, X_KEYS, "x inputs", True)
    for name, v, src in (("labels", y, args.labels or args.data), ("groups", groups, args.groups or args.data)):
        if v is not None and len(v) != len(x):
            raise AuditError(f"{src}: {len(v)} {name} for {len(x)} input rows")
        if v is not None and getattr(v, "ndim", 1) != 1:
            raise AuditError(f"{src}: {name} must be one value per row, got shape {tuple(v.shape)}")
    return x, y, groups, stats_x


# ---- the command -----------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bnstudy audit",
        description="Measure how much a network's predictions depend on batch statistics: companion dependence, "
        "grouped-batch exposure and running-statistics staleness (docs/audit.md).",
    )
    p.add_argument("--model", required=True, help="TorchScript file, pipeline weights file, or module:factory")
    p.add_argument("--weights", help="safetensors or state_dict file for module:factory (loaded weights_only)")
    p.add_argument("--seed", type=int, help="which network of a pipeline weights file")
    p.add_argument("--data", required=True, help="inputs: .npy, or .npz/.safetensors with x (and y, groups)")
    p.add_argument("--labels", help="labels file (.npy, or .npz/.safetensors with y)")
    p.add_argument("--groups", help="group ids file (source, customer, day...)")
    p.add_argument("--stats-data", help="inputs to recompute the statistics on (default: --data)")
    p.add_argument("--x-key")
    p.add_argument("--y-key")
    p.add_argument("--group-key")
    p.add_argument("--batch-sizes", type=int, nargs="+", default=list(DEFAULT_SIZES), metavar="B")
    p.add_argument("--serving-batch", type=int, help="your serving batch size (added to the sizes)")
    p.add_argument("--probes", type=int, default=20, help="probes per example at each size and design")
    p.add_argument("--exact-sample", type=int, default=50, help="examples enumerated exactly at b=2")
    p.add_argument("--exact-budget", type=int, default=200_000, help="rows the exact enumeration may forward")
    p.add_argument("--resamples", type=int, default=1000)
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--random-seed", type=int, default=0)
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    p.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    p.add_argument("--chunk", type=int, default=1024, help="rows per forward pass")
    p.add_argument("--json", help="write the results as JSON")
    p.add_argument("--figure", help="write the figure (PNG)")
    p.add_argument("--html", help="write a self-contained HTML report")
    p.add_argument("--fail-above", type=float, metavar="RATE", help="exit 1 if the flip rate is above RATE (0-1)")
    p.add_argument("--at", type=int, metavar="B", help="batch size of --fail-above (default: --serving-batch)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def run(argv=None) -> int:
    args = parser().parse_args(argv)
    import torch

    from .core import audit
    from .report import summary, write_figure, write_html, write_json

    if args.fail_above is not None and (args.at or args.serving_batch) is None:
        raise AuditError("--fail-above needs --at B or --serving-batch B")
    if not 0 < args.confidence < 1:
        raise AuditError(f"--confidence must lie in (0, 1), got {args.confidence}")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise AuditError(f"--device {args.device}: torch sees no GPU")
    if args.threads:
        torch.set_num_threads(args.threads)
    model = load_model(args.model, args.weights, args.seed)
    x, y, groups, stats_x = load_data(args)
    result = audit(
        model,
        x,
        y,
        groups,
        batch_sizes=args.batch_sizes,
        serving_batch=args.serving_batch,
        probes=args.probes,
        exact_sample=args.exact_sample,
        exact_budget=args.exact_budget,
        stats_x=stats_x,
        resamples=args.resamples,
        confidence=args.confidence,
        seed=args.random_seed,
        device=args.device,
        chunk_rows=args.chunk,
        progress=not args.quiet,
    )
    print(summary(result))
    for path, write in ((args.json, write_json), (args.figure, write_figure), (args.html, write_html)):
        if path:
            write(result, path)
    if args.fail_above is not None:
        b = args.at or args.serving_batch
        row = result.flip(b)
        if row is None:
            raise AuditError(
                f"--at {b}: no random-batch flip rate at that size (sizes {result.settings['batch_sizes']})"
            )
        if row["flip_rate"] > args.fail_above:
            print(
                f"FAIL: flip rate {100 * row['flip_rate']:.2f}% at b={b} is above {100 * args.fail_above:.2f}%",
                file=sys.stderr,
            )
            return 1
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: bnstudy audit --model MODEL --data FILE [options]   (bnstudy audit --help)")
        return 0 if argv else 2
    if argv[0] != "audit":
        print(f"bnstudy: unknown command {argv[0]!r}; the command is: bnstudy audit", file=sys.stderr)
        return 2
    try:
        return run(argv[1:])
    except AuditError as e:
        print(f"bnstudy audit: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
