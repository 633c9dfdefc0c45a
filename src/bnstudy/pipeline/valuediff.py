"""Which values moved between two summary files: JSON leaf by leaf, CSV/TSV tables cell by cell.

:func:`value_diff` lists them as ``'path: key: a -> b'`` lines, at most :data:`MAX_LINES`; the
manifest's comparison of two runs (:func:`bnstudy.pipeline.manifest.summary_value_diffs`) calls it for
every summary file of their first difference.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

MAX_LINES = 20


def _flatten(obj, prefix: str = "") -> dict[str, str]:
    """JSON leaves by key path (``a.b[2].c``), each as its JSON text."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            out |= _flatten(v, f"{prefix}.{k}" if prefix else str(k))
        return out or {prefix: "{}"}
    if isinstance(obj, list):
        out = {}
        for i, v in enumerate(obj):
            out |= _flatten(v, f"{prefix}[{i}]")
        return out or {prefix: "[]"}
    return {prefix: json.dumps(obj)}


def _json_changes(a: Path, b: Path) -> list[tuple[str, str, str]]:
    fa, fb = _flatten(json.loads(a.read_text())), _flatten(json.loads(b.read_text()))
    keys = list(fa) + [k for k in fb if k not in fa]
    return [(k, fa.get(k, "(missing)"), fb.get(k, "(missing)")) for k in keys if fa.get(k) != fb.get(k)]


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_label(values: list[str]) -> bool:
    """A column that names rows rather than measures: text or integers, no fractions."""
    return all(v.lstrip("-").isdigit() or not _is_float(v) for v in values)


def _table_changes(a: Path, b: Path) -> list[tuple[str, str, str]]:
    delimiter = "\t" if a.suffix == ".tsv" else ","
    with open(a, newline="") as f:
        ra = list(csv.reader(f, delimiter=delimiter))
    with open(b, newline="") as f:
        rb = list(csv.reader(f, delimiter=delimiter))
    if not ra or not rb:
        return [("rows", str(len(ra)), str(len(rb)))] if len(ra) != len(rb) else []
    head_a, head_b, ra, rb = ra[0], rb[0], ra[1:], rb[1:]
    changes = []
    if head_a != head_b:
        changes.append(("columns", ",".join(head_a), ",".join(head_b)))
    if len(ra) != len(rb):
        changes.append(("rows", str(len(ra)), str(len(rb))))
    labels = [j for j, name in enumerate(head_a) if name in head_b and _is_label([r[j] for r in ra if j < len(r)])][:3]
    for i, (x, y) in enumerate(zip(ra, rb)):
        row_a, row_b = dict(zip(head_a, x)), dict(zip(head_b, y))
        same = [head_a[j] for j in labels if row_a.get(head_a[j]) == row_b.get(head_a[j])]
        where = f"row {i + 1}" + (" (" + ", ".join(f"{n}={row_a[n]}" for n in same) + ")" if same else "")
        for name in head_a:
            if name in row_b and row_a.get(name) != row_b.get(name):
                changes.append((f"{where}: {name}", row_a.get(name, "(missing)"), row_b[name]))
    return changes


def value_diff(a, b, label: str | None = None, limit: int = MAX_LINES) -> list[str]:
    """Values that moved between two JSON (or CSV/TSV) files, as ``'path: key: a -> b'`` lines.

    JSON files are compared leaf by leaf (keys as ``a.b[2].c``), tables cell by
    cell (rows named by their label columns, those with text or integers, where
    they agree). At most ``limit`` lines, the last saying how many more moved;
    empty if the two files hold the same values.
    """
    a, b = Path(a), Path(b)
    label = label or str(a)
    changes = _json_changes(a, b) if a.suffix == ".json" else _table_changes(a, b)
    lines = [f"{label}: {key}: {x} -> {y}" for key, x, y in changes]
    if len(lines) > limit:
        lines = lines[: limit - 1] + [f"{label}: ... and {len(lines) - limit + 1} more values moved"]
    return lines
