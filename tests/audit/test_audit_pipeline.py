"""The audit against the pipeline: its own trained networks, audited on its test half, give its numbers.

The networks come from the test config's build of the determinism runs (the ``runs``
fixture; no build of its own), loaded as PyTorch modules by
``bnstudy.nets.weights.load_module``. The pipeline computes in fixed-order float32 kernels
and PyTorch in its own order, so their logits differ in the last bits; a label can then
differ only where the two largest logits are within rounding of each other. The exact
b = 2 comparison below finds every probe whose labels differ, checks that the
pipeline's own margin there is below ``NEAR_TIE`` and that there are at most
``MAX_TIES`` such probes in all. The build at the time of writing has two, of 215,520
probes: batch norm b16 seed 0, example 857 with companion 746, whose two largest logits
are 6.0e-6 apart; ghost batch norm b16 seed 1, example 102 with companion 611, 9.2e-6
apart. The two computations' logits differ by up to 9e-4 over these probes (two rows
can have a tiny batch variance, which magnifies rounding; PyTorch's own rounding also
depends on how many rows a forward pass holds), so a margin bound of ``NEAR_TIE`` (1e-4,
the benchmark's) is not loose.
"""

import numpy as np
import pandas as pd
import pytest
import torch

from bnstudy.audit import AuditError, audit, cli
from bnstudy.base import io
from bnstudy.nets import weights
from bnstudy.tools.benchmark import NEAR_TIE
from conftest import hashed_outputs, torch_threads

MAX_TIES = 3
EXACT = [  # (weights file, seed, probe file, network in the probe file, training batch size)
    ("results/runs/dependence/networks.safetensors", s, "results/companions/dependence/probes.csv", "dependence", 64)
    for s in (0, 1)
] + [
    (f"results/runs/grid/{n}/b{b}/seeds0-1.safetensors", s, f"results/companions/grid/{n}_seeds0-1.csv", "grid", b)
    for n, sizes in (("batchnorm", (4, 16)), ("batchrenorm", (4, 16)), ("ghostbatchnorm", (16,)))
    for b in sizes
    for s in (0, 1)
]
DATA = ["results/data/x_test.npy", "results/data/y_test.npy", "results/data/x_train.npy", "results/data/y_train.npy"]
OTHER = [
    "results/companions/examples.csv",
    "results/companions/summary.csv",
    "results/batch_size/remedies/batchnorm_b4_seeds0-1.csv",
    "results/batch_size/remedies/batchnorm_b16_seeds0-1.csv",
    "results/batch_size/remedies/batchnorm_b4_seeds0-1_distances.csv",
    "results/batch_size/remedies/batchnorm_b16_seeds0-1_distances.csv",
    "results/runs/grid/layernorm/b16/seeds0-1.safetensors",
    "results/runs/grid/groupnorm/b16/seeds0-1.safetensors",
    "results/runs/grid/none/b16/seeds0-1.safetensors",
]


@pytest.fixture(scope="module")
def build(runs):
    """The root of the native determinism run, with every file used here in its manifest."""
    files = sorted({e[0] for e in EXACT} | {e[2] for e in EXACT} | set(DATA) | set(OTHER))
    return hashed_outputs(runs, files).parent


@pytest.fixture(autouse=True)
def one_thread():
    with torch_threads(1):
        yield


def data(root):
    return [io.read_array(root / p) for p in DATA]


def network(root, path, seed):
    """The pipeline's network as a module, batch renorm with its final (rmax, dmax) as the probes use them."""
    from bnstudy.nets.recipe import final_limits

    net = weights.load_module(root / path, seed=seed)
    limits = final_limits(io.read_metadata(root / path), len(io.read_array(root / DATA[3])))
    for m in net.modules():
        if hasattr(m, "rmax"):
            m.rmax, m.dmax = limits
    return net


