"""Content hashes of pipeline outputs: the study's lock file.

A manifest is a tidy table, one row per output file: ``rule``, ``wildcards``,
``path``, ``bytes``, ``sha256``. Two runs agree exactly when their manifests are
byte-identical; :func:`first_difference` says where they first part, in the order
the rows were written (the pipeline writes them in DAG order).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd

COLUMNS = ["rule", "wildcards", "path", "bytes", "sha256"]


def sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def build(entries: list[tuple[str, str, str]]) -> pd.DataFrame:
    """Hash every ``(rule, wildcards, path)``; rows keep the given order."""
    rows = [
        {"rule": r, "wildcards": w, "path": p, "bytes": Path(p).stat().st_size, "sha256": sha256(p)}
        for r, w, p in entries
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


def write(path, table: pd.DataFrame) -> None:
    from .io import write_text

    write_text(path, table.to_csv(sep="\t", index=False, lineterminator="\n"))


def read(path) -> pd.DataFrame:
    return pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)


def first_difference(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Rows of the first rule (in ``a``'s order) whose outputs differ between ``a`` and ``b``.

    Empty when the two manifests agree on every path and hash.
    """
    merged = a.merge(b, on="path", how="outer", suffixes=("_a", "_b"), indicator=True)
    differs = merged[(merged["_merge"] != "both") | (merged["sha256_a"] != merged["sha256_b"])]
    if differs.empty:
        return differs
    order = {p: i for i, p in enumerate(a["path"])}
    differs = differs.assign(_order=differs["path"].map(order).fillna(len(order)))
    differs = differs.sort_values("_order", kind="stable")
    first = differs.iloc[0]
    rule = first["rule_a"] if isinstance(first["rule_a"], str) else first["rule_b"]
    rule_col = differs["rule_a"].where(differs["rule_a"].notna(), differs["rule_b"])
    return differs[rule_col == rule].drop(columns="_order")
