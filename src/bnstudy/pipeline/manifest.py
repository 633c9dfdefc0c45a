"""Content hashes of pipeline outputs: the study's lock file.

A manifest is a tidy table, one row per output file: ``rule``, ``wildcards``,
``path``, ``bytes``, ``sha256``. Two runs agree exactly when their manifests are
byte-identical; :func:`first_difference` says where they first part, in the order
the rows were written (the pipeline writes them in DAG order), and
:func:`summary_value_diffs` which values of its JSON or CSV summary files moved
(:mod:`bnstudy.pipeline.valuediff`).

The expected result of a config is its manifest, kept in ``config/expected/``
(logs, benchmarks and runtimes are never hashed)::

    python -m bnstudy.pipeline.manifest verify   --expected config/expected/paper.manifest.tsv --results results
    python -m bnstudy.pipeline.manifest expected --results results --out config/expected/paper.manifest.tsv

``verify`` prints ``identical: N files`` or the first differing rule (DAG order)
with its files and, when the config's pins file exists, the pinned values that
moved (``python -m bnstudy.pipeline.pinned check``); exit status 1 on any difference.
``expected`` writes (or refreshes) the expected manifest from a finished build:
for deliberate changes of the science; review its diff like code. ``repair`` re-creates a
build's missing or damaged files (:mod:`bnstudy.pipeline.repair`); where a config's expected
manifest and pins lie: :mod:`bnstudy.pipeline.expected`.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import os
import sys
from pathlib import Path

import pandas as pd

from bnstudy.pipeline.expected import expected_for_config, other_builds, pinned_drift, pins_for, repair_command
from bnstudy.pipeline.valuediff import MAX_LINES, value_diff

COLUMNS = ["rule", "wildcards", "path", "bytes", "sha256"]
SUMMARY_SUFFIXES = {".json", ".csv", ".tsv"}  # files whose values valuediff.value_diff can list


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
    from bnstudy.base.io import write_text

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


# ---- values that moved (each file's: bnstudy.pipeline.valuediff) ------------------------


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


# ---- what is on disk ----------------------------------------------------------

MISSING = "missing"
CHANGED = "changed after its build"
DIFFERENT = "different from the expected bytes"
UNEXPECTED = "not in the expected manifest"
MANIFEST = "results/manifest.tsv"  # the build's own manifest, relative to the workflow directory


def read_usable(path: Path) -> tuple[pd.DataFrame | None, str | None]:
    """A manifest file's table, or ``None`` and why it cannot be used."""
    if not path.is_file():
        return None, MISSING
    try:
        table = read(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        return None, f"unreadable ({str(e).splitlines()[0] if str(e) else type(e).__name__})"
    if list(table.columns) != COLUMNS:
        return None, "unreadable (not a manifest: its columns are " + ",".join(map(str, table.columns)) + ")"
    return table, None


def disk_hashes(paths, root) -> dict[str, tuple[int, str] | None]:
    """``(bytes, sha256)`` of each of ``paths`` (relative to ``root``) as it is on disk; ``None`` if missing."""
    from concurrent.futures import ThreadPoolExecutor

    def one(path):
        full = Path(root) / path
        try:
            return full.stat().st_size, sha256(full)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None

    paths = list(dict.fromkeys(paths))
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:  # hashlib releases the GIL
        return dict(zip(paths, pool.map(one, paths)))


def check_files(expected, results) -> tuple[pd.DataFrame, list[str]]:
    """Hash every output the build's manifest (``results/manifest.tsv``) or the expected one lists, as
    it is on disk now, and compare it with both.

    Returns ``(problems, notes)``: one row per bad file (``rule``, ``wildcards``, ``path``,
    ``problem``, ``detail``), in DAG order, with ``problem`` one of :data:`MISSING`, :data:`CHANGED`
    (its bytes are not those its build recorded), :data:`DIFFERENT` (the build recorded other bytes
    than the expected ones) or :data:`UNEXPECTED`; the build's manifest itself is a row when it is
    missing, unreadable or not the expected bytes while every file is. ``notes``: lines about
    manifests that could not be compared with (a missing expected manifest).
    """
    expected, results = Path(expected), Path(results)
    built_path = results / "manifest.tsv"
    exp, exp_why = read_usable(expected)
    built, built_why = read_usable(built_path)
    notes = []
    if exp is None:
        notes.append(
            f"no expected manifest {expected} ({exp_why}): after a build, create it with "
            f"python -m bnstudy.pipeline.manifest expected --results {results} --out {expected}"
        )
    tables = [t for t in (exp, built) if t is not None]
    rows = pd.concat(tables).drop_duplicates("path", keep="first") if tables else pd.DataFrame(columns=COLUMNS)
    disk = disk_hashes(rows["path"], results.parent)
    problems, manifest_stale = _file_problems(rows, disk, built, exp)
    own = _manifest_problem(built, built_why, manifest_stale, exp is not None and not problems, (built_path, expected))
    columns = ["rule", "wildcards", "path", "problem", "detail"]
    return pd.DataFrame(problems + own, columns=columns), notes


def _sums(table, column: str) -> dict:
    """``{path: column}`` of a manifest table (empty for a missing one)."""
    return dict(zip(table["path"], table[column])) if table is not None else {}


def _file_problems(rows, disk, built, exp) -> tuple[list[dict], list[str]]:
    """One problem row per bad file of ``rows`` (hashed on disk: ``disk``), and the files whose bytes
    are the expected ones but not those the build's manifest records."""
    want_built, want_exp = _sums(built, "sha256"), _sums(exp, "sha256")
    size_built, size_exp = _sums(built, "bytes"), _sums(exp, "bytes")
    problems, manifest_stale = [], []
    for row in rows.to_dict("records"):
        path, here = row["path"], disk[row["path"]]
        b, e = want_built.get(path), want_exp.get(path)
        if here is None:
            problem, detail = MISSING, ""
        elif b is not None and here[1] != b and e is not None and here[1] == e:
            manifest_stale.append(path)
            continue
        elif b is not None and here[1] != b:
            problem, detail = CHANGED, f"bytes {size_built[path]} -> {here[0]}, sha256 {b[:12]} -> {here[1][:12]}"
        elif e is not None and here[1] != e:
            problem, detail = DIFFERENT, f"bytes {size_exp[path]} -> {here[0]}, sha256 {e[:12]} -> {here[1][:12]}"
        elif exp is not None and e is None:
            problem, detail = UNEXPECTED, ""
        else:
            continue
        problems.append(
            {"rule": row["rule"], "wildcards": row["wildcards"], "path": path, "problem": problem, "detail": detail}
        )
    return problems, manifest_stale


def _manifest_problem(built, built_why, manifest_stale, files_expected: bool, paths) -> list[dict]:
    """The build's manifest itself as a problem row, when it is missing or unreadable, records other
    bytes than the files', or (every file as expected: ``files_expected``) is not the expected
    manifest's bytes; ``paths`` is ``(the build's manifest, the expected one)``."""
    built_path, expected = paths
    row = {"rule": "manifest", "wildcards": "", "path": MANIFEST}
    if built is None:
        return [row | {"problem": built_why, "detail": "the build did not finish, or its manifest was lost"}]
    if manifest_stale:
        detail = f"it records other bytes than the files' (first: {manifest_stale[0]})"
        return [row | {"problem": CHANGED, "detail": detail}]
    if files_expected and built_path.read_bytes() != expected.read_bytes():
        detail = (
            "every file is as expected, but the rows differ (their order, rule or "
            "wildcards: the workflow changed, or the manifest was edited)"
        )
        return [row | {"problem": DIFFERENT, "detail": detail}]
    return []


def describe_problems(problems: pd.DataFrame) -> list[str]:
    """The bad files by rule (in DAG order): a line per rule, then a line per file."""
    lines = []
    for rule, files in problems.groupby("rule", sort=False):
        lines.append(f"{rule}: {len(files)} file{'s' if len(files) > 1 else ''}")
        for row in files.to_dict("records"):
            wildcards = f" [{row['wildcards']}]" if row["wildcards"] else ""
            detail = f" ({row['detail']})" if row["detail"] else ""
            lines.append(f"  {row['path']}{wildcards}: {row['problem']}{detail}")
    return lines


def verify(expected, results, pins=None) -> tuple[bool, list[str]]:
    """Check the build in ``results`` file by file: hash what is on disk and compare it with the
    build's own manifest (``results/manifest.tsv``) and with the expected manifest.

    Returns ``(identical, lines)``: ``'identical: N files'``, or a headline, the bad files by
    rule in DAG order (:func:`check_files`), the command that repairs them and (if ``pins``, by
    default the config's pins file, exists) the pinned values that moved.
    """
    expected, results = Path(expected), Path(results)
    problems, notes = check_files(expected, results)
    if problems.empty and not notes:
        return True, [f"identical: {len(read(expected))} files"]
    if problems.empty:
        return False, [*notes, f"every file is as {results / 'manifest.tsv'} records it"]
    counts = problems["problem"].value_counts(sort=False)
    lines = [
        *notes,
        f"NOT IDENTICAL to {expected}: "
        + ", ".join(f"{n} {how}" for how, n in counts.items())
        + f" (in {problems['rule'].nunique()} rule{'s' if problems['rule'].nunique() > 1 else ''}, DAG order):",
    ]
    lines += describe_problems(problems)
    repairable = problems["problem"] != UNEXPECTED
    if repairable.any():
        lines.append(
            f"repair: {repair_command(expected)} re-creates "
            + ("these files" if repairable.all() else "the missing, changed and different files")
            + " (docs/verify.md)"
        )
    pins = Path(pins) if pins is not None else pins_for(expected)
    if (problems["problem"] == DIFFERENT).any() and pins.is_file() and (results / "paper" / "macros").is_dir():
        lines.append(f"pinned values ({pins}):")
        lines += ["  " + line for line in pinned_drift(results, pins)]
    return False, lines


# ---- another copy of the workflow (the repair itself: bnstudy.pipeline.repair) ----------------


def workflow_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's environment) for a process of another copy of the workflow:
    without a ``NUMBA_CACHE_DIR`` that ``bnstudy`` chose (``<cache>/bnstudy/numba-<digest>``), which
    names this copy's kernel modules as they were when it was imported, so that the other copy's
    package chooses its own. A directory the user chose is kept."""
    from bnstudy import _numba_cache_dir

    env = dict(os.environ if env is None else env)
    chosen = env.get("NUMBA_CACHE_DIR")
    ours = Path(_numba_cache_dir())
    if chosen and Path(chosen).parent == ours.parent and Path(chosen).name.startswith("numba-"):
        del env["NUMBA_CACHE_DIR"]
    return env


def write_expected(results, out) -> tuple[int, list[str]]:
    """Copy ``results/manifest.tsv`` to ``out``; return its row count and what changed vs the old ``out``."""
    from bnstudy.base.io import write_text

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
    v = sub.add_parser("verify", help="hash the build's files; compare them with its manifest and the expected one")
    v.add_argument("--expected", default=None, help="expected manifest (default: the config's)")
    v.add_argument("--configfile", default="config/config.yaml", help="the build's config (names its expected)")
    v.add_argument("--results", default="results")
    v.add_argument("--pins", default=None, help="pins file (default: config/pinned/<name>.yaml beside the expected)")
    r = sub.add_parser("repair", help="re-create the missing or damaged outputs of a build, then verify it")
    r.add_argument("--configfile", default="config/config.yaml")
    r.add_argument("--expected", default=None, help="expected manifest (default: the config's)")
    r.add_argument("--results", default="results")
    r.add_argument("--cores", type=int, default=2)
    e = sub.add_parser("expected", help="write the expected manifest from a finished build")
    e.add_argument("--results", default="results")
    e.add_argument("--out", default="config/expected/paper.manifest.tsv")
    args = parser.parse_args(argv)
    if args.action == "verify":
        expected = args.expected or expected_for_config(args.configfile)
        identical, lines = verify(expected, args.results, args.pins)
        print("\n".join(lines))
        for directory, theirs in other_builds(args.configfile):
            ok, more = verify(theirs, Path(directory) / "results")
            print(f"{directory}: " + "\n".join(more))
            identical = identical and ok
        return 0 if identical else 1
    if args.action == "repair":
        from bnstudy.pipeline.repair import repair  # which reads the build with this module

        return repair(args.configfile, args.expected, args.results, args.cores)
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
