"""The schedules of batch renorm's limits the study trains, in plain Python (the report, the rules and
the cost model read it without loading compiled code).

Every grid network of batch renorm takes the config's ``batchrenorm`` schedule (Ioffe's ramp, its
milestones fractions of the run: :class:`bnstudy.nets.recipe.RenormSchedule`). A variant of the
study's ``schedules`` overrides some of ``rmax``, ``dmax``, ``warmup``, ``rmax_full`` and
``dmax_full``; with ``steps: absolute`` its milestones are numbers of steps (Ioffe's own form:
plain batch norm for 5,000 steps, ``rmax`` 3 at step 40,000, ``dmax`` 5 at 25,000), which a short
run may never reach. Everything else is the grid's recipe, so a variant of seed ``s`` starts from
the grid's initial weights of ``s`` and takes its batch order. :func:`unfinished_sentence` says where
a variant's run ends before its ramp does.
"""

from __future__ import annotations

from bnstudy.nets.recipe import RenormSchedule
from bnstudy.paper import latex

GRID = "grid"  # the grid's own schedule: its networks, not retrained
SETTINGS = ("rmax", "dmax", "warmup", "rmax_full", "dmax_full")
MILESTONES = ("warmup", "rmax_full", "dmax_full")


def settings(variant: dict, grid: dict) -> dict:
    """The variant's full schedule: ``grid`` (the config's ``batchrenorm``) with its overrides, and
    ``steps`` (``fraction`` or ``absolute``)."""
    out = {k: float(variant.get(k, grid[k])) for k in SETTINGS}
    return out | {"steps": variant.get("steps", "fraction")}


def recipe_params(params: dict, variant: dict, grid: dict) -> dict:
    """A grid recipe's params (``renorm_*`` included) with the variant's schedule in place of the grid's;
    ``renorm_steps`` only for an absolute one (a fractional variant's recipe is the grid's form)."""
    s = settings(variant, grid)
    out = dict(params) | {f"renorm_{k}": s[k] for k in SETTINGS}
    if s["steps"] == "absolute":
        out["renorm_steps"] = "absolute"
    return out


def _percent(value: float) -> str:
    """A fraction of the run in percent, with the decimals it has (``2.5\\%``, ``40\\%``)."""
    return f"{round(100 * value, 6):g}\\%"


def _at(value: float, absolute: bool) -> str:
    if absolute:
        return f"step {latex.fmt(int(round(value)))}"
    return f"{_percent(value)} of the steps"


def describe(variant: dict, grid: dict) -> str:
    """The schedule in words (TeX): ``plain batch norm for the first 5{,}000 steps, $r_{\\max}$
    reaching 3 at step 40{,}000 and $d_{\\max}$ 5 at step 25{,}000``; ``no warm-up, $r_{\\max}$ 3 and
    $d_{\\max}$ 5 from the first step``."""
    s = settings(variant, grid)
    absolute, w = s["steps"] == "absolute", s["warmup"]
    if w <= 0:
        warm = "no warm-up"
    elif absolute:
        warm = f"plain batch norm for the first {latex.fmt(int(round(w)))} steps"
    else:
        warm = f"plain batch norm for the first {_percent(w)} of the steps"
    start = "from the first step" if w <= 0 else "from the warm-up's end"
    limits = [(r"$r_{\max}$", s["rmax"], s["rmax_full"]), (r"$d_{\max}$", s["dmax"], s["dmax_full"])]
    sudden = [f"{name} {value:g}" for name, value, full in limits if full <= w]
    ramped = [f"{name} reaching {value:g} at {_at(full, absolute)}" for name, value, full in limits if full > w]
    parts = ([" and ".join(sudden) + f" {start}"] if sudden else []) + ramped
    return f"{warm}, " + " and ".join(parts)


def grid_last(grid: dict, steps: int) -> tuple[float, float]:
    """The grid schedule's ``(rmax, dmax)`` at the last of a run's ``steps`` steps (``grid``: the
    config's ``batchrenorm``)."""
    return RenormSchedule(total_steps=int(steps), **{k: float(grid[k]) for k in SETTINGS}).last


def unfinished_sentence(limits: dict, targets: dict[str, tuple[float, float]], labels: dict[str, str]) -> str:
    """Where a variant's run ends before its ramp does (``limits[(variant, b)]``: ``(rmax, dmax)`` at
    the last step; ``targets[variant]``: its final limits), one clause per such variant: at each of
    those batch sizes, still in the warm-up (the limits of plain batch norm throughout) or the limits
    reached. Empty when every run completes its ramp."""
    clauses = []
    for v, label in labels.items():
        warm, ramp = [], []
        for b in sorted(b for (name, b) in limits if name == v):
            rmax, dmax = limits[(v, b)]
            if (rmax, dmax) == (1.0, 0.0) and targets[v] != (1.0, 0.0):
                warm.append(str(b))
            elif rmax < targets[v][0] or dmax < targets[v][1]:
                ramp.append(f"$r_{{\\max}} = {rmax:.2f}$ and $d_{{\\max}} = {dmax:.2f}$ at batch {b}")
        parts = []
        if warm:
            one = len(warm) == 1
            parts.append(
                f"its run{'' if one else 's'} {latex.at_batches(warm)} end{'s' if one else ''} in the warm-up, "
                "with the limits of plain batch norm throughout"
            )
        if ramp:
            parts.append(f"{'its' if not warm else 'the'} ramp stops short, ending with {latex.words(ramp)}")
        if parts:
            clauses.append(f"with {label}, " + ", and ".join(parts))
    if not clauses:
        return ""
    text = "; ".join(clauses)
    return text[0].upper() + text[1:] + "."
