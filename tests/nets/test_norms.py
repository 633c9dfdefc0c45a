"""Normalisers, in particular batch renormalisation (Ioffe 2017) against its definition."""

import pytest
import torch

from bnstudy.nets.norms import BatchRenorm1d, normalise
from bnstudy.nets.recipe import RenormSchedule

EPS = 1e-5


def bn_params(m=2, f=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    return {
        "weight": 1 + 0.1 * torch.randn(m, f, generator=g),
        "bias": 0.1 * torch.randn(m, f, generator=g),
        "running_mean": torch.randn(m, f, generator=g),
        "running_var": 0.2 + torch.rand(m, f, generator=g) * 3,
        "num_batches_tracked": torch.zeros(m, dtype=torch.long),
    }


def batch(m=2, b=8, f=6, seed=1):
    g = torch.Generator().manual_seed(seed)
    scale = torch.linspace(0.3, 3.0, f)  # batch spreads both below and above the running ones
    return 2 + scale * torch.randn(m, b, f, generator=g)


def clone(p):
    return {k: v.clone() for k, v in p.items()}


def test_batch_renorm_with_rmax_1_dmax_0_equals_batch_norm(configured):
    h, p = batch(), bn_params()
    p_bn, p_brn = clone(p), clone(p)
    y_bn = normalise("batchnorm", h, p_bn, train=True, update=True)
    y_brn = normalise("batchrenorm", h, p_brn, train=True, update=True, limits=(1.0, 0.0))
    torch.testing.assert_close(y_brn, y_bn, rtol=0, atol=0)
    for k in p:
        torch.testing.assert_close(p_brn[k], p_bn[k], rtol=0, atol=0)


def test_batch_norm_matches_pytorch_batchnorm1d_in_both_modes(configured):
    h, p = batch(m=1), bn_params(m=1)
    ref = torch.nn.BatchNorm1d(6, eps=EPS, momentum=0.1)
    with torch.no_grad():
        for k in ("weight", "bias", "running_mean", "running_var"):
            getattr(ref, k).copy_(p[k][0])
    y = normalise("batchnorm", h, p, train=True, update=True)
    torch.testing.assert_close(y[0], ref.train()(h[0]), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(p["running_mean"][0], ref.running_mean, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(p["running_var"][0], ref.running_var, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(normalise("batchnorm", h, p, train=False)[0], ref.eval()(h[0]), rtol=1e-5, atol=1e-5)


def renorm_r_d(h, p, limits):
    """r and d of Ioffe's definition, written out independently of the package."""
    rmax, dmax = limits
    mean = h.mean(dim=1)
    sigma_batch = torch.sqrt(h.var(dim=1, unbiased=False) + EPS)
    sigma = torch.sqrt(p["running_var"] + EPS)
    r = torch.clamp(sigma_batch / sigma, 1 / rmax, rmax)
    d = torch.clamp((mean - p["running_mean"]) / sigma, -dmax, dmax)
    return mean, sigma_batch, r, d


@pytest.mark.parametrize("limits", [(1.5, 0.5), (3.0, 5.0), (1.1, 0.05)])
def test_batch_renorm_follows_its_definition_with_r_and_d_clipped(configured, limits):
    h, p = batch(), bn_params()
    mean, sigma_batch, r, d = renorm_r_d(h, p, limits)
    rmax, dmax = limits
    assert bool(((r >= 1 / rmax - 1e-7) & (r <= rmax + 1e-7)).all())
    assert bool(((d >= -dmax) & (d <= dmax)).all())
    expected = ((h - mean[:, None]) / sigma_batch[:, None] * r[:, None] + d[:, None]) * p["weight"][:, None] + p[
        "bias"
    ][:, None]
    y = normalise("batchrenorm", h, clone(p), train=True, limits=limits)
    torch.testing.assert_close(y, expected, rtol=1e-5, atol=1e-5)


def test_batch_renorm_clipping_is_active_in_the_test_batches(configured):
    """The clipping test above is only informative if some r and d hit their limits."""
    h, p = batch(), bn_params()
    rmax, dmax = 1.5, 0.5
    rmean = h.mean(dim=1)
    sigma = torch.sqrt(p["running_var"] + EPS)
    raw_r = torch.sqrt(h.var(dim=1, unbiased=False) + EPS) / sigma
    raw_d = (rmean - p["running_mean"]) / sigma
    assert bool((raw_r > rmax).any()) and bool((raw_r < 1 / rmax).any())
    assert bool((raw_d.abs() > dmax).any()) and bool((raw_d.abs() < dmax).any())


def test_no_gradient_flows_through_r_and_d(configured):
    """The gradient equals that of batch norm with r and d frozen as constants."""
    limits = (1.5, 0.5)
    h, p = batch(), bn_params()
    _, _, r, d = renorm_r_d(h, p, limits)
    w = torch.randn(h.shape, generator=torch.Generator().manual_seed(5))

    h1 = h.clone().requires_grad_(True)
    (normalise("batchrenorm", h1, clone(p), train=True, limits=limits) * w).sum().backward()

    h2 = h.clone().requires_grad_(True)
    mean = h2.mean(dim=1, keepdim=True)
    xhat = (h2 - mean) / torch.sqrt(h2.var(dim=1, unbiased=False, keepdim=True) + EPS)
    y = (xhat * r[:, None] + d[:, None]) * p["weight"][:, None] + p["bias"][:, None]
    (y * w).sum().backward()
    torch.testing.assert_close(h1.grad, h2.grad, rtol=1e-5, atol=1e-6)

    # and it differs from differentiating through r and d (the test can fail)
    h3 = h.clone().requires_grad_(True)
    mean3, sigma3 = h3.mean(dim=1), torch.sqrt(h3.var(dim=1, unbiased=False) + EPS)
    sigma = torch.sqrt(p["running_var"] + EPS)
    r3 = torch.clamp(sigma3 / sigma, 1 / limits[0], limits[0])
    d3 = torch.clamp((mean3 - p["running_mean"]) / sigma, -limits[1], limits[1])
    y3 = ((h3 - mean3[:, None]) / sigma3[:, None] * r3[:, None] + d3[:, None]) * p["weight"][:, None] + p["bias"][
        :, None
    ]
    (y3 * w).sum().backward()
    assert not torch.allclose(h1.grad, h3.grad, rtol=1e-3, atol=1e-4)


def test_batch_renorm_inference_uses_the_moving_statistics(configured):
    h, p = batch(), bn_params()
    y = normalise("batchrenorm", h, clone(p), train=False, limits=(3.0, 5.0))
    expected = (h - p["running_mean"][:, None]) / torch.sqrt(p["running_var"][:, None] + EPS) * p["weight"][
        :, None
    ] + p["bias"][:, None]
    torch.testing.assert_close(y, expected, rtol=1e-6, atol=1e-6)
    # each row alone gives the same output: no batch dependence at inference
    alone = torch.cat([normalise("batchrenorm", h[:, i : i + 1], clone(p), train=False) for i in range(h.shape[1])], 1)
    torch.testing.assert_close(alone, y, rtol=0, atol=0)


def test_batch_renorm_moves_running_statistics_like_batch_norm(configured):
    h, p = batch(), bn_params()
    p_brn, p_bn = clone(p), clone(p)
    normalise("batchrenorm", h, p_brn, train=True, update=True, limits=(3.0, 5.0))
    normalise("batchnorm", h, p_bn, train=True, update=True)
    n = h.shape[1]
    torch.testing.assert_close(p_brn["running_mean"], 0.9 * p["running_mean"] + 0.1 * h.mean(1))
    torch.testing.assert_close(p_brn["running_var"], 0.9 * p["running_var"] + 0.1 * h.var(1, unbiased=True))
    for k in ("running_mean", "running_var", "num_batches_tracked"):
        torch.testing.assert_close(p_brn[k], p_bn[k], rtol=0, atol=0)
    assert n > 1


def test_update_false_never_touches_buffers(configured):
    for kind in ("batchnorm", "batchrenorm"):
        h, p = batch(), bn_params()
        before = clone(p)
        normalise(kind, h, p, train=True, update=False, limits=(2.0, 1.0))
        normalise(kind, h, p, train=False)
        for k in p:
            assert torch.equal(p[k], before[k]), (kind, k)


def test_batch_renorm_module_follows_the_defining_formula(configured):
    """The module against Ioffe's formula written out here (not against ``normalise``, which it calls)."""
    torch.manual_seed(0)
    mod = BatchRenorm1d(6)
    mod.rmax, mod.dmax = 1.5, 0.5
    with torch.no_grad():
        mod.running_mean.normal_()
        mod.running_var.uniform_(0.5, 2.0)
        mod.weight.uniform_(0.5, 1.5)
        mod.bias.normal_()
    p = {k: v.detach().clone().unsqueeze(0) for k, v in mod.state_dict().items()}
    h = batch(m=1)
    mean, sigma_batch, r, d = renorm_r_d(h, p, (1.5, 0.5))
    assert bool(((r - 1.5).abs() < 1e-6).any()) and bool(((d.abs() - 0.5).abs() < 1e-6).any()), "clipping active"
    expected = ((h[0] - mean[0]) / sigma_batch[0] * r[0] + d[0]) * p["weight"][0] + p["bias"][0]
    torch.testing.assert_close(mod.train()(h[0]), expected, rtol=1e-5, atol=1e-5)
    # running statistics: momentum 0.1, unbiased batch variance (as BatchNorm1d)
    torch.testing.assert_close(mod.running_mean, 0.9 * p["running_mean"][0] + 0.1 * h[0].mean(0))
    torch.testing.assert_close(mod.running_var, 0.9 * p["running_var"][0] + 0.1 * h[0].var(0, unbiased=True))
    assert int(mod.num_batches_tracked) == 1
    # inference: the moving statistics, no r and d
    x = h[0] + 1
    expected_eval = (x - mod.running_mean) / torch.sqrt(mod.running_var + EPS) * mod.weight + mod.bias
    torch.testing.assert_close(mod.eval()(x), expected_eval.detach(), rtol=1e-6, atol=1e-6)
    assert int(mod.num_batches_tracked) == 1, "inference does not move the buffers"


def test_renorm_schedule_ramps_as_documented():
    s = RenormSchedule(total_steps=1000, rmax=3.0, dmax=5.0, warmup=0.05, rmax_full=0.4, dmax_full=0.25)
    # plain batch norm during the warm-up, 5% of the steps
    assert s.limits(0) == (1.0, 0.0)
    assert s.limits(50) == (1.0, 0.0)
    # linear ramps: rmax from 1 at 5% to 3 at 40%, dmax from 0 at 5% to 5 at 25%
    rmax, dmax = s.limits(150)
    assert rmax == pytest.approx(1 + 2 * (0.15 - 0.05) / 0.35)
    assert dmax == pytest.approx(5 * (0.15 - 0.05) / 0.20)
    assert s.limits(250)[1] == pytest.approx(5.0)
    assert s.limits(400)[0] == pytest.approx(3.0)
    assert s.limits(999) == pytest.approx((3.0, 5.0))
    assert s.final == pytest.approx((3.0, 5.0))
    steps = [s.limits(t) for t in range(1000)]
    assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in zip(steps, steps[1:]))  # monotone


def test_renorm_schedule_is_rescaled_to_the_run_length():
    short, long = RenormSchedule(total_steps=200), RenormSchedule(total_steps=20000)
    for fraction in (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0):
        assert short.limits(round(fraction * 200)) == pytest.approx(long.limits(round(fraction * 20000)))


@pytest.mark.parametrize("kind", ["layernorm", "groupnorm"])
def test_feature_normalisers_match_pytorch_and_ignore_companions(configured, kind):
    h = batch(m=1, f=16)
    p = {"weight": 1 + 0.1 * torch.randn(1, 16), "bias": 0.1 * torch.randn(1, 16)}
    ref = torch.nn.LayerNorm(16, eps=EPS) if kind == "layernorm" else torch.nn.GroupNorm(4, 16, eps=EPS)
    with torch.no_grad():
        ref.weight.copy_(p["weight"][0])
        ref.bias.copy_(p["bias"][0])
    y = normalise(kind, h, p, train=True, groups=4)
    torch.testing.assert_close(y[0], ref(h[0]), rtol=1e-5, atol=1e-5)
    alone = normalise(kind, h[:, :1], p, train=True, groups=4)
    torch.testing.assert_close(alone, y[:, :1], rtol=0, atol=0)
