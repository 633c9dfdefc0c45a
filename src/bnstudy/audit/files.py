"""The audit's files: safetensors read without the safetensors package, pickles recognised without
unpickling them, and outputs written whole or not at all.

- :func:`read_safetensors`: the format is an 8-byte little-endian header length, a JSON header
  (``dtype``, ``shape``, ``data_offsets`` per tensor, optional ``__metadata__``) and the raw
  little-endian bytes; read with NumPy and PyTorch only, so the audit needs neither the
  ``safetensors`` package nor the study's dependencies.
- :func:`pickled_object`: the class a ``torch.save`` file holds where a state dict should be
  (a pickled whole model), named from the pickle's opcodes (:mod:`pickletools`), which never runs
  the pickle.
- :func:`write_all`: every output into a temporary file beside its destination, then each renamed
  over it; if anything fails before the renames, no output is left.
"""

from __future__ import annotations

import json
import os
import pickletools
import re
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import torch

# safetensors dtype names -> torch dtypes (little-endian storage); FP8 where this torch has it
DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}
for _name, _attr in (("F8_E4M3", "float8_e4m3fn"), ("F8_E5M2", "float8_e5m2")):
    if hasattr(torch, _attr):
        DTYPES[_name] = getattr(torch, _attr)

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class FileProblem(ValueError):
    """A file that is not what it should be; the caller names the file."""


def is_safetensors(path) -> bool:
    """Whether ``path`` starts like a safetensors file (a header length within the file, then ``{``)."""
    with open(path, "rb") as f:
        head = f.read(9)
    return len(head) == 9 and int.from_bytes(head[:8], "little") < os.path.getsize(path) and head[8:9] == b"{"


def _header(f, size: int) -> tuple[dict, int]:
    n = int.from_bytes(f.read(8), "little")
    if n <= 0 or 8 + n > size:
        raise FileProblem("no safetensors header")
    try:
        header = json.loads(f.read(n))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FileProblem(f"its safetensors header is not JSON ({e})") from None
    if not isinstance(header, dict):
        raise FileProblem("its safetensors header is not a JSON object")
    return header, 8 + n


def safetensors_metadata(path) -> dict:
    """The ``__metadata__`` of a safetensors file (empty if it has none)."""
    with open(path, "rb") as f:
        header, _ = _header(f, os.path.getsize(path))
    meta = header.get("__metadata__") or {}
    return meta if isinstance(meta, dict) else {}


