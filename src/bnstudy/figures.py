"""Byte-stable matplotlib figures in one house style."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from . import normalisers  # noqa: E402
from .io import atomic_path  # noqa: E402

STYLE = {
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "legend.fontsize": 7,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.dpi": 150,
    "savefig.dpi": 150,
    "pdf.fonttype": 42,
    "svg.hashsalt": "bnstudy",
    "path.simplify": False,
}

# One colour, marker and line style per normaliser, the same in every figure
# (bnstudy.normalisers, Okabe-Ito palette); OTHER for any other meaning.
COLOURS = normalisers.colours()
LABELS = normalisers.labels()
MARKERS = normalisers.markers()
LINESTYLES = normalisers.linestyles()
OTHER = normalisers.OTHER_COLOURS


def new(width: float = 3.3, height: float = 2.3, **kwargs):
    plt.rcParams.update(STYLE)
    return plt.subplots(figsize=(width, height), constrained_layout=True, **kwargs)


def save(fig, *paths) -> None:
    """Write ``fig`` to each path (.pdf or .png) with no dates or software stamps."""
    for path in map(str, paths):
        fmt = path.rsplit(".", 1)[-1]
        metadata = {
            "pdf": {"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None},
            "png": {"Software": None},
        }.get(fmt, {})
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt, metadata=metadata)
    plt.close(fig)