def test_exact_b2_flip_rates_equal_the_pipelines_but_at_logit_ties(build):
    from bnstudy.audit.engine import Engine
    from bnstudy.compiled.probes import Prober
    from bnstudy.studies.companions import draws

    x, y, _, _ = data(build)
    examples = io.read_table(build / "results/companions/examples.csv")["example"].to_numpy()
    ties = []
    for path, seed, probes, name, b in EXACT:
        net = network(build, path, seed)
        r = audit(net, x, y, batch_sizes=(2,), probes=1, exact_sample=len(examples), designs_wanted=("exact",))
        ours = pd.DataFrame(r.per_example).set_index("example")
        assert (np.sort(ours.index) == examples).all()  # the study's stratified choice of examples
        p = io.read_table(build / probes)
        p = p[(p["network"] == name) & (p["seed"] == seed) & (p["train_batch_size"] == b) & (p["design"] == "exact")]
        theirs = p.set_index("example").loc[ours.index]
        assert (ours["probes"] == theirs["batches"]).all() and (ours["probes"] == len(x) - 1).all()
        rate = float((theirs["flips"] / theirs["batches"]).mean())
        differ = ours.index[ours["flips"] != theirs["flips"]]
        if len(differ) == 0:
            assert r.flip(2, "exact")["flip_rate"] == pytest.approx(rate, abs=1e-15)
        # every probe whose label differs: the pipeline's two largest logits are within rounding
        stacked, spec, metas = weights.read(build / path)
        i = [int(m["seed"]) for m in metas].index(seed)
        from bnstudy.nets.recipe import final_limits

        limits = final_limits(metas[i], len(io.read_array(build / DATA[3])))
        prober = Prober({k: v[i : i + 1] for k, v in stacked.items()}, spec, x, limits)
        engine = Engine(net, torch.from_numpy(x))
        for e in differ:
            pairs = draws.exact_pairs(len(x), int(e))
            labels, logits = prober.labels(pairs, logits=True)
            mine = engine.train_labels(pairs)[:, 0]
            for j in np.flatnonzero(labels[0] != mine):
                top = np.sort(logits[0, j])
                ties.append((path, seed, int(e), int(pairs[j, 1]), float(top[-1] - top[-2])))
            assert int((labels[0] != mine).sum()) == abs(int(ours.loc[e, "flips"]) - int(theirs.loc[e, "flips"]))
    assert len(ties) <= MAX_TIES, ties
    assert all(t[-1] < NEAR_TIE for t in ties), ties


def test_random_and_one_class_flip_rates_agree_with_the_pipelines(build):
    """The dependence networks, random companions at every size and own-class companions at b = 16.

    Over the whole test half, the first (published) network's random-companion flip rates lie inside the
    pipeline's bootstrap intervals. On the study's own examples, the audit's probes of them (its own draws
    of companions, every row a probe) agree with the pipeline's counts within 3 standard errors of the
    draws, for both networks. (The pipeline's intervals resample its 20 examples and not the draws of 10
    batches per example; so they need not hold the whole test half's rate: for the second network at
    b = 64 the test half's 2.5% lies below its [3.0%, 6.0%]; and 2 examples per class are not the test
    half's own-class rate, which is higher.)
    """
    x, y, _, _ = data(build)
    examples = io.read_table(build / "results/companions/examples.csv")["example"].to_numpy()
    summary = io.read_table(build / "results/companions/summary.csv")
    probes = io.read_table(build / "results/companions/dependence/probes.csv")
    for seed in (0, 1):
        net = network(build, "results/runs/dependence/networks.safetensors", seed)
        r = audit(net, x, y, batch_sizes=(2, 4, 16, 64), probes=10, exact_sample=0, designs_wanted=("random", "label"))
        per = pd.DataFrame(r.per_example)
        s = summary[(summary["network"] == "dependence") & (summary["seed"] == seed)]
        for design, ours, b in [("random", "random", b) for b in (2, 4, 16, 64)] + [("own_class", "label", 16)]:
            if seed == 0 and design == "random":
                row = s[(s["design"] == design) & (s["batch_size"] == b)].iloc[0]
                lo, hi = row["flip_rate_ci_low"], row["flip_rate_ci_high"]
                assert lo <= r.flip_rate(b) <= hi, (b, r.flip_rate(b), lo, hi)
                assert r.flip(b)["examples"] == len(x) and r.flip(b)["probes"] == 10 * len(x)
            q = per[(per["design"] == ours) & (per["batch_size"] == b)].set_index("example").loc[examples]
            t = probes[(probes["seed"] == seed) & (probes["design"] == design) & (probes["batch_size"] == b)]
            t = t.set_index("example").loc[examples]
            pooled = (q["flips"] + t["flips"]) / (q["probes"] + t["batches"])
            se = np.sqrt((pooled * (1 - pooled) * (1 / q["probes"] + 1 / t["batches"])).sum()) / len(examples)
            gap = (q["flips"] / q["probes"]).mean() - (t["flips"] / t["batches"]).mean()
            assert abs(gap) <= 3 * se, (seed, design, b, gap, se)


