"""The audit (bnstudy.audit) on small networks built here: probes, designs, statistics, errors, outputs.

Fast: every network is a few hundred parameters, every data set a few hundred rows.
The pipeline's own networks are audited in tests/audit/test_audit_pipeline.py, a ResNet-18
and the command in processes in tests/audit/test_audit_slow.py.
"""

import json
import math

import numpy as np
import pytest
import torch

from bnstudy.audit import AuditError, audit, cli, designs, loading
from bnstudy.audit.engine import Engine, naive_labels
from bnstudy.audit.layers import find_normalisers, probe_copy, set_group
from bnstudy.audit.report import figure_png, html_report, to_dict
from bnstudy.nets.norms import BatchRenorm1d, GhostBatchNorm1d
from conftest import torch_threads


@pytest.fixture(autouse=True)
def one_thread():
    with torch_threads(1):
        yield


def warmed(net, x, steps=4, batch=16):
    """``net`` after a few training-mode passes (running statistics away from 0 and 1), in eval mode."""
    g = torch.Generator().manual_seed(1)
    net.train()
    with torch.no_grad():
        for _ in range(steps):
            net(x[torch.randperm(len(x), generator=g)[:batch]])
    return net.eval()


def mlp(norm, features=6, hidden=12, classes=4, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(features, hidden), norm(hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, classes)
    )


def cnn(norm2d, dims=2, seed=0):
    torch.manual_seed(seed)
    conv = {1: torch.nn.Conv1d, 2: torch.nn.Conv2d, 3: torch.nn.Conv3d}[dims]
    pool = {1: torch.nn.AdaptiveAvgPool1d, 2: torch.nn.AdaptiveAvgPool2d, 3: torch.nn.AdaptiveAvgPool3d}[dims]
    return torch.nn.Sequential(
        conv(1, 4, 3, padding=1), norm2d(4), torch.nn.ReLU(), pool(1), torch.nn.Flatten(), torch.nn.Linear(4, 3)
    )


def data(n=120, shape=(6,), classes=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, *shape, generator=g)
    y = torch.randint(0, classes, (n,), generator=g).numpy()
    return x, y


def renorm(f):
    layer = BatchRenorm1d(f)
    layer.rmax, layer.dmax = 1.5, 0.5
    return layer


NETWORKS = {
    "BatchNorm1d": lambda: (mlp(torch.nn.BatchNorm1d), data()),
    "BatchNorm1d (N, C, L)": lambda: (cnn(torch.nn.BatchNorm1d, 1), data(shape=(1, 5), classes=3)),
    "BatchNorm2d": lambda: (cnn(torch.nn.BatchNorm2d, 2), data(shape=(1, 5, 5), classes=3)),
    "BatchNorm3d": lambda: (cnn(torch.nn.BatchNorm3d, 3), data(shape=(1, 3, 3, 3), classes=3)),
    "SyncBatchNorm": lambda: (cnn(torch.nn.SyncBatchNorm, 2), data(shape=(1, 5, 5), classes=3)),
    "BatchRenorm1d": lambda: (mlp(renorm), data()),
    "GhostBatchNorm1d": lambda: (mlp(lambda f: GhostBatchNorm1d(f, 4)), data()),
}


@pytest.mark.parametrize("name", list(NETWORKS))
@pytest.mark.parametrize("b", [2, 5, 12])
def test_probe_batches_in_one_pass_give_the_labels_of_one_pass_per_batch(name, b):
    """Every row of many probe batches in one forward pass gets the label the plain module in
    training mode gives it in its own batch, one batch per pass; logits agree to float rounding."""
    net, (x, _) = NETWORKS[name]()
    net = warmed(net, x)
    batches, _ = designs.rounds(np.arange(len(x)), b, 2, designs.generator(0, "random", b))
    engine = Engine(net, x, chunk_rows=64)
    fast = engine.train_labels(batches)
    slow = naive_labels(net, x, batches, first_only=False)
    # logits of both paths: the plain module in training mode, batch by batch, against the copy
    copy_net, wrappers = probe_copy(net)
    set_group(wrappers, b)
    with torch.no_grad():
        z_fast = copy_net(x[torch.as_tensor(batches.reshape(-1))]).reshape(len(batches), b, -1)
    plain = warmed(NETWORKS[name]()[0], x)
    for n in find_normalisers(plain):
        n.module.train()
    if name == "BatchRenorm1d":
        for n in find_normalisers(plain):
            n.module.rmax, n.module.dmax = 1.5, 0.5
    saved = {k: v.clone() for k, v in plain.named_buffers()}
    z_slow = []
    with torch.no_grad():
        for bt in batches[:3]:  # training mode moves the running statistics: restored after each batch
            z_slow.append(plain(x[torch.as_tensor(bt)]))
            plain.load_state_dict(saved, strict=False)
    z_slow = torch.stack(z_slow)
    assert torch.allclose(z_fast[:3], z_slow, rtol=1e-4, atol=1e-5)
    top = torch.sort(z_fast, dim=-1).values
    near_tie = (top[..., -1] - top[..., -2] < 1e-4).numpy()
    assert ((fast != slow) & ~near_tie).sum() == 0
    assert (fast == slow).mean() > 0.99


def test_the_audited_module_is_left_as_it_was():
    net, (x, y) = NETWORKS["BatchRenorm1d"]()
    net = warmed(net, x)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    audit(net, x, y, batch_sizes=(2, 8), probes=2, exact_sample=4, resamples=200)
    after = net.state_dict()
    assert not net.training and all(not m.training for m in net.modules())
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert (net[1].rmax, net[1].dmax) == (1.5, 0.5)


