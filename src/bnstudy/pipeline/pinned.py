"""Pinned values: the numbers the paper quotes, guarded against drift.

The paper quotes numbers only through the macros files the pipeline writes
(``results/paper/macros/*.tex``). A pins file records each numeric macro's value
with a tolerance (by default one unit in its last printed digit): one set of
values, the same on every machine (the computations run in a fixed order, so a
config gives the same bytes everywhere). ``check`` recomputes nothing itself: it
reads a finished run's macros and reports every value that moved by more than
its tolerance, by how much, strictly.

    python -m bnstudy.pipeline.pinned check  --results results --pins config/pinned/paper.yaml
    python -m bnstudy.pipeline.pinned update --results results --pins config/pinned/paper.yaml

``update`` is for deliberate changes of the science: review its diff like code.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import yaml

from bnstudy.base.io import write_text

# Macros that describe the build, not a result.
UNPINNED_FILES = {"provenance.tex"}
_MACRO = re.compile(r"^\\newcommand\{\\([A-Za-z]+)\}\{(.*)\}$")
_NUMBER = re.compile(r"^-?\d[\d{},]*(\.\d+)?(\\%)?$")


def parse_number(text: str) -> tuple[float, float] | None:
    """``'45.3\\%'`` -> (0.453, 0.001): value and one unit of its last digit; None if not a number.
    ``none`` is exactly zero, with no tolerance: a count of zero as running text writes it
    (:func:`bnstudy.paper.latex.count`), or a share or variance component that is zero, not rounded to it
    (one unit of a word would be the whole range of a share: a pin that could not fail)."""
    text = text.strip().replace("$", "")
    if text == "none":
        return 0.0, 0.0
    if not _NUMBER.match(text):
        return None
    percent = text.endswith("\\%")
    digits = text.removesuffix("\\%").replace("{,}", "").replace(",", "")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    scale = 0.01 if percent else 1.0
    return float(digits) * scale, 10.0**-decimals * scale


def macro_definitions(path) -> dict[str, str]:
    """Each ``\\newcommand{\\name}{body}`` line of a macros file the pipeline wrote: name -> body."""
    return {m.group(1): m.group(2) for m in map(_MACRO.match, Path(path).read_text().splitlines()) if m}


def read_macros(results: Path) -> dict[str, str]:
    macros = {}
    for path in sorted((Path(results) / "paper" / "macros").glob("*.tex")):
        if path.name in UNPINNED_FILES:
            continue
        macros |= {f"{path.stem}:{name}": body for name, body in macro_definitions(path).items()}
    return macros


def current_values(results: Path) -> dict[str, tuple[float, float]]:
    out = {}
    for key, text in read_macros(results).items():
        parsed = parse_number(text)
        if parsed is not None:
            out[key] = parsed
    return out


def check(results: Path, pins: dict) -> list[str]:
    """One message per pinned value (``pins``: ``{key: {value, tolerance}}``) missing or moved beyond its tolerance."""
    now = current_values(results)
    problems = []
    for key, pin in sorted(pins.items()):
        if key not in now:
            problems.append(f"{key}: pinned at {pin['value']:g} but no longer written by the pipeline")
            continue
        value = now[key][0]
        delta = value - pin["value"]
        if abs(delta) > pin["tolerance"] + 1e-12:
            problems.append(
                f"{key}: moved from {pin['value']:g} to {value:g} (by {delta:+g}; tolerance {pin['tolerance']:g})"
            )
    return problems


def pins_from(results: Path) -> dict:
    """This build's pins: every numeric macro's value and tolerance."""
    return {k: {"value": v, "tolerance": tol} for k, (v, tol) in sorted(current_values(results).items())}


class PinsError(Exception):
    """A pins file or a build that cannot be compared: one line saying why and what to do."""


def load(pins_path: Path) -> dict:
    """The pinned values of a pins file (``{key: {value, tolerance}}``)."""
    pins_path = Path(pins_path)
    if not pins_path.is_file():
        raise PinsError(
            f"no pins file {pins_path}: after a build, create it with "
            f"python -m bnstudy.pipeline.pinned update --results results --pins {pins_path}"
        )
    pins = yaml.safe_load(pins_path.read_text())
    if not isinstance(pins, dict) or not isinstance(pins.get("values"), dict):
        old = isinstance(pins, dict) and "sets" in pins
        raise PinsError(
            f"{pins_path} holds no 'values' mapping"
            + (" (it has per-machine 'sets', the old format)" if old else "")
            + f": rewrite it with python -m bnstudy.pipeline.pinned update --results results --pins {pins_path}"
        )
    return pins["values"]


HEADER = """\
# Numbers the paper quotes, pinned with a tolerance each (one unit in the last
# printed digit): one set of values, the same on every machine. Written by
# `python -m bnstudy.pipeline.pinned update`; checked by tests/pipeline/test_pinned.py and
# `python -m bnstudy.pipeline.pinned check`.
"""


def update(pins_path: Path, results: Path, config_name: str) -> dict:
    """Rewrite the pins file with the values of the build in ``results``; return them."""
    values = pins_from(results)
    if not values:
        raise PinsError(f"{results} has no numeric macros (results/paper/macros/*.tex): build first")
    old = yaml.safe_load(pins_path.read_text()) if pins_path.is_file() else None
    config = old.get("config", config_name) if isinstance(old, dict) else config_name
    write_text(pins_path, HEADER + yaml.safe_dump({"config": config, "values": values}, sort_keys=False, width=100))
    return values


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["check", "update"])
    parser.add_argument("--results", default="results")
    parser.add_argument("--pins", default="config/pinned/paper.yaml")
    parser.add_argument("--config-name", default=None, help="recorded in a new pins file by update")
    args = parser.parse_args(argv)
    results, pins_path = Path(args.results), Path(args.pins)
    try:
        if args.action == "update":
            values = update(pins_path, results, args.config_name or pins_path.stem)
            print(f"wrote {len(values)} pinned values to {pins_path}")
            return 0
        pins = load(pins_path)
        if not (results / "paper" / "macros").is_dir():
            raise PinsError(f"no macros in {results / 'paper' / 'macros'}: build first")
    except PinsError as e:
        print(e)
        return 2
    problems = check(results, pins)
    for p in problems:
        print("DRIFT: " + p)
    if not problems:
        print(f"all {len(pins)} pinned values within tolerance")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