def read_safetensors(path) -> dict[str, torch.Tensor]:
    """Every tensor of a safetensors file, on the CPU, in the header's order."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        header, start = _header(f, size)
        raw = f.read()
    out = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = DTYPES[spec["dtype"]]
            shape = [int(d) for d in spec["shape"]]
            lo, hi = (int(v) for v in spec["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise FileProblem(f"tensor {name!r}: dtype {spec.get('dtype')!r} or its entry not understood") from None
        count = int(np.prod(shape, dtype=np.int64))
        itemsize = torch.empty((), dtype=dtype).element_size()
        if not 0 <= lo <= hi <= size - start or hi - lo != count * itemsize:
            raise FileProblem(f"tensor {name!r}: its bytes {lo}..{hi} do not hold shape {shape} of {spec['dtype']}")
        if count == 0:
            out[name] = torch.empty(shape, dtype=dtype)
            continue
        buf = bytearray(raw[lo:hi])  # a writable copy: the tensor owns its memory
        out[name] = torch.frombuffer(buf, dtype=dtype).reshape(shape)
    return out


# globals a plain state dict's pickle uses (torch.save of a dict of tensors)
_STATE_GLOBALS = re.compile(r"^(collections OrderedDict|torch \w+|torch\._utils _rebuild_\w+)$")


def pickled_object(path) -> str | None:
    """The dotted class name of the object a ``torch.save`` zip file pickles where a state dict
    would hold only tensors, or ``None`` (also for files that are no such zip). The pickle is read as
    opcodes, never run."""
    try:
        with zipfile.ZipFile(path) as z:
            names = [n for n in z.namelist() if n.endswith("data.pkl")]
            if not names:
                return None
            data = z.read(names[0])
        found = _globals(data)
    except Exception:
        return None
    classes = [g for g in found if not _STATE_GLOBALS.match(g) and not g.startswith("__builtin__ ")]
    modules = [g for g in classes if g.startswith("torch.nn.")] or classes
    return modules[0].replace(" ", ".") if modules else None


def _globals(data: bytes) -> list[str]:
    """``"module name"`` of every global a pickle refers to: ``GLOBAL`` (protocols 0-3) and
    ``STACK_GLOBAL`` (4 and later, its two strings pushed or fetched from the memo before it)."""
    found, strings, memo, last = [], [], {}, None
    for op, arg, _ in pickletools.genops(data):
        name = op.name
        if name == "GLOBAL" and isinstance(arg, str):
            found.append(arg)
            last = None
        elif name == "STACK_GLOBAL":
            if len(strings) >= 2:
                found.append(f"{strings[-2]} {strings[-1]}")
            last = None
        elif "UNICODE" in name and isinstance(arg, str):
            strings.append(arg)
            last = arg
        elif name == "MEMOIZE":
            memo[len(memo)] = last
        elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
            memo[arg] = last
        elif name in ("GET", "BINGET", "LONG_BINGET"):
            last = memo.get(arg)
            if isinstance(last, str):
                strings.append(last)
        else:
            last = None
    return found


def pickle_protocol(path) -> int | None:
    """The pickle protocol of a ``torch.save`` zip file's ``data.pkl`` (its ``PROTO`` opcode), or ``None``."""
    try:
        with zipfile.ZipFile(path) as z:
            names = [n for n in z.namelist() if n.endswith("data.pkl")]
            data = z.read(names[0]) if names else b""
        return data[1] if data[:1] == b"\x80" and len(data) > 1 else None
    except Exception:
        return None


def weights_only_reason(e: BaseException) -> str:
    """What ``torch.load(weights_only=True)`` found wrong, without its advice: the text after
    "WeightsUnpickler error:" where it says so, else the message's first line."""
    text = ANSI.sub("", str(e))
    if "WeightsUnpickler error:" in text:
        rest = text.split("WeightsUnpickler error:", 1)[1].strip()
        reason = " ".join(rest.split("\n\n")[0].split())
        if reason:
            return reason if len(reason) <= 200 else reason[:197] + "..."
    return one_line(e)


def one_line(e: BaseException, limit: int = 200) -> str:
    """The first line of an exception's message, without terminal escape codes, at most ``limit`` characters."""
    text = ANSI.sub("", str(e)).strip()
    first = text.splitlines()[0].strip() if text else type(e).__name__
    return first if len(first) <= limit else first[: limit - 3] + "..."


def check_writable(path, option: str) -> Path:
    """``path`` as an output: its folder exists and can be written, and it is no folder itself.
    Raises :class:`FileProblem` saying which option is wrong."""
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise FileProblem(f"{option} {path}: is a folder, not a file name")
    if not folder.is_dir():
        raise FileProblem(f"{option} {path}: no folder {folder} (create it first)")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise FileProblem(f"{option} {path}: folder {folder} is not writable")
    if p.exists() and not os.access(p, os.W_OK):
        raise FileProblem(f"{option} {path}: the file exists and is not writable")
    return p


def write_all(outputs: list[tuple[Path, bytes]]) -> None:
    """Write every ``(path, bytes)``: each to a temporary file in its destination's folder first, then
    all renamed over their destinations (an atomic replace each). If writing any temporary file fails,
    every temporary file is removed and no destination is touched."""
    temps = []
    try:
        for path, data in outputs:
            folder = path.parent if str(path.parent) else Path(".")
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
            temps.append(tmp)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o666 & ~_umask())
    except BaseException:
        for tmp in temps:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise
    for (path, _), tmp in zip(outputs, temps):
        os.replace(tmp, path)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