@pytest.mark.parametrize("n, b", [(40, 2), (41, 4), (37, 16), (16, 16)])
def test_every_example_gets_exactly_k_probes_with_distinct_companions(n, b):
    pool = np.arange(100, 100 + n)
    batches, counted = designs.rounds(pool, b, 3, designs.generator(0, "random", b))
    assert batches.shape[1] == b and counted.shape == batches.shape
    assert all(len(set(bt)) == b for bt in batches)  # no example is its own companion
    assert set(batches.reshape(-1)) <= set(pool)
    counts = np.bincount(batches[counted] - 100, minlength=n)
    assert (counts == 3).all()
    assert counted.sum() == 3 * n and (~counted).sum() == 3 * ((-n) % b)


def test_random_companions_are_uniform_over_the_other_rows():
    """Each row's companions over many rounds: every other row about equally often (chi-square)."""
    from scipy import stats

    n, b, k = 13, 4, 800
    batches, counted = designs.rounds(np.arange(n), b, k, designs.generator(1, "random", b))
    probes_of_0 = ((batches == 0) & counted).any(axis=1)  # the batches in which row 0 is a probe
    assert probes_of_0.sum() == k
    seen = np.bincount(batches[probes_of_0].reshape(-1), minlength=n)
    assert seen[0] == k  # row 0 itself, once per batch: never its own companion
    assert seen[1:].sum() == k * (b - 1)
    assert stats.chisquare(seen[1:]).pvalue > 1e-3


def test_exact_pairs_pair_each_sampled_example_with_every_other_row_once():
    pool = np.arange(30)
    sample = np.array([3, 7, 20])
    pairs, counted = designs.exact_pairs(sample, pool)
    assert len(pairs) == designs.exact_pair_count(3, 30) == 3 * 29 - 3
    assert len({frozenset(p) for p in pairs.tolist()}) == len(pairs)
    for e in sample:
        mine = pairs[counted & (pairs == e)]
        assert len(mine) == 29
        partners = {int(p[1 - list(p).index(e)]) for p in pairs if e in p}
        assert partners == set(range(30)) - {int(e)}


def test_exact_design_matches_the_plain_loop_example_by_example():
    net, (x, y) = NETWORKS["BatchNorm1d"]()
    net = warmed(net, x)
    r = audit(net, x, y, batch_sizes=(2,), probes=1, exact_sample=8, resamples=200, designs_wanted=("exact",))
    engine = Engine(net, x)
    inference = engine.inference_labels()
    for row in r.per_example:
        e = row["example"]
        pairs = np.array([[e, j] for j in range(len(x)) if j != e])
        flips = int((naive_labels(net, x, pairs) != inference[e]).sum())
        assert row["probes"] == len(x) - 1 and row["flips"] == flips
    ex = r.flip(2, "exact")
    assert ex["flip_rate"] == pytest.approx(math.fsum(p["flips"] / p["probes"] for p in r.per_example) / 8)


