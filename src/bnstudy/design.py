"""The study design as LaTeX macros: the Methods section quotes the config, never types it."""

from __future__ import annotations

from .latex import fmt


def _list(values) -> str:
    values = [str(v) for v in values]
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " and " + values[-1]


def _sci(x: float) -> str:
    """1e-05 -> ``10^{-5}``, 0.003 -> ``3\\cdot10^{-3}`` (for math mode)."""
    mantissa, exponent = f"{x:e}".split("e")
    mantissa = f"{float(mantissa):g}"
    power = f"10^{{{int(exponent)}}}"
    return power if mantissa == "1" else f"{mantissa}\\cdot{power}"


def _pct(x: float) -> str:
    return f"{100 * x:g}\\%"


def design_macros(config: dict, train_rows: int, test_rows: int) -> dict[str, str]:
    net, grid, dep, rn = config["network"], config["grid"], config["dependence"], config["batchrenorm"]
    return {
        "computeThreads": str(config["compute_threads"]),
        "dataRows": fmt(train_rows + test_rows),
        "trainRows": fmt(train_rows),
        "testRows": fmt(test_rows),
        "splitSeed": str(config["split"]["seed"]),
        "hiddenOne": str(net["hidden"][0]),
        "hiddenTwo": str(net["hidden"][1]),
        "netEps": _sci(net["eps"]),
        "netMomentum": f"{net['momentum']:g}",
        "netKeep": f"{1 - net['momentum']:g}",
        "netGroups": str(net["groups"]),
        "groupWidth": str(net["hidden"][0] // net["groups"]),
        "renormWarmup": _pct(rn["warmup"]),
        "renormRmax": f"{rn['rmax']:g}",
        "renormDmax": f"{rn['dmax']:g}",
        "renormRmaxFull": _pct(rn["rmax_full"]),
        "renormDmaxFull": _pct(rn["dmax_full"]),
        "gridRuns": str(len(config["normalisers"]) * len(grid["batch_sizes"]) * len(grid["seeds"])),
        "gridNormalisers": str(len(config["normalisers"])),
        "gridBatchSizes": str(len(grid["batch_sizes"])),
        "gridBatchSizeList": _list(grid["batch_sizes"]),
        "gridSeedList": _list(grid["seeds"]),
        "gridLr": f"{grid['lr']:g}",
        "gridEpochs": str(grid["epochs"]),
        "depMomentum": f"{dep['sgd_momentum']:g}",
        "depLr": f"{dep['lr']:g}",
        "depBatchSize": str(dep["batch_size"]),
        "depEpochs": str(dep["epochs"]),
        "depSeed": str(dep["seed"]),
        "lastBatchRule": last_batch_sentence(grid["last_batch"], grid["batch_sizes"], train_rows),
    }


def last_batch_sentence(policy: str, batch_sizes, rows: int) -> str:
    """How the rows left over after cutting an epoch into batches are treated, in words."""
    left = sorted({rows % b for b in batch_sizes} - {0})
    counts = _list(left) if left else "no"
    if policy == "drop":
        return (f"The rows left over when an epoch is cut into batches ({counts} rows at these "
                "batch sizes) are dropped: a batch of two rows maps every unit to $\\pm1$ and "
                "would enter the running averages with the weight of a full batch; a single row "
                "cannot be normalised with batch statistics at all.")
    return (f"The rows left over when an epoch is cut into batches ({counts} rows at these "
            "batch sizes) form a final, smaller batch, except a single row, which cannot be "
            "normalised with batch statistics and is dropped.")
