"""Byte-stable, atomic file writing.

Every writer here produces the same bytes for the same content (no timestamps,
no pickles, sorted keys, fixed float formatting) and writes through a temporary
file in the target directory that is renamed into place only when complete, so an
interrupted job never leaves a half-written file that looks finished.

The readers say which file is bad: a missing, truncated or corrupt output raises
:class:`DamagedOutput`, whose message is one line naming the file and the repair
command; uncaught in a rule script, it ends the job with that line and exit status 1.

Nothing here imports PyTorch: weights are read and written as NumPy arrays.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

# pandas (about 0.5 CPU s to import) is imported where a table is read or written through it, not
# here: a job that writes its tables as rows (train, probes) never needs it (see write_table).

REPAIR = "`make repair` re-creates it (CONFIG=config/test.yaml for a test-config build; docs/verify.md)"


class DamagedOutput(SystemExit, ValueError):
    """An output file that is missing, truncated or corrupt.

    Its message is one line: the file, what is wrong with it, and the repair command. A
    ``SystemExit`` so that a rule script that does not catch it ends with that line on
    stderr and exit status 1, not a library traceback; a ``ValueError`` so that callers
    catching bad values catch it too.
    """

    def __init__(self, path, reason: str):
        self.path = str(path)
        self.reason = reason
        super().__init__(f"bnstudy: {path}: {reason}; {REPAIR}")

    def __str__(self) -> str:
        return str(self.code)


def _why(err: BaseException) -> str:
    """An exception's message on one short line."""
    text = " ".join(str(err).split()) or type(err).__name__
    return text if len(text) <= 120 else text[:117] + "..."