@pytest.mark.parametrize(
    "norm",
    [
        lambda f: torch.nn.GroupNorm(3, f),
        lambda f: torch.nn.LayerNorm(f),
        lambda f: torch.nn.Sequential(
            torch.nn.Unflatten(1, (f // 2, 2)), torch.nn.InstanceNorm1d(f // 2, affine=True), torch.nn.Flatten()
        ),
    ],
    ids=["group", "layer", "instance"],
)
def test_batch_free_normalisers_never_flip(norm):
    net = mlp(norm).eval()
    x, y = data()
    r = audit(net, x, y, groups=np.arange(len(x)) % 3, batch_sizes=(2, 16), probes=3, exact_sample=5, resamples=200)
    assert r.batch_free
    assert {f["design"] for f in r.flips} == {"random", "label", "group", "exact"}
    assert all(f["flips"] == 0 and f["flip_rate"] == 0.0 and f["probes"] > 0 for f in r.flips)
    assert "no label can depend on its companions; measured: 0 of" in r.summary()
    assert r.accuracy["recomputed"] is None


def test_running_statistics_never_updated_are_flagged_and_the_remedy_recomputes_them():
    net, (x, y) = NETWORKS["BatchNorm2d"]()
    x = x * 3 + 2  # data far from mean 0, variance 1
    fresh = net.eval()  # never trained: running mean 0, variance 1, no update
    r = audit(fresh, x, y, batch_sizes=(4,), probes=2, exact_sample=0, resamples=200)
    (layer,) = [row for row in r.layers if row["batch_statistics"]]
    assert layer["never_updated"] and layer["updates"] == 0 and layer["stale"]
    assert any("never updated in 1 of 1 batch-norm layers (1)" in f["text"] for f in r.findings())
    assert not any("stale" in f["text"] for f in r.findings())  # said once, as never updated
    trained = warmed(NETWORKS["BatchNorm2d"]()[0], x, steps=200, batch=64)
    (layer,) = [
        row for row in audit(trained, x, y, batch_sizes=(4,), probes=1, exact_sample=0).layers if "channels" in row
    ]
    assert not layer["never_updated"] and layer["updates"] == 200


def test_exact_statistics_are_layer_by_layer_and_chunking_does_not_change_them():
    """The second layer's statistics are of its input with the first layer at *its* exact statistics."""
    torch.manual_seed(3)
    net = torch.nn.Sequential(
        torch.nn.Linear(6, 10),
        torch.nn.BatchNorm1d(10),
        torch.nn.ReLU(),
        torch.nn.Linear(10, 7),
        torch.nn.BatchNorm1d(7),
    )
    x, _ = data(n=301)
    net = warmed(net, x)
    whole = Engine(net, x, chunk_rows=4096).exact_statistics(x)
    chunked = Engine(net, x, chunk_rows=37).exact_statistics(x)
    with torch.no_grad():
        h1 = net[0](x).double()
        m1, v1 = h1.mean(0), h1.var(0, unbiased=False)
        bn1 = torch.nn.functional.batch_norm(
            net[0](x), m1.float(), v1.float(), net[1].weight, net[1].bias, False, 0.0, net[1].eps
        )
        h2 = net[3](torch.relu(bn1)).double()
    for (name, (m, v)), (em, ev) in zip(whole.items(), [(m1, v1), (h2.mean(0), h2.var(0, unbiased=False))]):
        assert np.allclose(m, em.numpy(), rtol=1e-6, atol=1e-6) and np.allclose(v, ev.numpy(), rtol=1e-5)
        assert np.allclose(m, chunked[name][0], rtol=1e-6, atol=1e-6)
        assert np.allclose(v, chunked[name][1], rtol=1e-6, atol=1e-7)
    assert list(whole) == ["1", "4"]


def test_recomputed_statistics_give_the_inference_labels_of_a_network_holding_them():
    net, (x, y) = NETWORKS["BatchNorm1d"]()
    net = warmed(net, x, steps=2, batch=4)  # noisy running statistics
    r = audit(net, x, y, batch_sizes=(2,), probes=1, exact_sample=0, resamples=200)
    stats = Engine(net, x).exact_statistics(x)
    fixed = warmed(NETWORKS["BatchNorm1d"]()[0], x, steps=2, batch=4)
    fixed[1].running_mean.copy_(torch.as_tensor(stats["1"][0]))
    fixed[1].running_var.copy_(torch.as_tensor(stats["1"][1]))
    with torch.no_grad():
        expected = (fixed(x).argmax(-1).numpy() == y).mean()
        running = (net(x).argmax(-1).numpy() == y).mean()
    assert r.accuracy["recomputed"] == pytest.approx(expected) and r.accuracy["running"] == pytest.approx(running)
    assert r.accuracy["gain"] == pytest.approx(expected - running)
    assert r.accuracy["gain_ci_low"] <= r.accuracy["gain"] <= r.accuracy["gain_ci_high"]


def test_one_group_batches_hold_one_group_and_small_groups_are_said():
    net, (x, y) = NETWORKS["BatchNorm1d"]()
    net = warmed(net, x)
    groups = np.where(np.arange(len(x)) < 10, 0, 1 + np.arange(len(x)) % 2)  # group 0 has 10 rows
    r = audit(net, x, y, groups=groups, batch_sizes=(4, 16), probes=2, exact_sample=0, resamples=200)
    g16 = r.flip(16, "group")
    assert g16["examples"] == len(x) - 10 and g16["probes"] == 2 * (len(x) - 10)
    assert any("10 rows in groups of fewer than 16 rows not probed" in n for n in r.notes)
    probed = {p["example"] for p in r.per_example if p["design"] == "group" and p["batch_size"] == 16}
    assert probed == set(range(10, len(x)))


def test_intervals_findings_and_outputs():
    net, (x, y) = NETWORKS["BatchNorm2d"]()
    net = warmed(net, x)
    r = audit(net, x, y, batch_sizes=(2, 16), serving_batch=8, probes=4, exact_sample=6, resamples=200)
    assert r.settings["batch_sizes"] == [2, 8, 16]
    for f in r.flips:
        assert f["ci_low"] <= f["flip_rate"] <= f["ci_high"]
    serving = r.flip(8)
    text = r.summary()
    assert f"At your serving batch of 8, {100 * serving['flip_rate']:.1f}% of labels depend on the companions" in text
    assert f"[{100 * serving['ci_low']:.1f}%, {100 * serving['ci_high']:.1f}%]" in text
    d = json.loads(json.dumps(to_dict(r)))
    assert d["flips"][0]["flip_rate"] == r.flips[0]["flip_rate"] and d["findings"]
    png = figure_png(r)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    page = html_report(r)
    assert "data:image/png;base64," in page and "At your serving batch of 8" in page


def test_progress_bar_goes_to_stderr(capsys):
    net, (x, y) = NETWORKS["BatchNorm1d"]()
    audit(warmed(net, x), x, y, batch_sizes=(4,), probes=2, exact_sample=0, resamples=200, progress=True)
    out, err = capsys.readouterr()
    assert out == "" and "100.0%" in err and "rows" in err


# ---- errors: one line each ------------------------------------------------------------


def test_bad_inputs_are_refused_in_one_line():
    net, (x, y) = NETWORKS["BatchNorm1d"]()
    net = warmed(net, x)
    plain = torch.nn.Sequential(torch.nn.Linear(6, 4))
    cases = [
        (lambda: audit(plain, x), "the model has no normalisation layer"),
        (lambda: audit(net, x[:, :5]), "the model does not accept inputs of shape (120, 5)"),
        (lambda: audit(net, x, y[:-1]), "labels: 119 values of shape (119,) for 120 input rows"),
        (lambda: audit(net, x, y + 10), "labels: range 10..13 does not fit the model's 4 classes"),
        (lambda: audit(net, x, groups=np.arange(3)), "groups: 3 values"),
        (lambda: audit(net, torch.where(torch.arange(120)[:, None] == 7, float("nan"), x)), "first at row 7"),
        (lambda: audit(net, x, batch_sizes=(1, 4)), "every batch size must be a whole number of at least 2, got 1"),
        (lambda: audit(mlp(lambda f: torch.nn.BatchNorm1d(f, track_running_stats=False)), x), "keeps no running"),
        (lambda: audit(net, x, stats_x=x[:, :3]), "statistics inputs have rows of shape (3,)"),
        (lambda: audit(net, x, exact_examples=[5, 120]), "exact examples must be row indices in [0, 120)"),
    ]
    for call, message in cases:
        with pytest.raises(AuditError) as e:
            call()
        assert message in str(e.value) and "\n" not in str(e.value)


def test_the_command_refuses_bad_files_in_one_line(tmp_path, capsys):
    net, (x, y) = NETWORKS["BatchNorm1d"]()
    torch.save(net, tmp_path / "pickled.pt")  # a whole pickled module: never loaded
    torch.save(net.state_dict(), tmp_path / "state.pt")
    np.save(tmp_path / "x.npy", x.numpy())
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object))
    np.savez(tmp_path / "d.npz", inputs=x.numpy(), labels=y[:-2])
    (tmp_path / "fake.safetensors").write_bytes(b"not a safetensors file at all")
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "trash.pt").write_bytes(b"PK\x03\x04 not really a zip")
    cases = [
        (
            ["--model", str(tmp_path / "pickled.pt"), "--data", str(tmp_path / "x.npy")],
            "pickled.pt: a pickled Sequential",
        ),
        (["--model", str(tmp_path / "missing.pt"), "--data", str(tmp_path / "x.npy")], "missing.pt: no such file"),
        (["--model", "test_audit:mlp_factory", "--weights", str(tmp_path / "notes.txt"), "--data", "x"], "notes.txt"),
        (
            ["--model", "test_audit:mlp_factory", "--data", str(tmp_path / "objects.npy")],
            "objects.npy: not a valid .npy",
        ),
        (["--model", "test_audit:mlp_factory", "--data", str(tmp_path / "d.npz")], "d.npz: 118 labels for 120 input"),
        (["--model", "test_audit:mlp_factory", "--data", str(tmp_path / "fake.safetensors")], "not a valid .safet"),
        (["--model", "test_audit:mlp_factory", "--data", str(tmp_path / "notes.txt")], "must be .npy, .npz or"),
        (["--model", "no_such_module:f", "--data", str(tmp_path / "x.npy")], "no_such_module:f: cannot import"),
        (["--model", str(tmp_path / "notes.txt"), "--data", str(tmp_path / "x.npy")], "not a TorchScript file"),
        (
            ["--model", "test_audit:mlp_factory", "--weights", str(tmp_path / "pickled.pt"), "--data", "x"],
            "pickled.pt: a pickled Sequential (torch.nn.modules.container.Sequential: torch.save of the object), "
            "never loaded (unpickling can run code): give its state dict",
        ),
        (
            ["--model", "test_audit:mlp_factory", "--weights", str(tmp_path / "trash.pt"), "--data", "x"],
            "trash.pt: not a safetensors or weights-only state_dict file",
        ),
        (
            ["--model", "test_audit:cnn_factory", "--weights", str(tmp_path / "state.pt"), "--data", "x"],
            "weights do not fit test_audit:cnn_factory",
        ),
    ]
    for argv, message in cases:
        assert cli.main(["audit", *argv, "--quiet"]) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("bnstudy audit: error: ") and message in err and err.count("\n") == 1, (argv, err)
        assert "\x1b" not in err and len(err) < 400, err  # no terminal escape codes, no pasted advice


