"""The data sets a config can name (``data.name``), and Fashion-MNIST's files.

- ``digits``: scikit-learn's 8x8 handwritten digits (shipped with scikit-learn);
  the default when a config has no ``data`` section.
- ``fashion_mnist``: Fashion-MNIST (Xiao, Rasul & Vollgraf 2017), 60,000 training and
  10,000 test images of 28x28 grey levels in 10 classes, read from the four idx files
  of Debian's package ``dataset-fashion-mnist`` (``/usr/share/datasets/fashion-mnist``).
  Nothing is downloaded: ``make`` installs the package with apt when a config needs it
  (``python -m bnstudy.base.datasets package CONFIG`` names it), and the workflow checks
  each file's sha256 against the config's ``data.sha256`` before any job starts.

The idx format (LeCun's MNIST files): a 4-byte magic number, big-endian, whose first two
bytes are 0, third the element type (``0x08``: unsigned byte) and fourth the number of
dimensions ``d``; then ``d`` big-endian 32-bit sizes; then the elements in C order.
:func:`read_idx` reads it with NumPy alone (a ``.gz`` file through :mod:`gzip`) and
refuses, with one line naming the file, a wrong magic, a header or body cut short and
trailing bytes.

This module imports no compiled code (the Makefile and the Snakefile's start read it).
"""

from __future__ import annotations

import gzip
import hashlib
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DIGITS = "digits"
FASHION = "fashion_mnist"
NAMES = (DIGITS, FASHION)
DEFAULT = {"name": DIGITS}

FASHION_PACKAGE = "dataset-fashion-mnist"  # Debian's package of the four files
FASHION_DIRECTORY = "/usr/share/datasets/fashion-mnist"
# config key (data.sha256.<key>) -> file name in the directory
FASHION_FILES = {
    "train_images": "train-images-idx3-ubyte.gz",
    "train_labels": "train-labels-idx1-ubyte.gz",
    "test_images": "t10k-images-idx3-ubyte.gz",
    "test_labels": "t10k-labels-idx1-ubyte.gz",
}
UBYTE = 0x08  # idx element type: unsigned byte


@dataclass(frozen=True)
class Shape:
    """What the paper and the config checks say of a data set, known without reading it."""

    name: str
    title: str  # how the paper names it
    side: int  # images of side x side pixels
    classes: int
    train_rows: int  # rows of the official training set (digits: all 1,797 rows, split by the config)
    test_rows: int  # rows of the official test set (digits: 0, no official test set)
    class_train_rows: tuple[int, ...]  # per class, in the official training set

    @property
    def features(self) -> int:
        return self.side * self.side


# Rows per class (digits 0-9) of scikit-learn's digits data, 1,797 rows in all.
DIGITS_CLASS_COUNTS = (178, 182, 177, 183, 181, 182, 181, 179, 174, 180)
SHAPES = {
    DIGITS: Shape(DIGITS, "scikit-learn's handwritten digits", 8, 10, 1797, 0, DIGITS_CLASS_COUNTS),
    # 6,000 training and 1,000 test images of each class; the split checks it against the files
    FASHION: Shape(FASHION, "Fashion-MNIST", 28, 10, 60000, 10000, (6000,) * 10),
}
FASHION_TEST_CLASS_ROWS = 1000


class DataSetError(ValueError, SystemExit):
    """A missing, damaged or unexpected data file; the message is one line naming the file.

    A ``SystemExit`` too, so that an uncaught one ends a job with that line and status 1,
    without a traceback (as :class:`bnstudy.base.io.DamagedOutput`)."""

    def __init__(self, message: str):
        ValueError.__init__(self, message)
        self.code = 1

    def __str__(self) -> str:
        return self.args[0]


def data_config(config: dict) -> dict:
    """The config's ``data`` section, or the default (the digits) when it has none."""
    return config.get("data", DEFAULT)


def shape(config: dict) -> Shape:
    return SHAPES[data_config(config)["name"]]


# ---- idx files ------------------------------------------------------------------------
def read_idx(path: str | Path) -> np.ndarray:
    """The array in the idx file at ``path`` (gzip-compressed when its name ends in ``.gz``):
    unsigned bytes, shape from its header. Raises :class:`DataSetError` naming the file."""
    path = Path(path)
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as f:
                raw = f.read()
        else:
            raw = path.read_bytes()
    except FileNotFoundError:
        raise DataSetError(f"bnstudy: {path}: no such file") from None
    except (OSError, EOFError, zlib.error) as e:  # a gzip stream cut short or not gzip at all
        raise DataSetError(f"bnstudy: {path}: not a readable gzip file ({e.__class__.__name__}: {e})") from None
    return parse_idx(raw, str(path))


def parse_idx(raw: bytes, name: str = "idx data") -> np.ndarray:
    """The array in idx bytes ``raw``; ``name`` goes into the one-line error."""
    if len(raw) < 4:
        raise DataSetError(f"bnstudy: {name}: not an idx file ({len(raw)} bytes, shorter than its magic number)")
    zero, kind, dims = int.from_bytes(raw[:2], "big"), raw[2], raw[3]
    if zero != 0 or kind != UBYTE or dims == 0:
        raise DataSetError(
            f"bnstudy: {name}: not an idx file of unsigned bytes (magic number 0x{raw[:4].hex()}, "
            f"expected 0x000008 then the number of dimensions)"
        )
    header = 4 + 4 * dims
    if len(raw) < header:
        raise DataSetError(f"bnstudy: {name}: idx header cut short ({len(raw)} of {header} bytes)")
    sizes = tuple(int(v) for v in np.frombuffer(raw, dtype=">u4", count=dims, offset=4))
    body = int(np.prod(sizes, dtype=np.int64))
    if len(raw) - header != body:
        what = "cut short" if len(raw) - header < body else "followed by extra bytes"
        raise DataSetError(
            f"bnstudy: {name}: idx data {what} ({len(raw) - header} bytes after the header, "
            f"{'x'.join(map(str, sizes))} = {body} expected)"
        )
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(sizes).copy()