def test_recomputed_statistics_give_the_exact_remedys_accuracy_and_distances(build):
    """Grid batch-norm networks: accuracy with statistics recomputed on the training half equals the
    pipeline's exact remedy (d) on the test half; the running statistics' distances from them equal its
    ``ema`` distances (to float32 rounding of the statistics)."""
    x, y, x_train, _ = data(build)
    for b in (4, 16):
        path = f"results/runs/grid/batchnorm/b{b}/seeds0-1.safetensors"
        acc = io.read_table(build / f"results/batch_size/remedies/batchnorm_b{b}_seeds0-1.csv")
        dist = io.read_table(build / f"results/batch_size/remedies/batchnorm_b{b}_seeds0-1_distances.csv")
        for seed in (0, 1):
            r = audit(network(build, path, seed), x, y, stats_x=x_train, batch_sizes=(2,), probes=1, exact_sample=0)
            exact = acc[(acc["seed"] == seed) & (acc["mode"] == "exact")]["accuracy"].item()
            assert r.accuracy["recomputed"] == exact
            assert r.accuracy["statistics_rows"] == len(x_train)
            ema = dist[(dist["seed"] == seed) & (dist["statistics"] == "ema")].set_index("layer")
            layers = [row for row in r.layers if row["batch_statistics"]]
            assert [row["updates"] for row in layers] == [int(acc["updates"].iloc[0])] * 2
            for number, row in enumerate(layers, start=1):
                assert row["mean_distance"] == pytest.approx(ema.loc[number, "mean_distance"], rel=1e-6)
                assert row["var_distance"] == pytest.approx(ema.loc[number, "var_distance"], rel=1e-6)


def test_layer_and_group_norm_networks_flip_exactly_zero_and_no_normaliser_is_refused(build):
    x, y, _, _ = data(build)
    groups = np.arange(len(x)) % 7
    for norm in ("layernorm", "groupnorm"):
        net = network(build, f"results/runs/grid/{norm}/b16/seeds0-1.safetensors", 0)
        r = audit(net, x, y, groups, batch_sizes=(2, 16, 64), probes=3, exact_sample=5, resamples=200)
        assert r.batch_free and {f["design"] for f in r.flips} == {"random", "label", "group", "exact"}
        assert all(f["probes"] > 0 and f["flips"] == 0 for f in r.flips)
    with pytest.raises(AuditError, match="the model has no normalisation layer"):
        audit(network(build, "results/runs/grid/none/b16/seeds0-1.safetensors", 0), x, y)


def test_running_statistics_never_updated_are_flagged_and_recomputing_restores_the_accuracy(build):
    x, y, x_train, _ = data(build)
    path = "results/runs/dependence/networks.safetensors"
    trained = audit(network(build, path, 0), x, y, stats_x=x_train, batch_sizes=(2,), probes=1, exact_sample=0)
    reset = network(build, path, 0)
    for m in reset.modules():
        if isinstance(m, torch.nn.BatchNorm1d):
            m.reset_running_stats()
    r = audit(reset, x, y, stats_x=x_train, batch_sizes=(2,), probes=1, exact_sample=0)
    assert all(row["never_updated"] for row in r.layers)
    assert sum("never updated in 2 of 2 batch-norm layers (1, 4)" in f["text"] for f in r.findings()) == 1
    # mean 0 and variance 1 cost accuracy (95.8% -> 92.5% at the time of writing), significantly
    assert r.accuracy["running"] < trained.accuracy["running"] and r.accuracy["gain_ci_low"] > 0
    # the exact statistics do not depend on the running ones: the remedy gives the trained network's accuracy
    assert r.accuracy["recomputed"] == trained.accuracy["recomputed"]


def test_the_command_reads_the_pipelines_weights_file(build, tmp_path, capsys):
    x, y, _, _ = data(build)
    np.savez(tmp_path / "test.npz", x=x, y=y)
    argv = ["audit", "--model", str(build / "results/runs/grid/batchnorm/b16/seeds0-1.safetensors")]
    argv += ["--data", str(tmp_path / "test.npz"), "--batch-sizes", "2", "--probes", "1", "--quiet"]
    assert cli.main([*argv, "--exact-sample", "0"]) == 2
    assert "holds seeds [0, 1]: say which one" in capsys.readouterr().err
    assert cli.main([*argv, "--seed", "1", "--exact-sample", "0", "--json", str(tmp_path / "a.json")]) == 0
    assert "of labels" in capsys.readouterr().out