def mlp_factory():
    return mlp(torch.nn.BatchNorm1d)


def cnn_factory():
    return cnn(torch.nn.BatchNorm2d)


def test_the_command_on_torchscript_and_on_a_factory_with_safetensors_weights(tmp_path, capsys):
    """Both ways in give the same audit; --fail-above sets the exit status; JSON, figure and HTML are written."""
    from safetensors.torch import save_file

    net, (x, y) = NETWORKS["BatchNorm1d"]()
    net = warmed(net, x)
    torch.jit.save(torch.jit.script(net), tmp_path / "net.pt")
    save_file({k: v.contiguous() for k, v in net.state_dict().items()}, tmp_path / "net.safetensors")
    np.savez(tmp_path / "d.npz", x=x.numpy(), y=y, groups=np.arange(len(y)) % 3)
    common = ["--data", str(tmp_path / "d.npz"), "--batch-sizes", "2", "4", "--probes", "3", "--quiet"]
    common += ["--exact-sample", "4", "--resamples", "200"]
    out = {}
    for name, model in (("script", ["--model", str(tmp_path / "net.pt")]), ("factory", [])):
        if name == "factory":
            model = ["--model", "test_audit:mlp_factory", "--weights", str(tmp_path / "net.safetensors")]
        j = tmp_path / f"{name}.json"
        assert cli.main(["audit", *model, *common, "--json", str(j)]) == 0
        out[name] = json.loads(j.read_text())
    capsys.readouterr()
    assert out["script"]["settings"]["torchscript"] and not out["factory"]["settings"]["torchscript"]
    for a, b in zip(out["script"]["flips"], out["factory"]["flips"]):
        assert (a["design"], a["batch_size"], a["examples"]) == (b["design"], b["batch_size"], b["examples"])
        assert abs(a["flips"] - b["flips"]) <= 1  # labels equal but at a logit tie
    rate = out["factory"]["flips"][0]["flip_rate"]
    assert out["factory"]["flips"][0]["batch_size"] == 2 and rate > 0.05
    # with group ids, --fail-above holds one-group batches to the threshold (the headline)
    rate = next(f["flip_rate"] for f in out["factory"]["flips"] if f["design"] == "group" and f["batch_size"] == 2)
    argv = ["audit", "--model", "test_audit:mlp_factory", "--weights", str(tmp_path / "net.safetensors"), *common]
    assert cli.main([*argv, "--fail-above", str(rate - 1e-9), "--at", "2"]) == 1
    assert "FAIL: flip rate" in capsys.readouterr().err
    paths = ["--figure", str(tmp_path / "f.png"), "--html", str(tmp_path / "r.html")]
    assert cli.main([*argv, "--fail-above", str(rate), "--at", "2", *paths]) == 0
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG" and "base64," in (tmp_path / "r.html").read_text()
    assert cli.main([*argv, "--fail-above", "0.1"]) == 2
    assert "--fail-above needs --at B or --serving-batch B" in capsys.readouterr().err


