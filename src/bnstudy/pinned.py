"""Pinned values: the numbers the paper quotes, guarded against drift.

The paper quotes numbers only through the macros files the pipeline writes
(``results/paper/macros/*.tex``). A pins file records each numeric macro's value
with a tolerance (by default one unit in its last printed digit), one set per
type of machine (keyed by the build's numerics fingerprint, see
:func:`bnstudy.provenance.numerics_fingerprint`); ``check`` recomputes nothing
itself: it reads a finished run's macros and reports every value that moved by
more than its tolerance, by how much.

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


def machine(results: Path) -> dict[str, str | None]:
    """Numerics fingerprint and CPU kernels of the build of ``results`` (its provenance macros)."""
    found = {"fingerprint": None, "cpu_kernels": None}
    path = Path(results) / "paper" / "macros" / "provenance.tex"
    names = {"numericsFingerprint": "fingerprint", "torchCpuKernels": "cpu_kernels"}
    if path.exists():
        for line in path.read_text().splitlines():
            m = _MACRO.match(line)
            if m and m.group(1) in names:
                found[names[m.group(1)]] = re.sub(r"\\texttt\{(.*)\}", r"\1", m.group(2))
    return found


def pins_from(results: Path) -> dict:
    """This build's pin set: its machine and every numeric macro's value and tolerance."""
    values = {k: {"value": v, "tolerance": tol} for k, (v, tol) in sorted(current_values(results).items())}
    return {"machine": machine(results), "values": values}


def set_for(pins: dict, fingerprint: str | None) -> dict | None:
    """The pin set recorded for machines with numerics ``fingerprint``, if any."""
    if fingerprint is None:
        return None
    return next((s for s in pins["sets"] if s["machine"].get("fingerprint") == fingerprint), None)


def verdict(results: Path, pins: dict) -> tuple[str, list[str]]:
    """How ``results`` compare with ``pins``: ``(status, messages)``.

    ``status`` is ``"match"`` (this machine's own set, or failing that any
    recorded set, within tolerance), ``"drift"`` (this machine's own set is
    recorded and values moved) or ``"unknown machine"`` (no set for this
    machine's numerics and none matches; the messages give the drift against the
    nearest set).
    """
    here = machine(results)
    own = set_for(pins, here["fingerprint"])
    if own is not None:
        problems = check(results, own)
        return ("drift" if problems else "match"), problems
    tried = sorted(((check(results, s), s) for s in pins["sets"]), key=lambda t: len(t[0]))
    if tried and not tried[0][0]:
        return "match", []
    nearest = tried[0][0] if tried else []
    head = (f"no pins recorded for this machine's numerics (fingerprint {here['fingerprint']}, "
            f"{here['cpu_kernels']} CPU kernels); against the nearest of {len(pins['sets'])} recorded sets "
            f"{len(nearest)} values moved")
    return "unknown machine", [head] + nearest


HEADER = """\
# Numbers the paper quotes, pinned with a tolerance each (one unit in the last
# printed digit), one set per type of machine: PyTorch's kernels round differently
# on different CPUs (instruction sets, library builds), and training with batch
# statistics amplifies that, so a set is keyed by the numerics fingerprint of the
# build (results/paper/macros/provenance.tex). Written by
# `python -m bnstudy.pinned update`; checked by tests/test_pinned.py and
# `python -m bnstudy.pinned check`.
"""


def update(pins_path: Path, results: Path, config_name: str) -> dict:
    """Add (or replace) the pin set of the machine that built ``results``; keep the others."""
    new = pins_from(results)
    if new["machine"]["fingerprint"] is None:
        raise ValueError(f"{results} records no numerics fingerprint (results/paper/macros/provenance.tex)")
    pins = yaml.safe_load(pins_path.read_text()) if pins_path.exists() else {"config": config_name, "sets": []}
    others = [s for s in pins["sets"] if s["machine"].get("fingerprint") != new["machine"]["fingerprint"]]
    pins = {"config": pins.get("config", config_name), "sets": [new] + others}
    write_text(pins_path, HEADER + yaml.safe_dump(pins, sort_keys=False, width=100))
    return new


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["check", "update"])
    parser.add_argument("--results", default="results")
    parser.add_argument("--pins", default="config/pinned/paper.yaml")
    parser.add_argument("--config-name", default=None, help="recorded in a new pins file by update")
    args = parser.parse_args(argv)
    results, pins_path = Path(args.results), Path(args.pins)
    if args.action == "update":
        new = update(pins_path, results, args.config_name or pins_path.stem)
        print(f"wrote {len(new['values'])} pinned values for numerics {new['machine']['fingerprint']} "
              f"to {pins_path}")
        return 0
    status, messages = verdict(results, yaml.safe_load(pins_path.read_text()))
    for m in messages:
        print(m if status == "unknown machine" and m is messages[0] else "DRIFT: " + m)
    if status == "match":
        print("all pinned values within tolerance")
    return 0 if status == "match" else 1


if __name__ == "__main__":
    sys.exit(main())
