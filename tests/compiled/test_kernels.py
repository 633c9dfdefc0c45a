"""The network's compiled kernels: their documented float32 order, PyTorch's functions, and
machine code that is the same arithmetic on every CPU (no fused multiply-add; generic = host)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bnstudy.base import normalisers
from bnstudy.compiled import batchstats, blocks, examplenorms, kernels, normkernels
from bnstudy.nets import model as mlp
from bnstudy.nets.model import NetSpec

ROOT = Path(__file__).resolve().parents[2]
NORMALISERS = normalisers.NAMES
# The kinds whose documented arithmetic np_norm below spells out step by step (every other
# registered kind is held to PyTorch's function by the registry-driven tests).
DOCUMENTED = tuple(
    k
    for k in NORMALISERS
    if k in ("none", "batchnorm", "batchrenorm", "layernorm", "groupnorm", "ghostbatchnorm", "rmsnorm")
)
F32 = np.float32
EPS = F32(1e-5)
# Settings of the kinds that have one, chosen so that they matter at the tests' batch sizes:
# ghost batch norm cuts batches of 4 and 8 rows into virtual batches of 2.
SETTINGS = dict(virtual_batch=2)


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint32)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype == np.float32 and np.array_equal(_bits(a), _bits(b))


def _case(seed: int, n: int = 24, f: int = 16):
    """Pre-normalisation activations and a normaliser's parameters, float32, far from defaults."""
    rng = np.random.default_rng(seed)
    h = (rng.standard_normal((n, f)) * 2 + 0.5).astype(F32)
    h[3, 2] = h[4, 2]  # equal values in a column, and a row of zeros
    h[5] = 0
    gamma = (rng.random(f) + 0.5).astype(F32)
    beta = rng.standard_normal(f).astype(F32)
    rm = (rng.standard_normal(f) * 0.3).astype(F32)
    rv = (rng.random(f) + 0.2).astype(F32)
    return h, gamma, beta, rm, rv


# ---- the documented order, step by step in NumPy ------------------------------------
#
# NumPy's element-wise float32 operations are single IEEE operations (a product is
# rounded, then the sum), so a loop of them is exactly the documented arithmetic.


def np_linear_t(a, wt, bias):
    out = np.broadcast_to(bias, (a.shape[0], wt.shape[1])).copy()
    for k in range(a.shape[1]):
        out = out + a[:, k : k + 1] * wt[k]
    return out


def np_moments(rows):
    n = F32(len(rows))
    mean = np.zeros(rows.shape[1], F32)
    for r in rows:
        mean = mean + r
    mean = mean / n
    var = np.zeros(rows.shape[1], F32)
    for r in rows:
        dev = r - mean
        var = var + dev * dev
    return mean, var / n


def np_relu(y, relu=True):
    return np.where(y > 0, y, F32(0)) if relu else y


def np_batch_train(rows, gamma, beta, rm, rv, renorm, limits, relu=True):
    rmax, dmax = F32(limits[0]), F32(limits[1])
    mean, var = np_moments(rows)
    invstd = F32(1) / np.sqrt(var + EPS)
    xhat = (rows - mean) * invstd
    if renorm:
        sigma = np.sqrt(rv + EPS)
        r = np.minimum(np.maximum(np.sqrt(var + EPS) / sigma, F32(1) / rmax), rmax)
        d = np.minimum(np.maximum((mean - rm) / sigma, -dmax), dmax)
        y = (xhat * r + d) * gamma + beta
    else:
        y = xhat * gamma + beta
    return np_relu(y, relu)


def np_row_norm(h, groups, gamma, beta, relu=True):
    """Per row and group of consecutive features: sums in feature order."""
    n, f_ = h.shape
    size = f_ // groups
    out, xhat, rstd = np.empty_like(h), np.empty_like(h), np.empty((n, groups), F32)
    for g in range(groups):
        cols = range(g * size, (g + 1) * size)
        mean = np.zeros(n, F32)
        for f in cols:
            mean = mean + h[:, f]
        mean = mean / F32(size)
        var = np.zeros(n, F32)
        for f in cols:
            dev = h[:, f] - mean
            var = var + dev * dev
        var = var / F32(size)
        inv = F32(1) / np.sqrt(var + EPS)
        rstd[:, g] = inv
        for f in cols:
            xhat[:, f] = (h[:, f] - mean) * inv
            out[:, f] = np_relu(xhat[:, f] * gamma[f] + beta[f], relu)
    return out, xhat, rstd