def test_the_benchmarks_audit_rows_compare_the_same_labels():
    from bnstudy.tools.benchmark import bench_audit

    net, (x, _) = NETWORKS["BatchNorm2d"]()
    out = bench_audit(warmed(net, x), x.numpy(), (2, 8), probes=2, loop_batches=10, repeats=1)
    assert sorted(out) == [2, 8]
    for fast, slow, agree in out.values():
        assert min(fast + slow) > 0 and agree == 1.0


def test_the_exact_finding_says_every_one_or_none_instead_of_a_degenerate_percentage():
    from bnstudy.audit.findings import _ever

    assert _ever(1.0) == "every one of them changes"
    assert _ever(0.0) == "none of them changes"
    assert _ever(0.46) == "46.0% of them change"


# ---- at the edges: every option checked before any work, outputs whole, honest intervals --------


@pytest.fixture
def files(tmp_path, monkeypatch):
    """A factory's weights (safetensors) and a data file of 120 rows with labels and groups; the
    model factory and the probes record whether any work was done."""
    from safetensors.torch import save_file

    from bnstudy.audit.engine import Engine

    net, (x, y) = NETWORKS["BatchNorm1d"]()
    net = warmed(net, x)
    save_file({k: v.contiguous() for k, v in net.state_dict().items()}, tmp_path / "w.safetensors")
    np.savez(tmp_path / "d.npz", x=x.numpy(), y=y, groups=np.arange(len(y)) % 3)
    work = {"models": 0, "probes": 0}
    monkeypatch.setitem(FACTORY_CALLS, "count", 0)
    train_labels = Engine.train_labels

    def counting(self, *a, **k):
        work["probes"] += 1
        return train_labels(self, *a, **k)

    monkeypatch.setattr(Engine, "train_labels", counting)
    argv = ["audit", "--model", "test_audit:counted_factory", "--weights", str(tmp_path / "w.safetensors")]
    argv += ["--data", str(tmp_path / "d.npz"), "--batch-sizes", "2", "4", "--probes", "2", "--quiet"]
    argv += ["--exact-sample", "4", "--resamples", "200"]

    def run(*extra):
        status = cli.main([*argv, *extra])
        work["models"] = FACTORY_CALLS["count"]
        return status

    return tmp_path, run, work


FACTORY_CALLS = {"count": 0}


def counted_factory():
    FACTORY_CALLS["count"] += 1
    return mlp(torch.nn.BatchNorm1d)


@pytest.mark.parametrize(
    "options, message",
    [
        (["--resamples", "0"], "resamples must be at least 200 for a 95% interval"),
        (["--resamples", "-5"], "resamples must be at least 200 for a 95% interval"),
        (["--resamples", "1"], "resamples must be at least 200 for a 95% interval"),
        (["--chunk", "0"], "rows per forward pass (chunk) must be a whole number of at least 1, got 0"),
        (["--probes", "0"], "probes per example must be a whole number of at least 1, got 0"),
        (["--exact-sample", "-1"], "the exact sample must be a whole number of at least 0, got -1"),
        (["--random-seed", "-3"], "the seed must be a whole number of at least 0, got -3"),
        (["--confidence", "1"], "the confidence must lie strictly between 0 and 1"),
        (["--device", "tpu"], "device tpu"),
        (["--serving-batch", "1"], "the serving batch must be a whole number of at least 2, got 1"),
        (
            ["--fail-above", "5", "--at", "2"],
            "--fail-above 5: a flip rate lies in [0, 1), 0.01 being 1% (for 5% write 0.05 or 5%)",
        ),
        (["--fail-above", "1", "--at", "2"], "(for 1% write 0.01 or 1%)"),
        (["--fail-above", "-1", "--at", "2"], "--fail-above -1: a flip rate lies in [0, 1)"),
        (["--fail-above", "lots", "--at", "2"], "--fail-above lots: not a number"),
        (["--fail-above", "0.1", "--at", "8"], "--at 8: not among the batch sizes measured (2, 4)"),
        (["--at", "4"], "--at B is the batch size of --fail-above: give --fail-above RATE too"),
        (["--json", "ok.json", "--html", "nodir/b.html"], "--html nodir/b.html: no folder nodir (create it first)"),
        (["--json", "."], "--json .: is a folder, not a file name"),
        (["--json", "a.json", "--html", "a.json"], "--html a.json: the same file as --json"),
    ],
)
def test_every_option_is_checked_before_any_work_and_refused_with_exit_2(files, options, message, capsys, monkeypatch):
    """Defects 1, 2, 3, 4 and 6 of the audit's issue: each refused in one line with exit 2 (never 1, the
    exit of a flip rate above --fail-above) before the model is even built, and no output is written."""
    tmp_path, run, work = files
    monkeypatch.chdir(tmp_path)
    assert run(*options) == 2
    err = capsys.readouterr().err
    assert err.startswith("bnstudy audit: error: ") and message in err and err.count("\n") == 1, err
    assert work == {"models": 0, "probes": 0}
    assert not (tmp_path / "ok.json").exists() and not (tmp_path / "a.json").exists()


