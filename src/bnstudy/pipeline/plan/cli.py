"""The command ``python -m bnstudy.pipeline.plan`` (``make plan``): ``show`` prints what a config
would build and its estimated CPU time and refuses an estimate over the budget; ``calibrate``
refits the cost table from builds."""

from __future__ import annotations

import sys
from pathlib import Path

from bnstudy.pipeline.plan.budget import BUDGET_CPU_S, over_budget
from bnstudy.pipeline.plan.calibration import calibrate, use_measured
from bnstudy.pipeline.plan.costs import ROOT, TABLE, PlanError, read_table
from bnstudy.pipeline.plan.jobs import make_plan
from bnstudy.pipeline.plan.printing import report


def _reference_config():
    from bnstudy.base.config import ConfigError, load_file

    try:
        return load_file(ROOT / "config" / "config.yaml")
    except ConfigError:
        return None


def main(argv=None) -> int:
    """Print what a config would build and its estimated CPU time; refuse an estimate over a CPU-week."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bnstudy.pipeline.plan", description=main.__doc__)
    parser.add_argument("command", nargs="?", choices=["show", "calibrate"], default="show")
    parser.add_argument("--configfile", default="config/config.yaml")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--allow-budget", action="store_true", help="report an estimate over the budget, exit 0")
    parser.add_argument("--table", type=Path, default=TABLE)
    parser.add_argument("--results", type=Path, help="calibrate: the results/ of a build of --configfile")
    parser.add_argument(
        "--build",
        action="append",
        default=[],
        metavar="CONFIGFILE=RESULTS",
        help="calibrate: one more build (repeatable), e.g. config/test.yaml=/tmp/tc/results",
    )
    parser.add_argument("--note", default="", help="calibrate: a line for the table's header (the build's load)")
    parser.add_argument(
        "--measured",
        type=Path,
        metavar="RESULTS",
        help="show: the results/ of a build (finished or partial) of --configfile; its jobs' measured CPU time"
        " replaces their estimates",
    )
    args = parser.parse_args(argv)
    if args.cores < 1:
        parser.error("--cores must be at least 1")

    from bnstudy.base.config import ConfigError, load_file, load_schema, validate

    try:  # the config first, read strictly: one line naming the file and the line or key
        validate(load_file(args.configfile), load_schema(ROOT / "workflow" / "schemas" / "config.schema.yaml"))
    except ConfigError as e:
        message = str(e)
        print(message if str(args.configfile) in message else f"{message} [{args.configfile}]", file=sys.stderr)
        return 1
    try:
        if args.command == "calibrate":
            builds = [(args.configfile, args.results)] if args.results else []
            for spec in args.build:
                configfile, sep, results = spec.partition("=")
                if not sep:
                    parser.error(f"--build {spec}: expected CONFIGFILE=RESULTS")
                builds.append((configfile, Path(results)))
            if not builds:
                parser.error("calibrate needs --results (the build of --configfile) or --build CONFIGFILE=RESULTS")
            table, lines = calibrate(builds, args.table, note=args.note)
            print(f"{args.table}: {len(table) - 1} rows from " + "; ".join(lines))
            return 0
        plan = make_plan(args.configfile, read_table(args.table))
        if args.measured is not None:
            if not args.measured.is_dir():
                raise PlanError(f"plan: --measured {args.measured}: not a directory (a build's results/)")
            if use_measured(plan, args.measured)[0] == 0:
                raise PlanError(f"plan: --measured {args.measured}: no benchmark file of a job of {args.configfile}")
    except PlanError as e:
        print(e, file=sys.stderr)
        return 1
    except Exception as e:  # Snakemake could not build the DAG (a missing input, a workflow error)
        first = (str(e).strip().splitlines() or [""])[0]
        print(f"plan: Snakemake could not plan {args.configfile}: {type(e).__name__}: {first}", file=sys.stderr)
        return 1
    print("\n".join(report(plan, args.cores)))
    refusal = over_budget(plan, _reference_config())
    if refusal and not args.allow_budget:
        print(refusal, file=sys.stderr)
        return 1
    if refusal:
        print(f"  over the budget of {BUDGET_CPU_S:,} CPU s (one CPU-week): allowed by --allow-budget")
    return 0