@contextlib.contextmanager
def _reading(path, *errors: type[BaseException]):
    """Turn a missing file, or any of ``errors`` while reading ``path``, into :class:`DamagedOutput`."""
    try:
        yield
    except FileNotFoundError:
        raise DamagedOutput(path, "missing output") from None
    except errors as err:
        raise DamagedOutput(path, f"damaged output ({_why(err)})") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path beside ``path``; rename it to ``path`` on success.

    The file gets the permissions of a plainly created one (``0o666`` less the
    umask), not the owner-only mode of a temporary file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text(path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def _plain(obj):
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return _plain(obj.tolist())
    if hasattr(obj, "tolist"):  # a torch.Tensor (or any array-like scalar)
        return _plain(obj.tolist())
    return obj


def write_json(path, obj) -> None:
    write_text(path, json.dumps(_plain(obj), indent=2, sort_keys=True, allow_nan=False) + "\n")


def read_json(path):
    with _reading(path, ValueError, OSError):  # json.JSONDecodeError and UnicodeDecodeError are ValueErrors
        with open(path, encoding="utf-8") as f:
            return json.load(f)


_CSV_SPECIAL = frozenset(',"\n\r')


def _csv_column(values: list) -> list[str] | None:
    """A column's cells as pandas' ``to_csv`` writes them, for the three simple kinds; else None.

    Integers (not bools) as ``str``; float64s as their shortest round-trip repr, NaN as an empty
    cell; non-empty strings that need no quoting as they are.
    """
    if all(type(v) is int or isinstance(v, np.integer) for v in values):
        return [str(int(v)) for v in values]
    if all(type(v) is float or type(v) is np.float64 for v in values):
        return ["" if v != v else repr(float(v)) for v in values]
    if all(type(v) is str and v and _CSV_SPECIAL.isdisjoint(v) for v in values):
        return values
    return None


def plain_csv(rows: list[dict]) -> str | None:
    """The bytes of ``pd.DataFrame(rows).to_csv(index=False, lineterminator="\\n")``, written without
    pandas where ``rows`` are simple: every row a dict with the same keys in the same order (strings
    that need no quoting) and each column all integers, all float64s or all plain strings. None
    otherwise (pandas then writes the table); tests/pipeline/test_io_manifest.py holds the two equal."""
    if not rows or not all(type(r) is dict for r in rows):
        return None
    keys = list(rows[0])
    if not keys or not all(type(k) is str and k and _CSV_SPECIAL.isdisjoint(k) for k in keys):
        return None
    if any(list(r) != keys for r in rows):
        return None
    columns = []
    for k in keys:
        cells = _csv_column([r[k] for r in rows])
        if cells is None or (len(keys) == 1 and "" in cells):  # csv quotes a row of one empty cell
            return None
        columns.append(cells)
    return ",".join(keys) + "\n" + "".join(",".join(cells) + "\n" for cells in zip(*columns))


def write_table(path, table) -> None:
    """A tidy CSV: shortest round-trip float repr, no index, ``\\n`` line ends. ``table``: a
    ``pd.DataFrame`` or a list of row dicts (simple rows are written without importing pandas)."""
    text = None if not isinstance(table, list) else plain_csv(table)
    if text is None:
        import pandas as pd

        df = table if isinstance(table, pd.DataFrame) else pd.DataFrame(table)
        text = df.to_csv(index=False, lineterminator="\n")
    write_text(path, text)


def read_table(path) -> pd.DataFrame:
    """A CSV table; one written by :func:`write_table` ends with a line end, so one that does not was cut short."""
    import pandas as pd

    with _reading(path, ValueError, OSError, pd.errors.ParserError):  # EmptyDataError is a ValueError
        with open(path, "rb") as f:
            if f.seek(0, os.SEEK_END) > 0:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    raise ValueError("truncated: its last line has no line end")
        return pd.read_csv(path)


_DTYPES = {
    "float32": "F32",
    "float64": "F64",
    "int64": "I64",
    "int32": "I32",
    "float16": "F16",
    "bfloat16": "BF16",
    "uint8": "U8",
    "bool": "BOOL",
}


def read_blocks(paths, major: str | None = None) -> pd.DataFrame:
    """The tables of one rule's jobs over the seed blocks (``paths`` in block order, so seeds in
    order) as one table, in the order one job over every seed writes it: block after block, or,
    with ``major`` (a column the job loops over outside the seeds, e.g. the fine-tuning arms'
    ``condition``), stably sorted by that column's values in the order they first appear. One
    path: its table as it is."""
    import pandas as pd

    tables = [read_table(p) for p in paths]
    rows = pd.concat(tables, ignore_index=True)
    if major is None or len(tables) == 1:
        return rows
    rank = {value: i for i, value in enumerate(pd.unique(rows[major]))}
    return rows.sort_values(major, key=lambda c: c.map(rank), kind="stable", ignore_index=True)


def write_weights(path, state: dict, metadata: dict[str, str]) -> None:
    """Weights as safetensors: a JSON header and raw little-endian tensors, no pickle.

    The file is laid out here rather than by ``safetensors.save_file``, whose
    header order (metadata included) varies from process to process: keys are
    sorted, tensors are stored in name order, and the header is padded with
    spaces to a multiple of 8 bytes, as the format asks. ``safetensors``' own
    loaders read it.
    """
    header: dict = {"__metadata__": {str(k): str(v) for k, v in sorted(metadata.items())}}
    blobs, offset = [], 0
    for name in sorted(state):
        t = state[name]
        t = np.asarray(t.detach().cpu().numpy() if hasattr(t, "detach") else t)  # 0-d stays 0-d
        data = t.astype(t.dtype.newbyteorder("<"), copy=False).tobytes(order="C")
        header[name] = {
            "dtype": _DTYPES[str(t.dtype)],
            "shape": list(t.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(len(text).to_bytes(8, "little"))
            f.write(text)
            for blob in blobs:
                f.write(blob)


def read_weights(path) -> dict[str, np.ndarray]:
    """A weights file's tensors as NumPy arrays (no PyTorch needed)."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    with _reading(path, SafetensorError, ValueError, OSError):
        return load_file(str(path))


def read_metadata(path) -> dict[str, str]:
    from safetensors import SafetensorError, safe_open

    with _reading(path, SafetensorError, ValueError, OSError):
        with safe_open(str(path), framework="np") as f:
            return dict(f.metadata() or {})


def write_array(path, array: np.ndarray) -> None:
    """A NumPy ``.npy`` file (a fixed header and raw data, no zip, no timestamp)."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            np.save(f, np.require(array, requirements="C") if np.ndim(array) else np.asarray(array), allow_pickle=False)


def read_array(path) -> np.ndarray:
    with _reading(path, ValueError, EOFError, OSError, SyntaxError):  # SyntaxError: a garbled header
        return np.load(path, allow_pickle=False)