def test_options_that_depend_on_the_data_are_refused_before_any_probe(files, capsys):
    """Defect 3: --at or the serving batch larger than the data, refused after loading but before probing."""
    tmp_path, run, work = files
    small = tmp_path / "small.npz"
    x, y = data(n=10)
    np.savez(small, x=x.numpy(), y=y)
    for options, message in (
        (
            ["--data", str(small), "--serving-batch", "16"],
            "small.npz (inputs): the serving batch of 16 is larger than its 10 rows",
        ),
        (["--data", str(small), "--batch-sizes", "2", "16", "--fail-above", "0.1", "--at", "16"], "--at 16: "),
        (["--fail-above", "0.1", "--serving-batch", "64", "--batch-sizes", "2"], "no group of"),
    ):
        assert run(*options, "--json", str(tmp_path / "out.json")) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
        assert work["probes"] == 0 and not (tmp_path / "out.json").exists()


def test_outputs_are_written_whole_or_not_at_all(files, monkeypatch, capsys):
    """Defect 2: a failure while the outputs are made leaves none of them (and no temporary file);
    an existing output is replaced only by a whole new one. A crash exits 3, never 1."""
    from bnstudy.audit import files as audit_files
    from bnstudy.audit import report

    tmp_path, run, work = files
    (tmp_path / "a.json").write_text("old")
    outputs = ["--json", str(tmp_path / "a.json"), "--html", str(tmp_path / "a.html")]
    monkeypatch.setitem(report.RENDER, "html", lambda result: 1 / 0)
    assert run(*outputs) == 3
    err = capsys.readouterr().err
    assert "ZeroDivisionError" in err and "the audit crashed (exit 3)" in err
    assert (tmp_path / "a.json").read_text() == "old" and not (tmp_path / "a.html").exists()
    monkeypatch.undo()
    # a destination that cannot be written: nothing is renamed, the temporary files are gone
    with pytest.raises(FileNotFoundError):
        audit_files.write_all([(tmp_path / "a.json", b"new"), (tmp_path / "gone" / "b.html", b"x")])
    assert (tmp_path / "a.json").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []
    audit_files.write_all([(tmp_path / "a.json", b"new"), (tmp_path / "b.html", b"x")])
    assert (tmp_path / "a.json").read_bytes() == b"new" and (tmp_path / "b.html").read_bytes() == b"x"


