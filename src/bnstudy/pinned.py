"""Pinned values: the numbers the paper quotes, guarded against drift.

The paper quotes numbers only through the macros files the pipeline writes
(``results/paper/macros/*.tex``). A pins file records each numeric macro's value
with a tolerance (by default one unit in its last printed digit); ``check``
recomputes nothing itself: it reads a finished run's macros and reports every
value that moved by more than its tolerance, by how much.

    python -m bnstudy.pinned check  --results results --pins config/pinned/paper.yaml
    python -m bnstudy.pinned update --results results --pins config/pinned/paper.yaml

``update`` is for deliberate changes of the science: review its diff like code.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import yaml

from .io import write_text

# Macros that describe the build, not a result.
UNPINNED_FILES = {"provenance.tex"}
_MACRO = re.compile(r"^\\newcommand\{\\([A-Za-z]+)\}\{(.*)\}$")
_NUMBER = re.compile(r"^-?\d[\d{},]*(\.\d+)?(\\%)?$")


def parse_number(text: str) -> tuple[float, float] | None:
    """``'45.3\\%'`` -> (0.453, 0.001): value and one unit of its last digit; None if not a number."""
    text = text.strip().replace("$", "")
    if not _NUMBER.match(text):
        return None
    percent = text.endswith("\\%")
    digits = text.removesuffix("\\%").replace("{,}", "").replace(",", "")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    scale = 0.01 if percent else 1.0
    return float(digits) * scale, 10.0 ** -decimals * scale


def read_macros(results: Path) -> dict[str, str]:
    macros = {}
    for path in sorted((Path(results) / "paper" / "macros").glob("*.tex")):
        if path.name in UNPINNED_FILES:
            continue
        for line in path.read_text().splitlines():
            m = _MACRO.match(line)
            if m:
                macros[f"{path.stem}:{m.group(1)}"] = m.group(2)
    return macros


def current_values(results: Path) -> dict[str, tuple[float, float]]:
    out = {}
    for key, text in read_macros(results).items():
        parsed = parse_number(text)
        if parsed is not None:
            out[key] = parsed
    return out


def check(results: Path, pins: dict) -> list[str]:
    """One message per pinned value that is missing or moved beyond its tolerance."""
    now = current_values(results)
    problems = []
    for key, pin in sorted(pins["values"].items()):
        if key not in now:
            problems.append(f"{key}: pinned at {pin['value']:g} but no longer written by the pipeline")
            continue
        value = now[key][0]
        delta = value - pin["value"]
        if abs(delta) > pin["tolerance"] + 1e-12:
            problems.append(f"{key}: moved from {pin['value']:g} to {value:g} "
                            f"(by {delta:+g}; tolerance {pin['tolerance']:g})")
    return problems


def pins_from(results: Path, config_name: str) -> dict:
    values = {k: {"value": v, "tolerance": tol} for k, (v, tol) in sorted(current_values(results).items())}
    return {"config": config_name, "values": values}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["check", "update"])
    parser.add_argument("--results", default="results")
    parser.add_argument("--pins", default="config/pinned/paper.yaml")
    parser.add_argument("--config-name", default=None, help="recorded in the pins file by update")
    args = parser.parse_args(argv)
    results, pins_path = Path(args.results), Path(args.pins)
    if args.action == "update":
        name = args.config_name or pins_path.stem
        header = ("# Numbers the paper quotes, pinned with a tolerance each (one unit in the last\n"
                  "# printed digit). Written by `python -m bnstudy.pinned update`; checked by\n"
                  "# tests/test_pinned.py and `python -m bnstudy.pinned check`.\n")
        write_text(pins_path, header + yaml.safe_dump(pins_from(results, name), sort_keys=True))
        print(f"wrote {len(pins_from(results, name)['values'])} pinned values to {pins_path}")
        return 0
    pins = yaml.safe_load(pins_path.read_text())
    problems = check(results, pins)
    for p in problems:
        print("DRIFT: " + p)
    if not problems:
        print(f"all {len(pins['values'])} pinned values within tolerance")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