def write_idx(path: str | Path, array: np.ndarray) -> None:
    """``array`` (unsigned bytes) as an idx file, gzip-compressed when ``path`` ends in ``.gz``
    (gzip's header time set to 0, so the same array gives the same bytes)."""
    a = np.ascontiguousarray(array, dtype=np.uint8)
    raw = bytes([0, 0, UBYTE, a.ndim]) + np.array(a.shape, ">u4").tobytes() + a.tobytes()
    path = Path(path)
    if path.suffix == ".gz":
        raw = gzip.compress(raw, mtime=0)
    path.write_bytes(raw)


def sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ---- Fashion-MNIST --------------------------------------------------------------------
def fashion_paths(data: dict) -> dict[str, Path]:
    """The four files (config key -> path) in ``data.directory``."""
    return {key: Path(data["directory"]) / name for key, name in FASHION_FILES.items()}


def missing_files(data: dict) -> list[Path]:
    """The data set's files that are not there (none for the digits)."""
    if data["name"] != FASHION:
        return []
    return [p for p in fashion_paths(data).values() if not p.is_file()]


def check_files(data: dict) -> None:
    """Every file of the data set is there and has the sha256 the config names; else one line.

    A missing file names the apt command that installs it (for the package's own directory);
    a file with another sha256 names the file and the config key."""
    if data["name"] != FASHION:
        return
    missing = missing_files(data)
    if missing:
        where = (
            f"apt-get install {FASHION_PACKAGE} (Debian; `make CONFIG=...` does it)"
            if Path(data["directory"]) == Path(FASHION_DIRECTORY)
            else f"copy the four files of Debian's {FASHION_PACKAGE} there (or apt-get install {FASHION_PACKAGE} "
            f"and set data.directory: {FASHION_DIRECTORY})"
        )
        raise DataSetError(f"bnstudy: Fashion-MNIST file {missing[0]} is missing: {where}")
    for key, path in fashion_paths(data).items():
        got, want = sha256(path), data["sha256"][key]
        if got != want.lower():
            raise DataSetError(
                f"bnstudy: {path}: sha256 {got[:16]}... is not data.sha256.{key} {want[:16]}... of the config "
                "(a damaged or another file)"
            )


def load_fashion(data: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(x_train, y_train, x_test, y_test)`` of Fashion-MNIST: images as rows of ``28 * 28``
    unsigned bytes (row-major pixels), labels as ``int64``; after :func:`check_files`, and
    checked for shape, label range and class counts (one line naming the file)."""
    check_files(data)
    paths = fashion_paths(data)
    arrays = {key: read_idx(path) for key, path in paths.items()}
    shape = SHAPES[FASHION]
    out = []
    for part, rows, per_class in (
        ("train", shape.train_rows, shape.class_train_rows),
        ("test", shape.test_rows, (FASHION_TEST_CLASS_ROWS,) * shape.classes),
    ):
        images, labels = arrays[f"{part}_images"], arrays[f"{part}_labels"]
        if images.shape != (rows, shape.side, shape.side):
            raise DataSetError(
                f"bnstudy: {paths[f'{part}_images']}: images of shape {images.shape}, "
                f"expected ({rows}, {shape.side}, {shape.side})"
            )
        counts = np.bincount(labels, minlength=shape.classes) if labels.ndim == 1 else None
        if labels.shape != (rows,) or len(counts) != shape.classes or tuple(counts) != per_class:
            raise DataSetError(
                f"bnstudy: {paths[f'{part}_labels']}: labels of shape {labels.shape} are not {rows} labels, "
                f"{per_class[0]} of each of {shape.classes} classes"
            )
        out += [images.reshape(rows, shape.features), labels.astype(np.int64)]
    return tuple(out)


# ---- the command line -----------------------------------------------------------------
def main(argv=None) -> int:
    """``python -m bnstudy.base.datasets package CONFIG...``: the Debian packages the configs' data sets
    need and that are not installed (one per line; nothing for the digits). ``check CONFIG...``:
    every file there with its sha256, or one line naming the file and status 1."""
    import argparse
    import sys

    from bnstudy.base.config import ConfigError, load_file

    parser = argparse.ArgumentParser(prog="python -m bnstudy.base.datasets", description=main.__doc__)
    parser.add_argument("command", choices=["package", "check"])
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args(argv)
    needed = []
    for path in args.files:
        try:
            data = data_config(load_file(path))
        except ConfigError as e:
            print(e, file=sys.stderr)
            return 1
        if args.command == "package":
            if missing_files(data) and Path(data["directory"]) == Path(FASHION_DIRECTORY):
                needed.append(FASHION_PACKAGE)
        else:
            try:
                check_files(data)
            except DataSetError as e:
                print(e, file=sys.stderr)
                return 1
            print(f"{path}: data set {data['name']}: files present, sha256 as configured")
    for name in sorted(set(needed)):
        print(name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