def test_a_crash_inside_the_audit_exits_3_not_1(files, monkeypatch, capsys):
    from bnstudy.audit.engine import Engine

    tmp_path, run, _ = files

    def broken(self, *a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(Engine, "train_labels", broken)
    assert run("--fail-above", "0.5", "--at", "2") == 3
    err = capsys.readouterr().err
    assert "RuntimeError: boom" in err and err.rstrip().endswith("the traceback above says where")


def test_fail_above_takes_a_share_or_a_percentage(files, capsys):
    """Defect 4: 0.3 and 30% are the same threshold; the one-group rate (groups given) is the one held."""
    tmp_path, run, _ = files
    assert run("--json", str(tmp_path / "r.json")) == 0
    rows = json.loads((tmp_path / "r.json").read_text())["flips"]
    rate = next(r["flip_rate"] for r in rows if r["design"] == "group" and r["batch_size"] == 2)
    assert 0.05 < rate < 0.9
    below, above = f"{100 * rate - 1:.3f}%", f"{100 * rate + 1:.3f}%"
    assert run("--fail-above", below, "--at", "2") == 1 and run("--fail-above", above, "--at", "2") == 0
    assert (
        run("--fail-above", str(rate - 0.01), "--at", "2") == 1
        and run("--fail-above", str(rate + 0.01), "--at", "2") == 0
    )
    assert "in one-group batches is above" in capsys.readouterr().err


@pytest.mark.parametrize("size", [1, 5, 12])
def test_the_exact_sample_has_the_size_asked_and_no_zero_width_interval(size):
    """Defect 5: --exact-sample 1, 5 and 12 with 10 labels measured 10 examples each, with a 0-width
    interval (one example per label, resampled within labels). Now exactly that many examples; one
    example has no interval; with fewer than 5 per label the bootstrap resamples without strata."""
    net, (x, y) = NETWORKS["BatchNorm1d"]()
    y = np.arange(len(x)) % 10
    net = warmed(torch.nn.Sequential(*list(net)[:-1], torch.nn.Linear(12, 10)), x)
    r = audit(net, x, y, batch_sizes=(2,), probes=1, exact_sample=size, designs_wanted=("exact",), resamples=200)
    ex = r.flip(2, "exact")
    assert ex["examples"] == size
    per = [p["flips"] / p["probes"] for p in r.per_example if p["design"] == "exact"]
    if size == 1:
        assert math.isnan(ex["ci_low"]) and "none (one example)" in r.summary()
    else:
        assert not ex["ci_stratified"] and any("without strata" in n and "exact b=2" in n for n in r.notes)
        assert len(set(per)) == 1 or ex["ci_low"] < ex["ci_high"]
        assert ex["ci_low"] <= ex["flip_rate"] <= ex["ci_high"]


def test_labels_with_five_examples_each_are_resampled_within_labels():
    net, (x, y) = NETWORKS["BatchNorm1d"]()
    r = audit(warmed(net, x), x, y, batch_sizes=(2,), probes=1, exact_sample=20, resamples=200)
    assert r.flip(2)["ci_stratified"] and r.flip(2, "exact")["ci_stratified"]  # 4 labels, 5 examples each
    assert not any("without strata" in n for n in r.notes)


@pytest.mark.parametrize("size", [1, 3, 7, 10, 20, 23, 40, 119])
def test_the_stratified_sample_takes_exactly_the_size_and_the_studys_choice_where_it_divides(size):
    from bnstudy.studies.companions.draws import choose_examples as studys

    y = np.repeat(np.arange(4), [40, 30, 30, 20])
    chosen = designs.stratified_sample(len(y), size, y, seed=3)
    assert len(chosen) == len(set(chosen)) == size and (np.diff(chosen) > 0).all()
    counts = np.bincount(y[chosen], minlength=4)
    if size <= 80:  # every label has room: as equal as can be
        assert counts.max() - counts.min() <= 1
    if size % 4 == 0 and size // 4 <= 20:
        assert (chosen == studys(y, size // 4, 3)).all()


def test_the_bootstrap_is_the_studys_without_numba():
    from bnstudy.audit.intervals import bootstrap_examples
    from bnstudy.base.stats import bootstrap_examples as studys

    v = np.random.default_rng(0).random(37)
    strata = np.arange(37) % 3
    for s in (None, strata):
        ours = bootstrap_examples(v, 500, 0.9, np.random.default_rng(5), strata=s)
        assert ours == studys(v, 500, 0.9, np.random.default_rng(5), strata=s)


def test_stale_allows_for_the_sampling_noise_of_the_datas_own_rows():
    """Defect 8: running statistics equal to the population's, audited on 150 rows, were called stale
    in 11 of 12 draws by the fixed 0.1 rule (sampling noise alone); with the noise band in none. A real
    offset (mean 0.3 standard deviations off, or variance 1.4 times) is stale in every draw."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(16, 24), torch.nn.BatchNorm1d(24), torch.nn.ReLU(), torch.nn.Linear(24, 4)
    )
    w, b = net[0].weight.detach(), net[0].bias.detach()
    std = (w * w).sum(1).sqrt()  # inputs N(0, I): the layer's population mean is b, its variance |w|^2
    verdicts = {}
    for case, (shift, scale) in {"population": (0.0, 1.0), "mean off": (0.3, 1.0), "variance off": (0.0, 1.4)}.items():
        with torch.no_grad():
            net[1].running_mean.copy_(b + shift * std)
            net[1].running_var.copy_(std * std * scale)
            net[1].num_batches_tracked.fill_(1000)
        net.eval()
        old, new = 0, 0
        for seed in range(12):
            x = torch.randn(150, 16, generator=torch.Generator().manual_seed(seed))
            (row,) = audit(net, x, batch_sizes=(2,), probes=1, exact_sample=0, designs_wanted=("random",)).layers
            old += row["mean_distance"] > 0.1 or row["var_distance"] > 0.1
            new += row["stale"]
            assert row["mean_noise"] > 0.05 and row["var_noise"] > 0.05  # the band at 150 rows
        verdicts[case] = (old, new)
    assert verdicts["population"][0] >= 8 and verdicts["population"][1] == 0
    assert verdicts["mean off"][1] == 12 and verdicts["variance off"][1] == 12


def test_the_stale_finding_names_the_band_and_a_large_band_is_said():
    x, _ = data(n=30)
    net = warmed(mlp(torch.nn.BatchNorm1d), x, steps=40, batch=30)
    r = audit(net, x, batch_sizes=(2,), probes=1, exact_sample=0, designs_wanted=("random",))
    text = " ".join(f["text"] for f in r.findings())
    assert "of the data, once the sampling noise of its 30 rows is allowed for" in text or (
        "above 0.1 beyond the sampling noise of the data's 30 rows" in text
    )
    assert "With 30 rows the exact statistics are themselves uncertain by up to" in text
    off = audit(net, x, batch_sizes=(2,), probes=1, exact_sample=0, noise_resamples=0).layers[0]
    assert off["mean_noise"] is None and off["stale"] == (off["mean_distance"] > 0.1 or off["var_distance"] > 0.1)


def test_data_errors_name_the_file_and_integer_inputs_are_given_as_floats(tmp_path, capsys):
    """Defect 7: NaN, wrong-shape and zero-row inputs name the file; uint8 inputs the model refuses
    are cast to its float dtype (values unchanged) with a note, giving the labels of those floats."""
    x, y = data()
    nan = x.clone()
    nan[3, 2] = float("nan")
    argv = ["audit", "--model", "test_audit:mlp_factory", "--batch-sizes", "2", "--probes", "1", "--quiet"]
    for name, array, message in (
        ("nan.npy", nan.numpy(), "nan.npy (inputs): NaN or infinite values (first at row 3)"),
        (
            "wide.npy",
            np.zeros((10, 7), np.float32),
            "wide.npy (inputs): the model does not accept inputs of shape (10, 7)",
        ),
        ("empty.npy", np.zeros((0, 6), np.float32), "empty.npy (inputs): need at least 2 rows, got shape (0, 6)"),
    ):
        np.save(tmp_path / name, array)
        assert cli.main([*argv, "--data", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    pixels = np.random.default_rng(0).integers(0, 256, (40, 6)).astype(np.uint8)
    net = warmed(mlp(torch.nn.BatchNorm1d), torch.from_numpy(pixels).float())
    as_bytes = audit(net, pixels, batch_sizes=(4,), probes=3, exact_sample=3)
    as_floats = audit(net, pixels.astype(np.float32), batch_sizes=(4,), probes=3, exact_sample=3)
    assert as_bytes.flips == as_floats.flips
    assert "inputs: uint8 values given to the model as float32 (as they are, not rescaled" in as_bytes.notes[0]


def test_safetensors_are_read_without_the_safetensors_package(tmp_path):
    from safetensors.torch import save_file

    from bnstudy.audit.files import read_safetensors, safetensors_metadata

    tensors = {
        "f32": torch.randn(3, 4),
        "f16": torch.randn(5).half(),
        "bf16": torch.randn(2, 2).bfloat16(),
        "i64": torch.arange(7),
        "u8": torch.arange(9, dtype=torch.uint8).reshape(3, 3),
        "flag": torch.tensor([True, False]),
        "scalar": torch.tensor(2.5),
        "empty": torch.zeros(0, 3),
    }
    save_file(tensors, tmp_path / "t.safetensors", metadata={"normaliser": "batchnorm"})
    back = read_safetensors(tmp_path / "t.safetensors")
    assert list(back) == sorted(tensors) or set(back) == set(tensors)
    for k, v in tensors.items():
        assert back[k].dtype == v.dtype and back[k].shape == v.shape and torch.equal(back[k], v), k
    assert safetensors_metadata(tmp_path / "t.safetensors") == {"normaliser": "batchnorm"}


def test_the_headline_with_groups_is_one_group_batches_at_the_serving_batch():
    """Item 4: with group ids and a serving batch, the first finding is the flip rate in one-group
    batches at the serving batch, against random batches, with what to do about it."""
    net, (x, y) = NETWORKS["BatchNorm1d"]()
    net = warmed(net, x)
    groups = np.arange(len(x)) // 30  # four groups of 30 rows
    r = audit(net, x, y, groups, batch_sizes=(2,), serving_batch=8, probes=4, exact_sample=0)
    first = r.findings()[0]
    g, rnd = r.flip(8, "group"), r.flip(8)
    assert first["topic"] == "serving_groups" and r.headline() == g and r.gate_design() == "group"
    assert first["text"].startswith("At your serving batch of 8 with every batch from one group")
    assert f"{100 * g['flip_rate']:.1f}% of labels depend on the companions" in first["text"]
    assert f"against {100 * rnd['flip_rate']:.1f}% in random batches" in first["text"]
    assert "Serve in evaluation mode" in first["text"] and "mix groups within each batch" in first["text"]
    assert r.summary().splitlines()[3].strip().startswith(("WARN", "note", "ok")) and "one group" in r.summary()
    assert not any(f["topic"] == "group" for f in r.findings())  # said once, as the headline
    no_groups = audit(net, x, y, batch_sizes=(2,), serving_batch=8, probes=2, exact_sample=0)
    assert no_groups.headline() == no_groups.flip(8) and no_groups.findings()[0]["topic"] != "serving_groups"


def test_assert_flip_rate_passes_below_and_fails_above_with_the_rate_interval_and_worst_examples():
    from bnstudy.audit import assert_flip_rate

    net, (x, y) = NETWORKS["BatchNorm1d"]()
    net = warmed(net, x)
    r = assert_flip_rate(net, x, serving_batch=4, at_most=0.99)
    row = r.flip(4)
    assert r.settings["batch_sizes"] == [4] and len(r.flips) == 1 and 0.01 < row["flip_rate"] < 0.99
    with pytest.raises(AssertionError) as e:
        assert_flip_rate(net, x, serving_batch=4, at_most=row["flip_rate"] / 2)
    text = str(e.value)
    assert f"flip rate {100 * row['flip_rate']:.2f}% [{100 * row['ci_low']:.1f}%, {100 * row['ci_high']:.1f}%]" in text
    assert "at serving batch 4 in random batches" in text
    worst = r.worst_examples(4)
    assert worst[0]["flips"] / worst[0]["probes"] == max(p["flips"] / p["probes"] for p in r.per_example)
    assert f"worst examples: row {worst[0]['example']} ({worst[0]['flips']} of {worst[0]['probes']} probes)" in text
    groups = np.arange(len(x)) // 30
    with pytest.raises(AssertionError, match="in one-group batches"):
        assert_flip_rate(net, x, groups=groups, serving_batch=4, at_most=0.0)
    with pytest.raises(AuditError, match="at_most is a flip rate"):
        assert_flip_rate(net, x, serving_batch=4, at_most=1)


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_a_pickled_model_is_named_without_unpickling_and_a_state_dict_loads(tmp_path, protocol):
    import argparse

    from bnstudy.audit.files import pickled_object

    net = mlp(torch.nn.BatchNorm1d)
    torch.save(net, tmp_path / "whole.pt", pickle_protocol=protocol)
    torch.save(net.state_dict(), tmp_path / "state.pt", pickle_protocol=protocol)
    torch.save({"model": net.state_dict(), "args": argparse.Namespace(lr=1)}, tmp_path / "checkpoint.pt")
    assert pickled_object(tmp_path / "whole.pt") == "torch.nn.modules.container.Sequential"
    assert pickled_object(tmp_path / "state.pt") is None
    assert pickled_object(tmp_path / "checkpoint.pt") == "argparse.Namespace"
    if protocol == 2:  # torch's default
        state = loading.load_state_dict(tmp_path / "state.pt")
        assert all(torch.equal(state[k], v) for k, v in net.state_dict().items())
    else:  # torch's weights-only loader cannot read it: said, without torch's advice
        with pytest.raises(AuditError) as e:
            loading.load_state_dict(tmp_path / "state.pt")
        assert f"state.pt: saved with pickle protocol {protocol}, which torch.load(weights_only=True) cannot" in str(
            e.value
        )
        assert "\n" not in str(e.value) and "Re-running" not in str(e.value)
    with pytest.raises(AuditError, match="whole.pt: a pickled Sequential"):
        loading.load_state_dict(tmp_path / "whole.pt")
