"""Content hashes of pipeline outputs: the study's lock file.

A manifest is a tidy table, one row per output file: ``rule``, ``wildcards``,
``path``, ``bytes``, ``sha256``. Two runs agree exactly when their manifests are
byte-identical; :func:`first_difference` says where they first part, in the order
the rows were written (the pipeline writes them in DAG order), and
:func:`value_diff` which values of a JSON or CSV summary file moved.

The expected result of a config is its manifest, kept in ``config/expected/``
(logs, benchmarks and runtimes are never hashed)::

    python -m bnstudy.manifest verify   --expected config/expected/paper.manifest.tsv --results results
    python -m bnstudy.manifest expected --results results --out config/expected/paper.manifest.tsv

``verify`` prints ``identical: N files`` or the first differing rule (DAG order)
with its files and, when the config's pins file exists, the pinned values that
moved (``python -m bnstudy.pinned check``); exit status 1 on any difference.
``expected`` writes (or refreshes) the expected manifest from a finished build:
for deliberate changes of the science; review its diff like code.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

COLUMNS = ["rule", "wildcards", "path", "bytes", "sha256"]
SUMMARY_SUFFIXES = {".json", ".csv", ".tsv"}  # files whose values value_diff can list
MAX_LINES = 20


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


def difference_rule(diff: pd.DataFrame) -> str:
    """The rule of a non-empty :func:`first_difference`."""
    return diff["rule_a"].where(diff["rule_a"].notna(), diff["rule_b"]).iloc[0]


def describe_files(diff: pd.DataFrame, a: str = "a", b: str = "b") -> list[str]:
    """One line per file of a :func:`first_difference`: path and how it differs."""
    lines = []
    for row in diff.to_dict("records"):
        if row["_merge"] == "left_only":
            how = f"only in {a}"
        elif row["_merge"] == "right_only":
            how = f"only in {b}"
        else:
            how = f"sha256 {row['sha256_a'][:12]} -> {row['sha256_b'][:12]}, bytes {row['bytes_a']} -> {row['bytes_b']}"
        lines.append(f"  {row['path']}: {how}")
    return lines


# ---- values that moved ------------------------------------------------------


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


def summary_value_diffs(diff: pd.DataFrame, root_a: Path, root_b: Path, limit: int = MAX_LINES) -> list[str]:
    """:func:`value_diff` of every JSON/CSV file of a :func:`first_difference` present in both
    runs (paths relative to the run directories ``root_a`` and ``root_b``), at most ``limit`` lines."""
    lines: list[str] = []
    for path in diff["path"]:
        fa, fb = Path(root_a) / path, Path(root_b) / path
        if Path(path).suffix in SUMMARY_SUFFIXES and fa.is_file() and fb.is_file():
            try:
                lines += value_diff(fa, fb, label=path, limit=limit)
            except (ValueError, UnicodeDecodeError, csv.Error) as e:
                lines.append(f"{path}: values not comparable ({e})")
        if len(lines) >= limit:
            return lines[:limit]
    return lines


# ---- the expected result of a config ----------------------------------------


def pins_for(expected: Path) -> Path:
    """The pins file of an expected manifest: ``config/expected/X.manifest.tsv`` -> ``config/pinned/X.yaml``."""
    name = expected.name.split(".manifest")[0]
    return expected.resolve().parent.parent / "pinned" / f"{name}.yaml"


def pinned_drift(results: Path, pins: Path, limit: int = MAX_LINES) -> list[str]:
    """The lines of ``python -m bnstudy.pinned check`` for ``results`` (at most ``limit``)."""
    env = os.environ | {
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")])
        )
    }
    out = subprocess.run(
        [sys.executable, "-m", "bnstudy.pinned", "check", "--results", str(results), "--pins", str(pins)],
        capture_output=True,
        text=True,
        env=env,
    )
    lines = (out.stdout + out.stderr).splitlines()
    if len(lines) > limit:
        lines = lines[: limit - 1] + [f"... and {len(lines) - limit + 1} more lines"]
    return lines


def verify(expected, results, pins=None) -> tuple[bool, list[str]]:
    """Compare the build in ``results`` (its ``manifest.tsv``) with an expected manifest.

    Returns ``(identical, lines)``: ``'identical: N files'``, or the first rule in
    DAG order whose files differ, the files, and (if ``pins``, by default the
    config's pins file, exists) the pinned values that moved.
    """
    expected, results = Path(expected), Path(results)
    built = results / "manifest.tsv"
    if not expected.is_file():
        return False, [
            f"no expected manifest {expected}: after a build, create it with "
            f"python -m bnstudy.manifest expected --results {results} --out {expected}"
        ]
    if not built.is_file():
        return False, [f"no manifest {built}: the build did not finish (snakemake writes it last)"]
    exp, got = read(expected), read(built)
    if expected.read_bytes() == built.read_bytes():
        return True, [f"identical: {len(got)} files"]
    diff = first_difference(exp, got)
    if diff.empty:
        return False, [
            f"same {len(got)} files and hashes as {expected}, but the rows differ "
            "(their order, rule or wildcards: the workflow changed)"
        ]
    lines = [
        f"DIFFERENT from {expected}: first rule in DAG order: {difference_rule(diff)}; {len(diff)} of its files differ"
    ]
    lines += describe_files(diff, "expected", "build")
    pins = Path(pins) if pins is not None else pins_for(expected)
    if pins.is_file() and (results / "paper" / "macros").is_dir():
        lines.append(f"pinned values ({pins}):")
        lines += ["  " + line for line in pinned_drift(results, pins)]
    return False, lines


def write_expected(results, out) -> tuple[int, list[str]]:
    """Copy ``results/manifest.tsv`` to ``out``; return its row count and what changed vs the old ``out``."""
    from .io import write_text

    results, out = Path(results), Path(out)
    built = results / "manifest.tsv"
    if not built.is_file():
        raise FileNotFoundError(f"no manifest {built}: build first (snakemake --cores N)")
    table = read(built)
    changes = []
    if out.is_file():
        old = read(out)
        merged = old.merge(table, on="path", how="outer", indicator=True)
        moved = merged[(merged["_merge"] != "both") | (merged["sha256_x"] != merged["sha256_y"])]
        rules = moved["rule_x"].where(moved["rule_x"].notna(), moved["rule_y"])
        changes = [f"  {rule}: {n} files" for rule, n in rules.value_counts(sort=False).items()]
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text(out, built.read_text())
    return len(table), changes


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="action", required=True)
    v = sub.add_parser("verify", help="compare a build's manifest with the expected one")
    v.add_argument("--expected", default="config/expected/paper.manifest.tsv")
    v.add_argument("--results", default="results")
    v.add_argument("--pins", default=None, help="pins file (default: config/pinned/<name>.yaml beside the expected)")
    e = sub.add_parser("expected", help="write the expected manifest from a finished build")
    e.add_argument("--results", default="results")
    e.add_argument("--out", default="config/expected/paper.manifest.tsv")
    args = parser.parse_args(argv)
    if args.action == "verify":
        identical, lines = verify(args.expected, args.results, args.pins)
        print("\n".join(lines))
        return 0 if identical else 1
    try:
        rows, changes = write_expected(args.results, args.out)
    except FileNotFoundError as err:
        print(err)
        return 1
    print(f"wrote {rows} files to {args.out}" + ("; changed since the previous version:" if changes else ""))
    for line in changes:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
