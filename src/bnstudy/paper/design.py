"""The study design as LaTeX macros: the Methods section quotes the config, never types it."""

from __future__ import annotations

import math

from bnstudy.base import normalisers
from bnstudy.nets.recipe import batch_sizes_per_epoch
from bnstudy.paper.latex import fmt, words
from bnstudy.paper.seeds import follow_up_macros, seed_list


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


def digits_shape() -> tuple[int, int, int]:
    """``(side, features, classes)`` of scikit-learn's handwritten digits: images of
    ``side x side`` pixels, one feature per pixel, and the number of distinct labels."""
    from sklearn.datasets import load_digits  # here: only the design macros need it

    digits = load_digits()
    side = int(digits.images.shape[1])
    if digits.images.shape[1:] != (side, side):
        raise ValueError(f"the digits are not square: {digits.images.shape[1:]}")
    return side, int(digits.data.shape[1]), int(len(set(digits.target.tolist())))


def data_macros(config: dict, train_rows: int, test_rows: int) -> dict[str, str]:
    """What the paper says of the data set: its name (``dataSetName``), its shape, and the
    sentence on how it is split (``dataSplitSentence``)."""
    from bnstudy.base.datasets import DIGITS, SHAPES, data_config

    data = data_config(config)
    if data["name"] == DIGITS:
        side, features, classes = digits_shape()
        split = (
            f"are split into stratified halves of {fmt(train_rows)} training and {fmt(test_rows)} test rows "
            f"with a seed of their own ({config['split']['seed']}). Every feature is standardised with the "
            "training half's mean and standard deviation; a constant feature keeps unit scale."
        )
        rows = train_rows + test_rows
    else:
        shape = SHAPES[data["name"]]
        side, features, classes = shape.side, shape.features, shape.classes
        whole = test_rows == shape.test_rows
        test = (
            f"keeps its official test set of {fmt(test_rows)} images"
            if whole
            else f"keeps a stratified subset of {fmt(test_rows)} of its {fmt(shape.test_rows)} official test images as "
            "the test set"
        )
        split = (
            f"{test}; of its {fmt(shape.train_rows)} "
            f"training images, a stratified subset of {fmt(train_rows)} is the training set and "
            f"{fmt(data['validation_size'])} others, stratified too, a validation split, "
            f"{'both' if whole else 'all three'} drawn with a "
            f"seed of their own ({config['split']['seed']}). Every pixel is standardised with one mean and "
            "one standard deviation over all pixels of the training set."
        )
        rows = shape.train_rows + shape.test_rows
    # the paper calls the digits' parts halves (main.tex's defaults); another data set names its own,
    # and \dataNotDigits tells the sections that what they say of the digits' ceiling does not hold
    parts = (
        {}
        if data["name"] == DIGITS
        else {"trainPart": "training set", "trainPartAdj": "training-set", "testPart": "test set", "dataNotDigits": "1"}
    )
    return parts | {
        "dataSetName": SHAPES[data["name"]].title,
        "dataSplitSentence": split,
        "dataSide": str(side),
        "dataFeatures": str(features),
        "dataClasses": str(classes),
        "dataRows": fmt(rows),
    }


