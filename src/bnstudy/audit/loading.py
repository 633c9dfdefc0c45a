"""What the command loads: the user's model (a factory or TorchScript), its weights and the data.

:func:`load_model` builds the model from ``module:factory`` (or loads a TorchScript file) and
loads ``weights`` (a state dict, checked before unpickling: :mod:`bnstudy.audit.files`);
:func:`load_data` reads the inputs, labels and group ids from ``.npz``, ``.npy`` or ``.safetensors``
files, by the keys given or the usual names (:data:`X_KEYS`, :data:`Y_KEYS`, :data:`GROUP_KEYS`).
Every failure is one line (:class:`bnstudy.audit.engine.AuditError`).
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
import zipfile
from pathlib import Path

from .engine import AuditError
from .files import (
    FileProblem,
    is_safetensors,
    one_line,
    pickle_protocol,
    pickled_object,
    read_safetensors,
    safetensors_metadata,
    weights_only_reason,
)

X_KEYS = ("x", "inputs", "X", "images", "data")
Y_KEYS = ("y", "labels", "targets", "label")
GROUP_KEYS = ("groups", "group", "source")
STUDY_EXTRA = "pip install 'bnstudy[study]'"


def _check_file(path) -> Path:
    p = Path(path)
    if not p.is_file():
        raise AuditError(f"{path}: no such file")
    return p


def _pickled(path) -> str | None:
    """``"a pickled Name (dotted.Name, torch.save of the object)"`` if ``path`` pickles a whole object, or ``None``."""
    cls = pickled_object(path)
    return None if cls is None else f"a pickled {cls.rsplit('.', 1)[-1]} ({cls}: torch.save of the object)"


def load_state_dict(path) -> dict:
    """A state dict from a safetensors file or a ``torch.save``d dict of tensors (``weights_only=True``)."""
    import torch

    p = _check_file(path)
    try:
        if is_safetensors(p):
            return read_safetensors(p)
        with warnings.catch_warnings():  # torch warns of pickle protocols its weights-only loader may not read
            warnings.simplefilter("ignore")
            state = torch.load(str(p), map_location="cpu", weights_only=True)
    except FileProblem as e:
        raise AuditError(f"{path}: not a valid safetensors file ({e})") from None
    except Exception as e:
        pickled = _pickled(p)
        if pickled is not None:
            raise AuditError(
                f"{path}: {pickled}, never loaded (unpickling can run code): give its state dict, saved with "
                "torch.save(model.state_dict(), path) or as safetensors"
            ) from None
        protocol = pickle_protocol(p)
        if protocol is not None and protocol >= 4:
            raise AuditError(
                f"{path}: saved with pickle protocol {protocol}, which torch.load(weights_only=True) cannot read "
                f"({weights_only_reason(e)}): save with torch.save's default protocol, or as safetensors"
            ) from None
        raise AuditError(
            f"{path}: not a safetensors or weights-only state_dict file ({weights_only_reason(e)})"
        ) from None
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
            raise AuditError(f"{spec}: cannot import the factory ({one_line(e)})") from None
        model = factory()
        if not isinstance(model, torch.nn.Module):
            raise AuditError(f"{spec}: the factory returned {type(model).__name__}, not a torch.nn.Module")
        if weights:
            state = load_state_dict(weights)
            try:
                model.load_state_dict(state)
            except RuntimeError as e:
                lines = [line.strip() for line in str(e).splitlines() if line.strip()]
                raise AuditError(
                    f"{weights}: weights do not fit {spec}: {lines[1] if len(lines) > 1 else lines[0]}"
                ) from None
        return model.eval()
    p = _check_file(spec)
    if weights:
        raise AuditError(f"--weights goes with --model module:factory, not with the model file {spec}")
    if is_safetensors(p):
        try:
            meta = safetensors_metadata(p)
        except FileProblem as e:
            raise AuditError(f"{spec}: not a valid safetensors file ({e})") from None
        if "normaliser" in meta and "seeds" in meta:
            try:
                from bnstudy.nets import weights as pipeline_weights
            except ImportError as e:
                raise AuditError(
                    f"{spec}: a weights file of the study's pipeline needs the study's packages ({e.name} is "
                    f"missing): {STUDY_EXTRA}"
                ) from None
            try:
                return pipeline_weights.load_module(p, seed=seed)
            except ImportError as e:
                raise AuditError(f"{spec}: reading it needs the study's packages ({e.name}): {STUDY_EXTRA}") from None
            except ValueError as e:
                raise AuditError(f"{spec}: {e}") from None
        raise AuditError(
            f"{spec}: a safetensors file holds weights, not a model: give --model module:factory --weights"
        )
    if not zipfile.is_zipfile(p):
        raise AuditError(f"{spec}: not a TorchScript file (torch.jit.save), a pipeline weights file or module:factory")
    names = zipfile.ZipFile(p).namelist()
    if not any("/code/" in n or n.startswith("code/") for n in names):
        pickled = _pickled(p)
        if pickled is not None:
            raise AuditError(
                f"{spec}: {pickled}, never loaded (unpickling can run code): save it with "
                "torch.jit.save(torch.jit.script(model), path), or give --model module:factory --weights FILE "
                "with torch.save(model.state_dict(), FILE)"
            )
        raise AuditError(
            f"{spec}: not TorchScript (a torch.save pickle is never loaded): save with torch.jit.save, "
            "or give --model module:factory --weights FILE"
        )
    try:
        return torch.jit.load(str(p), map_location="cpu").eval()
    except Exception as e:
        raise AuditError(f"{spec}: TorchScript file does not load ({one_line(e)})") from None


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
            if not is_safetensors(p):
                raise ValueError("no safetensors header")
            return read_safetensors(p)
    except Exception as e:
        raise AuditError(f"{path}: not a valid {suffix} file ({one_line(e)})") from None
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