def np_rms_norm(h, gamma, relu=True):
    """Per row: the mean square (features in order), ``invrms = 1 / sqrt(ms + eps)``, ``(h * invrms) * gamma``."""
    n, f_ = h.shape
    ms = np.zeros(n, F32)
    for f in range(f_):
        ms = ms + h[:, f] * h[:, f]
    ms = ms / F32(f_)
    inv = F32(1) / np.sqrt(ms + EPS)
    out = np.empty_like(h)
    for f in range(f_):
        out[:, f] = np_relu((h[:, f] * inv) * gamma[f], relu)
    return out


def np_virtual_batches(n, size):
    """Ghost batch norm's virtual batches of ``n`` rows, as slices: ``size`` rows each, the
    last to the end (``max(1, n // size)`` of them)."""
    parts = max(1, n // size)
    return [slice(v * size, n if v == parts - 1 else (v + 1) * size) for v in range(parts)]


def np_norm(kind, h, batch, gamma, beta, rm, rv, groups, limits, train, relu=True, virtual_batch=None):
    if kind in ("batchnorm", "batchrenorm", "ghostbatchnorm"):
        if train:
            pieces = [h[s : s + batch] for s in range(0, len(h), batch)]
            if kind == "ghostbatchnorm":
                pieces = [p[v] for p in pieces for v in np_virtual_batches(len(p), virtual_batch)]
            return np.concatenate(
                [np_batch_train(p, gamma, beta, rm, rv, kind == "batchrenorm", limits, relu) for p in pieces]
            )
        invstd = F32(1) / np.sqrt(rv + EPS)
        return np_relu(((h - rm) * invstd) * gamma + beta, relu)
    if kind in ("layernorm", "groupnorm"):
        return np_row_norm(h, groups if kind == "groupnorm" else 1, gamma, beta, relu)[0]
    if kind == "rmsnorm":
        return np_rms_norm(h, gamma, relu)
    if kind == "none":
        return np_relu(h, relu)
    raise ValueError(f"no documented arithmetic for {kind}: add it here and to DOCUMENTED")


# ---- (a) every building block is the documented arithmetic, bit for bit -------------------


@pytest.mark.parametrize("rows,inputs,outputs", [(1, 1, 1), (4, 64, 128), (7, 128, 128), (9, 13, 10), (0, 3, 5)])
def test_linear_t_is_the_bias_plus_products_in_k_order(rows, inputs, outputs):
    rng = np.random.default_rng(rows + inputs)
    a = rng.standard_normal((rows, inputs)).astype(F32)
    wt = (rng.standard_normal((inputs, outputs)) * 0.2).astype(F32)
    bias = rng.standard_normal(outputs).astype(F32)
    out = np.empty((rows, outputs), F32)
    blocks.linear_t(a, wt, bias, out)
    assert _same_bits(out, np_linear_t(a, wt, bias))


def test_transpose_into_is_the_transpose():
    w = np.arange(12, dtype=F32).reshape(3, 4)
    wt = np.empty((4, 3), F32)
    blocks.transpose_into(w, wt)
    assert np.array_equal(wt, w.T)


@pytest.mark.parametrize("start,n", [(0, 2), (3, 5), (0, 24), (20, 4)])
def test_batch_moments_sum_rows_in_row_order(start, n):
    h = _case(0)[0]
    mean, var = np.full(h.shape[1], np.nan, F32), np.full(h.shape[1], np.nan, F32)
    batchstats.batch_moments(h, start, n, mean, var)
    ref_mean, ref_var = np_moments(h[start : start + n])
    assert _same_bits(mean, ref_mean) and _same_bits(var, ref_var)


@pytest.mark.parametrize(
    "kind,limits",
    [
        ("batchnorm", (1.0, 0.0)),
        ("batchrenorm", (1.0, 0.0)),
        ("batchrenorm", (2.0, 0.5)),
        ("batchrenorm", (3.0, 5.0)),
        ("layernorm", (1.0, 0.0)),
        ("groupnorm", (1.0, 0.0)),
        ("none", (1.0, 0.0)),
        ("ghostbatchnorm", (1.0, 0.0)),
        ("rmsnorm", (1.0, 0.0)),
    ],
)
@pytest.mark.parametrize("batch", [2, 3, 8])
@pytest.mark.parametrize("relu", [True, False])
def test_norm_train_is_the_documented_arithmetic(kind, limits, batch, relu):
    h, gamma, beta, rm, rv = _case(batch)
    out = np.full_like(h, np.nan)
    # the kind's setting: group norm's 4 groups (layer norm: one, as kernels.logits passes it),
    # ghost batch norm's virtual batches of 3 rows (batches of 8: 3 and 5 rows; of 2 and 3: one)
    setting = {"groupnorm": 4, "ghostbatchnorm": 3}.get(kind, 1)
    ns = normkernels.settings(kernels.KIND[kind], EPS, setting, 0.1, *limits)
    kernels.norm_train(ns, normkernels.Params(gamma, beta, rm, rv), h, batch, relu, out)
    assert _same_bits(out, np_norm(kind, h, batch, gamma, beta, rm, rv, 4, limits, True, relu, virtual_batch=3))


@pytest.mark.parametrize("kind", DOCUMENTED)
@pytest.mark.parametrize("relu", [True, False])
def test_norm_inference_is_the_documented_arithmetic(kind, relu):
    h, gamma, beta, rm, rv = _case(11)
    out = np.full_like(h, np.nan)
    ns = normkernels.settings(kernels.KIND[kind], EPS, 4 if kind == "groupnorm" else 1)
    kernels.norm_inference(ns, normkernels.Params(gamma, beta, rm, rv), h, relu, out)
    assert _same_bits(out, np_norm(kind, h, 0, gamma, beta, rm, rv, 4, (1.0, 0.0), False, relu))


@pytest.mark.parametrize("groups", [1, 2, 8])
def test_row_norm_keeps_xhat_and_rstd_when_asked(groups):
    h, gamma, beta, _, _ = _case(groups)
    out, xhat, rstd = np.full_like(h, np.nan), np.full_like(h, np.nan), np.full((len(h), groups), np.nan, F32)
    for i in range(len(h)):
        examplenorms.row_norm(h, i, groups, EPS, gamma, beta, True, out, xhat, rstd)
    ref = np_row_norm(h, groups, gamma, beta)
    assert _same_bits(out, ref[0]) and _same_bits(xhat, ref[1]) and _same_bits(rstd, ref[2])


def test_rms_norm_forward_and_backward_are_the_documented_arithmetic():
    h, gamma, beta, _, _ = _case(4)
    n, f_ = h.shape
    out, xhat, rstd = np.full_like(h, np.nan), np.full_like(h, np.nan), np.full((n, 1), np.nan, F32)
    for i in range(n):
        lp = normkernels.Params(gamma, beta, gamma, gamma)
        normkernels.row_forward(normkernels.settings(normalisers.RMS, EPS), lp, h, i, True, out, xhat, rstd)
    assert _same_bits(out, np_rms_norm(h, gamma))
    ms = np.zeros(n, F32)
    for f in range(f_):
        ms = ms + h[:, f] * h[:, f]
    inv = F32(1) / np.sqrt(ms / F32(f_) + EPS)
    assert _same_bits(rstd[:, 0], inv) and _same_bits(xhat, h * inv[:, None])
    # backward: dxhat = dz * gamma, dh = invrms * (dxhat - xhat * (sum(dxhat * xhat) / F)); no beta
    dz = np.random.default_rng(7).standard_normal(h.shape).astype(F32)
    dh, dgamma, dbeta = np.full_like(h, np.nan), np.full(f_, np.nan, F32), np.full(f_, np.nan, F32)
    keep = normkernels.Keep(np.empty((5, f_), F32), xhat, rstd)
    normkernels.row_backward(normkernels.settings(normalisers.RMS, EPS), gamma, keep, dz, n, dh, dgamma, dbeta)
    dx = dz * gamma
    total = np.zeros(n, F32)
    for f in range(f_):
        total = total + dx[:, f] * xhat[:, f]
    want = inv[:, None] * (dx - xhat * (total / F32(f_))[:, None])
    g = np.zeros(f_, F32)
    for i in range(n):
        g = g + dz[i] * xhat[i]
    assert _same_bits(dh, want) and _same_bits(dgamma, g) and not dbeta.any()


def test_renorm_with_limits_one_and_zero_is_batch_norm_bit_for_bit():
    h, gamma, beta, rm, rv = _case(5)
    a, b = np.empty_like(h), np.empty_like(h)
    lp = normkernels.Params(gamma, beta, rm, rv)
    kernels.norm_train(normkernels.settings(kernels.BATCH, EPS), lp, h, 4, True, a)
    kernels.norm_train(normkernels.settings(kernels.RENORM, EPS, 1, 0.1, 1.0, 0.0), lp, h, 4, True, b)
    assert _same_bits(a, b)


def _network(norm: str, seeds=(0, 1)) -> dict:
    stacked = mlp.initial_stack(NetSpec(norm, **SETTINGS), list(seeds))
    rng = np.random.default_rng(3)
    for key, value in stacked.items():
        layer, name = key.split(".", 1)
        if layer in mlp.NORMS and name in ("weight", "bias", "running_mean", "running_var"):
            low = {"weight": 0.5, "bias": -0.2, "running_mean": -0.2, "running_var": 0.3}[name]
            stacked[key] = (low + rng.random(value.shape)).astype(F32)
    return stacked


@pytest.mark.parametrize("norm", DOCUMENTED)
@pytest.mark.parametrize("train", [False, True])
def test_logits_are_the_layers_composed_bit_for_bit(norm, train):
    stacked, spec = _network(norm), NetSpec(norm, **SETTINGS)
    limits = (2.0, 0.5) if norm == "batchrenorm" else (1.0, 0.0)
    x = np.random.default_rng(0).standard_normal((24, 64)).astype(F32)
    z = kernels.logits(stacked, spec, x, train=train, batch=4 if train else 0, limits=limits)
    for m in range(len(z)):
        p = {k: v[m] for k, v in stacked.items()}
        a = x
        for lin, nrm in zip(mlp.LINEARS[:2], mlp.NORMS):
            h = np_linear_t(a, p[lin + ".weight"].T.copy(), p[lin + ".bias"])
            ones, zeros = np.ones(h.shape[1], F32), np.zeros(h.shape[1], F32)
            a = np_norm(
                norm,
                h,
                4,
                p.get(nrm + ".weight", ones),
                p.get(nrm + ".bias", zeros),
                p.get(nrm + ".running_mean", zeros),
                p.get(nrm + ".running_var", ones),
                spec.groups,
                limits,
                train,
                virtual_batch=spec.virtual_batch,
            )
        assert _same_bits(z[m], np_linear_t(a, p["6.weight"].T.copy(), p["6.bias"]))


# ---- (b) the kernels compute PyTorch's functions ------------------------------------


@pytest.mark.parametrize("norm", NORMALISERS)
@pytest.mark.parametrize("train", [False, True])
def test_logits_match_torchnet_forward(norm, train):
    torch = pytest.importorskip("torch")
    from bnstudy.nets import torchnet

    # ghost batch norm: batches of 8 in virtual batches of 3 and 5 rows (of 2, rounding differences
    # between two float32 orders grow past the tolerance, as batch norm's own do on batches of 2)
    stacked, spec = _network(norm, seeds=(0, 1, 2)), NetSpec(norm, virtual_batch=3)
    limits = (2.0, 0.5) if norm == "batchrenorm" else (1.0, 0.0)
    x = np.random.default_rng(1).standard_normal((48, 64)).astype(F32)
    batch = 8
    ours = kernels.logits(stacked, spec, x, train=train, batch=batch if train else 0, limits=limits)
    m = ours.shape[0]
    xt = torch.from_numpy(x.reshape(-1, batch, 64) if train else x)
    with torch.no_grad():
        theirs = (
            torchnet.forward(torchnet.tensors(stacked), spec, xt.expand(m, *xt.shape), train=train, limits=limits)
            .reshape(m, len(x), -1)
            .numpy()
        )
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


# ---- (c, d) machine code: no fused multiply-add; the generic CPU computes the same bytes ---
#
# The code read is the kernel cache's: what the suite's warm-up (tests/conftest.py) compiled for this
# machine and for the generic CPU, the object code every job loads (tests/machinecode.py reads it).

DIGESTS = r"""
import hashlib, json
import numpy as np
from bnstudy.compiled import blocks, convgemm, kernels, probes
from bnstudy.nets import data
from bnstudy.base import normalisers
from bnstudy.nets import model as mlp
from bnstudy.nets.model import NetSpec

F32 = np.float32
x = data.split_digits(0).x_test
rng = np.random.default_rng(5)
digests = {}
for norm in normalisers.NAMES:
    spec = NetSpec(norm, virtual_batch=2)  # ghost batch norm: batches of 4 and 5 rows in two virtual batches
    stacked = mlp.initial_stack(spec, [0, 1])
    for key, value in stacked.items():
        if key[0] in mlp.NORMS and not key.endswith("num_batches_tracked"):
            stacked[key] = (0.3 + rng.random(value.shape)).astype(F32)
    limits = (2.0, 0.5) if norm == "batchrenorm" else (1.0, 0.0)
    h = hashlib.sha256()
    h.update(kernels.logits(stacked, spec, x[:96]).tobytes())
    h.update(kernels.logits(stacked, spec, x[:96], train=True, batch=4, limits=limits).tobytes())
    h.update(kernels.predict(stacked, spec, x[:50]).tobytes())
    prober = probes.Prober(stacked, spec, x, limits, rows=40)
    for b in (2, 5, 16):
        batches = np.stack([rng.permutation(len(x))[:b] for _ in range(30)])
        labels, z = prober.labels(batches, logits=True)
        h.update(labels.tobytes())
        h.update(z.tobytes())
    digests[norm] = h.hexdigest()
a = rng.standard_normal((9, 70)).astype(F32)
wt = rng.standard_normal((70, 40)).astype(F32)
out = np.empty((9, 40), F32)
convgemm.gemm(a, np.arange(70), wt, wt[0], out, convgemm.BIAS)
transposed = np.empty((40, 70), F32)
blocks.transpose_into(wt, transposed)
digests["gemm"] = hashlib.sha256(out.tobytes() + transposed.tobytes()).hexdigest()
print(json.dumps(digests))
"""


def _host_has_fma() -> bool:
    import llvmlite.binding as llvm

    return bool(re.search(r"\+fma\b", llvm.get_host_cpu_features().flatten()))


MACHINES = ("native", "generic")
# package kernels no job calls: the convolution's one-offset-at-a-time reference forms, which the
# tests hold the register-tiled kernels (bnstudy.compiled.convgemm, convgrads) to, and convgrads'
# compositions of the parts the training step calls one by one (bnstudy.compiled.convsteps), which tests call whole
REFERENCE_ONLY = {
    *(f"bnstudy.compiled.conv.{k}" for k in ("im2col", "col2im")),
    *(f"bnstudy.compiled.convgrads.{k}" for k in ("bias_grads", "col2im_offsets", "conv_weight_grads")),
}


@pytest.fixture(scope="module")
def machine_code(tmp_path_factory):
    """Per machine: each cached kernel's summary (tests/machinecode.py), the control function's, and
    the digests of the MLP kernels' outputs computed there."""
    import machinecode
    from conftest import _warm_up_kernels

    _warm_up_kernels(MACHINES)  # loads what the session compiled already
    procs = {
        m: subprocess.Popen(
            [sys.executable, "-c", DIGESTS],
            env=machinecode.environment(m) | {"OMP_NUM_THREADS": "1"},
            cwd=ROOT,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for m in MACHINES
    }
    reports = {}
    for m, proc in procs.items():
        out, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, f"{m} digests failed:\n{err[-4000:]}"
        code = machinecode.disassemble(machinecode.target_directory(m))
        reports[m] = {
            "digests": json.loads(out.strip().splitlines()[-1]),
            "kernels": {name: machinecode.summary(asm) for name, asm in code.items()},
            "control": machinecode.summary(machinecode.control(m, tmp_path_factory.mktemp(f"control-{m}")))["fma"],
        }
    return reports


@pytest.mark.slow
def test_every_kernel_a_job_calls_is_in_the_cache_as_machine_code(machine_code):
    from bnstudy.tools import warmup

    listed = {name for name, _ in warmup._dispatchers()}
    assert {"bnstudy.compiled.convgemm.gemm", "bnstudy.compiled.backprop.train_run"} <= listed
    for m, report in machine_code.items():
        missing = sorted(listed - REFERENCE_ONLY - set(report["kernels"]))
        assert not missing, f"{m}: the warm-up compiles no code for {missing}: a job would compile it itself"
        assert all(k["lines"] > 10 for k in report["kernels"].values())
        assert report["kernels"]["bnstudy.compiled.convgemm.gemm"]["mul"]


@pytest.mark.slow
@pytest.mark.skipif(not _host_has_fma(), reason="this CPU has no FMA: a contraction could not show")
def test_no_fused_multiply_add_in_any_kernel(machine_code):
    """The host has FMA, so LLVM would use it if it were allowed to contract a * b + c."""
    assert machine_code["native"]["control"], "the detector misses the contraction of a control function"
    assert not machine_code["generic"]["control"]  # no FMA on the generic CPU, even where allowed
    for m, report in machine_code.items():
        fused = {k: s["fma"] for k, s in report["kernels"].items() if s["fma"]}
        assert not fused, (m, fused)


@pytest.mark.slow
def test_generic_cpu_gives_the_same_bytes_as_this_one(machine_code):
    host, generic = machine_code["native"], machine_code["generic"]
    assert not any(s["ymm"] or s["zmm"] for s in generic["kernels"].values())  # the generic target really was used
    import llvmlite.binding as llvm

    if "+avx" in llvm.get_host_cpu_features().flatten().split(","):
        assert any(s["ymm"] or s["zmm"] for s in host["kernels"].values())  # and the host's own
    assert host["digests"] == generic["digests"]