def network_macros(config: dict, side: int) -> dict[str, str]:
    """The network every study trains: the MLP's hidden widths (``hiddenOne``, ``hiddenTwo``) and
    group norm's features per group (``groupWidth``); or, for ``network.kind: conv``, ``netConv``
    (the sections test ``\\ifdefined\\netConv``), its convolutions in prose (``netLayerList``,
    ``netDepth``) and the positions the pool averages (``netPositions``), on images of ``side``
    pixels a side. The normalisers' names follow the network (``normaliserList``)."""
    net = config["network"]
    names = config["normalisers"]
    if net.get("kind", "mlp") != "conv":
        return {
            "hiddenOne": str(net["hidden"][0]),
            "hiddenTwo": str(net["hidden"][1]),
            "groupWidth": str(net["hidden"][0] // net["groups"]),
            "normaliserList": normalisers.methods_list(names),
        }
    from bnstudy.base.convlayers import parse
    from bnstudy.paper.network_prose import layer_list, number_word

    blocks = parse(net, side)
    return {
        "netConv": "conv",
        "netLayerList": layer_list(blocks),
        "netDepth": number_word(len(blocks)),
        "netKernel": "3",  # every convolution's (bnstudy.compiled.conv)
        "netPositions": str(blocks[-1].positions),
        "normaliserList": normalisers.methods_list(names, conv=True),
    }


def design_macros(config: dict, train_rows: int, test_rows: int) -> dict[str, str]:
    net, grid, dep, rn = config["network"], config["grid"], config["dependence"], config["batchrenorm"]
    data = data_macros(config, train_rows, test_rows)
    return (
        data
        | network_macros(config, int(data["dataSide"]))
        | {
            "computeThreads": str(config["compute_threads"]),
            "trainRows": fmt(train_rows),
            "testRows": fmt(test_rows),
            "splitSeed": str(config["split"]["seed"]),
            "netEps": _sci(net["eps"]),
            "netMomentum": f"{net['momentum']:g}",
            "netKeep": f"{1 - net['momentum']:g}",
            "netGroups": str(net["groups"]),
            "renormWarmup": _pct(rn["warmup"]),
            "renormRmax": f"{rn['rmax']:g}",
            "renormDmax": f"{rn['dmax']:g}",
            "renormRmaxFull": _pct(rn["rmax_full"]),
            "renormDmaxFull": _pct(rn["dmax_full"]),
            "gridRuns": str(len(config["normalisers"]) * len(grid["batch_sizes"]) * len(grid["seeds"])),
            "gridNormalisers": str(len(config["normalisers"])),
            "gridBatchSizes": str(len(grid["batch_sizes"])),
            "gridBatchSizeList": _list(grid["batch_sizes"]),
            "gridSeedList": seed_list(grid["seeds"]),
            "gridLr": f"{grid['lr']:g}",
            "gridEpochs": str(grid["epochs"]),
            "depMomentum": f"{dep['sgd_momentum']:g}",
            "depLr": f"{dep['lr']:g}",
            "depBatchSize": str(dep["batch_size"]),
            "depEpochs": str(dep["epochs"]),
            "depSeed": str(dep["seeds"][0]),
            "depSeedList": _list(dep["seeds"]),
            "depNetworks": str(len(dep["seeds"])),
            "lastBatchRule": last_batch_sentence(grid["last_batch"], grid["batch_sizes"], train_rows, net["eps"]),
            "remedyPooledRows": pooled_rows_sentence(grid["last_batch"], grid["batch_sizes"], train_rows),
            "lastBatchDeparture": last_batch_departure(grid["last_batch"], dep["last_batch"]),
            "twoRowRootEps": f"{math.sqrt(net['eps']):.2g}",
            "twoRowAtRootEps": f"{two_row_output(math.sqrt(net['eps']), net['eps']):.3f}",
            "evalConfidencePct": _pct(config["batch_size_eval"]["confidence"]),
            "compConfidencePct": _pct(config["companions"]["confidence"]),
        }
        | lr_schedule_macros(grid, dep)
        | lr_by_batch_macros(grid)
        | epochs_by_batch_macros(grid)
        | grid_kind_macros(config["normalisers"])
        | published_task_macros(config)
        | first_sweep_macros(config)
        | ({"ghostInGrid": "1"} if "ghostbatchnorm" in config["normalisers"] else {})
        | finetune_rate_macros(config)
        | follow_up_macros(config)
    )


def _rate_role(rate: float, grid_rate: float) -> str:
    """A fine-tuning rate in words, against the grid's."""
    if math.isclose(rate, grid_rate, rel_tol=1e-9):
        return "the grid's rate itself"
    if math.isclose(rate, grid_rate / 10, rel_tol=1e-9):
        return "a tenth of the grid's rate, as fine-tuning usually lowers it,"  # the aside closed by a comma
    if rate < grid_rate:
        return f"the grid's rate divided by {grid_rate / rate:.3g}"
    return f"{rate / grid_rate:.3g} times the grid's rate"


def finetune_rate_macros(config: dict) -> dict[str, str]:
    """The fine-tuning rates against the grid's (``tuneRateRoles``, in increasing order, as the section
    lists them), and ``tuneRateTwoIsGrid`` where the larger is the grid's own rate: the section calls it
    so only then (the larger rate otherwise)."""
    tune = config.get("finetune")
    if not tune:
        return {}
    lrs, grid_rate = sorted(tune["lrs"]), config["grid"]["lr"]
    m = {"tuneRateRoles": _list([_rate_role(r, grid_rate) for r in lrs]).rstrip(",")}
    if math.isclose(lrs[-1], grid_rate, rel_tol=1e-9):
        m["tuneRateTwoIsGrid"] = "1"
    return m


def first_sweep_macros(config: dict) -> dict[str, str]:
    """``lrFirstSweepSentence`` where the config records that its learning-rate sweep extended a first
    one (``lr_sweep.first_sweep_choice``): which rates were added, and why. A config without the key
    says nothing of the sweep's history, which the paper cannot know."""
    from bnstudy.paper.latex import power_of_ten

    lr = config.get("lr_sweep") or {}
    choice = lr.get("first_sweep_choice")
    if choice is None:
        return {}
    added = sorted(v for v in lr["lrs"] if v < choice)
    rates = _list([power_of_ten(v) for v in added])
    subject = f"The lowest rate, {rates}, was" if len(added) == 1 else f"The rates {rates} were"
    return {
        "lrFirstSweepSentence": (
            f"{subject} added after a first sweep from {power_of_ten(choice)} upwards, in which batch "
            f"normalisation at batch {min(config['grid']['batch_sizes'])} chose {power_of_ten(choice)}, the "
            "lowest rate then swept."
        )
    }


# The task of the published episode whose values studies 1 and 2 set beside ours (../shared/STUDY.md):
# the multilayer perceptron 64-128-128-10 on scikit-learn's 8x8 digits.
PUBLISHED_TASK = "a multilayer perceptron on scikit-learn's $8\\times8$ digits"


def published_task_macros(config: dict) -> dict[str, str]:
    """``publishedOtherTask`` (the published task in words) where this build's task is another one (a
    data set other than the digits, or a network other than the MLP): the sections then print the
    published values for reference only and test nothing of ours against them (``\\ifdefined``).
    The digits' MLP gets no macro, so its paper stays as it was."""
    from bnstudy.base.datasets import DIGITS, data_config

    if data_config(config)["name"] == DIGITS and config["network"].get("kind", "mlp") == "mlp":
        return {}
    return {"publishedOtherTask": PUBLISHED_TASK}


def lr_by_batch_macros(grid: dict) -> dict[str, str]:
    """``gridLrByBatch``, the rates the grid trains at some batch sizes instead of ``grid.lr`` (a clause
    the Methods print where defined), and ``gridLrList``, every batch size's rate; only for a grid that
    sets ``lr_by_batch_size`` (without it nothing changes)."""
    rows = sorted((int(r["batch_size"]), r["lr"]) for r in grid.get("lr_by_batch_size", []))
    if not rows:
        return {}
    others = [b for b in grid["batch_sizes"] if b not in dict(rows)]
    clause = words([f"{lr:g} at batch {b}" for b, lr in rows])
    at_others = f" at batch{'es' if len(others) > 1 else ''} {words([str(b) for b in others])}" if others else ""
    rates = dict(rows)
    return {
        "gridLrByBatch": f"{at_others}, {clause}",
        "gridLrList": words([f"{rates.get(b, grid['lr']):g} at batch {b}" for b in sorted(grid["batch_sizes"])]),
    }


def epochs_by_batch_macros(grid: dict) -> dict[str, str]:
    """``gridEpochsByBatch``, the epochs the grid trains at some batch sizes instead of ``grid.epochs``
    (a parenthesis printed after the grid's epochs where defined); only for a grid that sets
    ``epochs_by_batch_size`` (without it nothing changes)."""
    rows = sorted((int(r["batch_size"]), int(r["epochs"])) for r in grid.get("epochs_by_batch_size", []))
    if not rows:
        return {}
    return {"gridEpochsByBatch": f" ({words([f'{e} at batch {b}' for b, e in rows])})"}


CONTROL_WORDS = {"none": "without a normaliser", "layernorm": "layer", "groupnorm": "group", "rmsnorm": "RMS"}


def grid_kind_macros(names) -> dict[str, str]:
    """Which normalisers the grid holds, for the sentences about one of them (``gridHasRenorm``,
    ``gridHasLayernorm``, ``gridHasGroupnorm``, each defined only where the grid has it), and
    ``gridControlWords``, the grid's networks without batch statistics in words (``without a
    normaliser or with layer or group normalisation``), and ``gridNoStatsSentence``, defined where the
    grid has a normaliser without batch statistics, which says its two modes are one function."""
    m = {}
    for name, macro in (
        ("batchrenorm", "gridHasRenorm"),
        ("layernorm", "gridHasLayernorm"),
        ("groupnorm", "gridHasGroupnorm"),
    ):
        if name in names:
            m[macro] = "1"
    controls = [n for n in names if not normalisers.get(n).batch_statistics]
    kinds = [CONTROL_WORDS.get(n, normalisers.get(n).label) for n in controls if n != "none"]
    parts = (["without a normaliser"] if "none" in controls else []) + (
        [f"with {', '.join(kinds[:-1]) + ' or ' if len(kinds) > 1 else ''}{kinds[-1]} normalisation"] if kinds else []
    )
    m["gridControlWords"] = " or ".join(parts) if parts else "without batch statistics"
    if kinds:
        one = len(kinds) == 1
        names = kinds[0] if one else f"{', '.join(kinds[:-1])} and {kinds[-1]}"
        m["gridNoStatsSentence"] = (
            f"{names[0].upper()}{names[1:]} normalisation {'has' if one else 'have'} no batch statistics, "
            f"so {'its' if one else 'their'} two modes coincide by construction"
        )
    return m


def lr_schedule_macros(grid: dict, dep: dict) -> dict[str, str]:
    """``gridLrSchedule`` and ``depLrSchedule``, a clause on the learning rate's decay, only for a block
    that sets one (the Methods print them where defined; without a decay nothing changes)."""
    clause = {
        "linear": ", decayed linearly over the epochs, scaled by $(E-e)/E$ in epoch $e$ of $E$ counted from 0",
    }
    m = {}
    for name, block in (("gridLrSchedule", grid), ("depLrSchedule", dep)):
        decay = block.get("lr_schedule", "constant")
        if decay != "constant":
            m[name] = clause[decay]
    return m


def two_row_output(delta: float, eps: float) -> float:
    """|output| of batch norm (gamma 1, beta 0) for a unit in a batch of two rows whose inputs
    differ by ``2 * delta``: ``delta / sqrt(delta**2 + eps)``; 1 only in the limit eps -> 0."""
    return delta / math.sqrt(delta * delta + eps)


def pooled_rows_sentence(policy: str, batch_sizes, rows: int) -> str:
    """How many training rows one pass cut like a training epoch sees, by batch size, in words."""
    seen: dict[int, list[int]] = {}
    for b in batch_sizes:
        seen.setdefault(sum(batch_sizes_per_epoch(rows, b, policy)), []).append(b)
    parts = [
        f"{fmt(n)} of the {fmt(rows)} rows at batch{'es' if len(bs) > 1 else ''} {_list(bs)}"
        for n, bs in sorted(seen.items(), reverse=True)
    ]
    return "it pools " + _list(parts)


DROP_LAST = (
    "unless given \\texttt{drop\\_last=True} (\\texttt{drop\\_last} defaults to \\texttt{False})"
    "~\\cite{torchdataloader}"
)


def last_batch_departure(grid_policy: str, dependence_policy: str) -> str:
    """What is known of the published protocol's last, smaller batch, in words: the published text
    does not say how it was handled; PyTorch's ``DataLoader`` keeps it unless ``drop_last=True``
    (the default is ``False``), so dropping it may depart from the published protocol. Names the
    parts (grid, dependence network) that drop it."""
    dropped = [
        name
        for name, policy in (("the grid", grid_policy), ("the dependence network", dependence_policy))
        if policy == "drop"
    ]
    head = "The published text does not say how an epoch's last, smaller batch was handled"
    if not dropped:
        return f"{head}; we keep it, as PyTorch's \\texttt{{DataLoader}} does {DROP_LAST}."
    return (
        f"{head}; PyTorch's \\texttt{{DataLoader}} keeps it {DROP_LAST}, so dropping it for {_list(dropped)} "
        "may depart from the published protocol."
    )


def leftover_counts(rows: int, batch_sizes) -> str:
    """The rows an epoch of ``rows`` leaves over at each batch size, grouped by count:
    ``none at batch 2, 2 rows at batches 4, 8 and 16``; ``none at any batch size``."""
    by_count: dict[int, list[int]] = {}
    for b in sorted(batch_sizes):
        by_count.setdefault(rows % b, []).append(b)
    if set(by_count) == {0}:
        return "none at any batch size"
    parts = []
    for count, sizes in sorted(by_count.items()):
        what = "none" if count == 0 else f"{count} row{'s' if count > 1 else ''}"
        parts.append(f"{what} at batch{'es' if len(sizes) > 1 else ''} {words([str(b) for b in sizes])}")
    return ", ".join(parts)


def last_batch_sentence(policy: str, batch_sizes, rows: int, eps: float = 1e-5) -> str:
    """How the rows left over after cutting an epoch into batches are treated, in words."""
    counts = leftover_counts(rows, batch_sizes)
    if policy == "drop":
        return (
            f"The rows left over when an epoch is cut into batches ({counts}) are dropped: "
            "a batch of two rows maps every unit to "
            "$\\pm\\delta/\\sqrt{\\delta^2+\\epsilon}$, $\\delta$ half the difference of its two "
            "inputs (close to $\\pm1$ unless $\\delta$ is of the order of $\\sqrt\\epsilon$: "
            f"$\\pm{two_row_output(math.sqrt(eps), eps):.3f}$ at $\\delta=\\sqrt\\epsilon={math.sqrt(eps):.2g}$), and "
            "would enter the running averages with the weight of a full batch; a single row "
            "cannot be normalised with batch statistics at all."
        )
    return (
        f"The rows left over when an epoch is cut into batches ({counts}) form a final, smaller batch, "
        "except a single row, which cannot be "
        "normalised with batch statistics and is dropped."
    )
