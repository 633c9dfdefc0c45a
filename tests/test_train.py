"""Training: hand-written gradients, flat optimisers, lockstep versus the plain loop."""

import pytest
import torch
import torch.nn.functional as F

from bnstudy import model as mlp
from bnstudy import train
from bnstudy.norms import BATCH_NORMALISERS, NORMALISERS


def blobs(n=256, seed=0):
    """A learnable 10-class problem with 64 continuous features (no constant columns)."""
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 10
    centres = torch.randn(10, 64, generator=g)
    return (centres[y] + 1.5 * torch.randn(n, 64, generator=g)).float(), y


def perturbed_stack(spec, seeds, seed=0):
    """Initial weights with non-trivial normaliser parameters and running statistics."""
    stacked = mlp.initial_stack(spec, seeds)
    g = torch.Generator().manual_seed(seed)
    for layer in mlp.NORMS:
        if spec.normaliser == "none":
            continue
        stacked[layer + ".weight"] += 0.2 * torch.randn(stacked[layer + ".weight"].shape, generator=g)
        stacked[layer + ".bias"] += 0.2 * torch.randn(stacked[layer + ".bias"].shape, generator=g)
        if spec.normaliser in BATCH_NORMALISERS:
            stacked[layer + ".running_mean"] += 0.3 * torch.randn(stacked[layer + ".running_mean"].shape, generator=g)
            stacked[layer + ".running_var"] *= 0.3 + 2 * torch.rand(stacked[layer + ".running_var"].shape, generator=g)
    return stacked


# Linear biases right before a batch norm: their gradient is mathematically zero
# (the norm subtracts the batch mean), so only rounding noise is left to compare.
def zero_gradient(kind, key):
    return kind in BATCH_NORMALISERS and key in ("0.bias", "3.bias")


@pytest.mark.parametrize("batch_size", [2, 3, 16])
@pytest.mark.parametrize("kind", NORMALISERS)
def test_hand_written_gradients_equal_autograd(configured, kind, batch_size):
    """StackedNet's gradient and running-statistics update equal autograd through model.forward.

    Tolerance: relative 1e-5 of each tensor's largest gradient (5e-4 at batch 2,
    where a batch norm of two rows is ill-conditioned); the pre-norm Linear biases
    of batch norms must have gradients below 1e-5 of the largest weight gradient.
    """
    spec = mlp.NetSpec(kind)
    stacked = perturbed_stack(spec, [0, 1, 2])
    g = torch.Generator().manual_seed(7)
    x = torch.randn(3, batch_size, 64, generator=g)
    y = torch.randint(0, 10, (3, batch_size), generator=g)
    limits = (1.5, 0.5)

    net = train.StackedNet.from_stack(spec, stacked)
    logits = net.forward_train(x, limits)
    net.backward((torch.softmax(logits, 2) - F.one_hot(y, 10).float()) / batch_size)

    ref = {k: v.clone().requires_grad_(train._is_trainable(k, v)) for k, v in stacked.items()}
    ref_logits = mlp.forward(ref, spec, x, train=True, update=True, limits=limits)
    F.cross_entropy(ref_logits.flatten(0, 1), y.flatten(), reduction="none").view(3, -1).mean(1).sum().backward()

    tol = 5e-4 if batch_size == 2 else 1e-5
    torch.testing.assert_close(logits, ref_logits.detach(), rtol=tol, atol=tol)
    largest = max(ref[k].grad.abs().max() for k in net.grads)
    for k in net.grads:
        if zero_gradient(kind, k):
            assert net.grads[k].abs().max() <= 1e-5 * largest, k
            continue
        scale = ref[k].grad.abs().max()
        assert (net.grads[k] - ref[k].grad).abs().max() <= tol * scale, k
    state = net.state()
    for k in stacked:
        if "running" in k:
            torch.testing.assert_close(state[k], ref[k].detach(), rtol=1e-6, atol=1e-6)
        if k.endswith("num_batches_tracked"):
            assert torch.equal(state[k], stacked[k] + 1)


def test_stacked_net_round_trips_the_state_dict(configured):
    spec = mlp.NetSpec("batchrenorm")
    stacked = perturbed_stack(spec, [3, 4])
    state = train.StackedNet.from_stack(spec, stacked).state()
    assert list(state) == list(stacked)
    for k in stacked:
        assert torch.equal(state[k], stacked[k]) and state[k].dtype == stacked[k].dtype, k


def test_flat_adam_equals_torch_adam_per_model(configured):
    """One fused step over the flat buffer equals torch.optim.Adam (foreach=False) on each model's tensor."""
    g = torch.Generator().manual_seed(0)
    models = [torch.randn(1000, generator=g) for _ in range(3)]
    flat = torch.cat(models + [torch.zeros(-3000 % train.ALIGN)])
    flat_grad = torch.zeros_like(flat)
    opt = train.FlatAdam(flat, flat_grad, lr=1e-3)
    params = [torch.nn.Parameter(m.clone()) for m in models]
    refs = [torch.optim.Adam([p], lr=1e-3, foreach=False) for p in params]
    for _ in range(20):
        grads = [torch.randn(1000, generator=g) * 10 ** torch.randint(-6, 2, (1000,), generator=g) for _ in models]
        flat_grad[:3000] = torch.cat(grads)
        opt.step()
        for p, grad, ref in zip(params, grads, refs):
            p.grad = grad
            ref.step()
    torch.testing.assert_close(flat[:3000], torch.cat([p.detach() for p in params]), rtol=1e-6, atol=1e-7)
    assert torch.equal(flat[3000:], torch.zeros_like(flat[3000:]))


def test_flat_sgd_equals_torch_sgd_exactly(configured):
    g = torch.Generator().manual_seed(0)
    flat = torch.randn(500, generator=g)
    flat_grad = torch.zeros_like(flat)
    opt = train.FlatSGD(flat, flat_grad, lr=0.05, momentum=0.9)
    p = torch.nn.Parameter(flat.clone())
    ref = torch.optim.SGD([p], lr=0.05, momentum=0.9, foreach=False)
    for _ in range(10):
        grad = torch.randn(500, generator=g)
        flat_grad.copy_(grad)
        opt.step()
        p.grad = grad.clone()
        ref.step()
    assert torch.equal(flat, p.detach())


@pytest.mark.parametrize("make", [
    lambda flat, grad, parts: train.FlatAdam(flat, grad, lr=1e-3, parts=parts),
    lambda flat, grad, parts: train.FlatSGD(flat, grad, lr=0.05, momentum=0.9, parts=parts),
], ids=["adam", "sgd"])
def test_updating_part_by_part_equals_one_step_over_the_buffer(configured, make):
    """Bitwise: begin_step + update of each part (last part first, as backward calls it) = step()."""
    g = torch.Generator().manual_seed(1)
    parts = (slice(0, 640), slice(640, 704), slice(704, 2048))  # multiples of ALIGN, as StackedNet cuts them
    whole, grad = torch.randn(2048, generator=g), torch.zeros(2048)
    by_part, grad_by_part = whole.clone(), torch.zeros(2048)
    a, b = make(whole, grad, (slice(None),)), make(by_part, grad_by_part, parts)
    for _ in range(5):
        grad.copy_(torch.randn(2048, generator=g) * 10 ** torch.randint(-6, 2, (2048,), generator=g))
        grad_by_part.copy_(grad)
        a.step()
        b.begin_step()
        for i in reversed(range(len(parts))):
            b.update(i)
    assert torch.equal(whole, by_part)


def test_flat_buffer_parts_hold_one_linear_and_its_normaliser_each_aligned(configured):
    """Parts tile the buffer, each a multiple of ALIGN long; each tensor sits in its Linear's part."""
    spec = mlp.NetSpec("batchnorm", widths=(64, 100, 36, 10))  # odd widths: parts need padding
    net = train.StackedNet.from_stack(spec, mlp.initial_stack(spec, [0, 1, 2]))
    assert [p.start for p in net.parts] == [0] + [p.stop for p in net.parts[:-1]]
    assert net.parts[-1].stop == net.flat.numel()
    assert all((p.stop - p.start) % train.ALIGN == 0 for p in net.parts)
    owner = {"0": 0, "1": 0, "3": 1, "4": 1, "6": 2}
    base = net.flat.data_ptr()
    for key, view in net.params.items():
        first = (view.data_ptr() - base) // view.element_size()
        part = net.parts[owner[key.split(".")[0]]]
        assert part.start <= first and first + view.numel() <= part.stop, key


@pytest.mark.parametrize("kind", ["none", "layernorm", "groupnorm"])
def test_odd_widths_keep_lockstep_bitwise_equal_to_training_alone(configured, kind):
    """With padded parts, seed 1 in a stack of three still gives the bytes of seed 1 alone.

    (Batch norms are bitwise at the study's widths, the test above; at other widths the
    gradient of the Linear bias right before the norm, pure rounding noise, is summed in
    an order that depends on the stack's size.)
    """
    x, y = blobs(n=96)
    spec, recipe = mlp.NetSpec(kind, widths=(64, 96, 40, 10)), train.Recipe(batch_size=8, epochs=2)
    together, _ = train.train_lockstep(spec, recipe, [0, 1, 2], x, y)
    alone, _ = train.train_lockstep(spec, recipe, [1], x, y)
    for k in together:
        assert torch.equal(together[k][1], alone[k][0]), k


def test_lockstep_starts_from_each_seeds_own_weights_and_batches(configured):
    """Initial stack = build_module(seed) per seed; batches = epoch_batches of the seed's own generator."""
    spec = mlp.NetSpec("batchnorm")
    stacked = mlp.initial_stack(spec, [5, 2])
    for i, seed in enumerate([5, 2]):
        alone = mlp.build_module(spec, seed).state_dict()
        for k in alone:
            assert torch.equal(stacked[k][i], alone[k])
    _, y = blobs(n=101)
    batches = train.epoch_batches(train.order_generator(3), y, 10, "shuffle")
    assert [len(b) for b in batches] == [10] * 10  # the final batch of one row is dropped
    assert len(torch.cat(batches).unique()) == 100


@pytest.mark.parametrize("kind", NORMALISERS)
def test_a_model_trained_in_lockstep_with_others_equals_it_trained_alone(configured, kind):
    """Bitwise: seed 1 in a stack of three gives the same bytes as seed 1 alone (lockstep trainer)."""
    x, y = blobs(n=96)
    spec, recipe = mlp.NetSpec(kind), train.Recipe(batch_size=8, epochs=2, renorm_warmup=0.0)
    together, log_together = train.train_lockstep(spec, recipe, [0, 1, 2], x, y)
    alone, log_alone = train.train_lockstep(spec, recipe, [1], x, y)
    for k in together:
        assert torch.equal(together[k][1], alone[k][0]), k
    assert [r for r in log_together if r["seed"] == 1] == log_alone


def test_lockstep_training_is_deterministic(configured):
    x, y = blobs(n=128)
    spec, recipe = mlp.NetSpec("batchrenorm"), train.Recipe(batch_size=4, epochs=2, renorm_warmup=0.0)
    first, log1 = train.train_lockstep(spec, recipe, [0, 1], x, y)
    second, log2 = train.train_lockstep(spec, recipe, [0, 1], x, y)
    assert log1 == log2
    for k in first:
        assert first[k].numpy().tobytes() == second[k].numpy().tobytes(), k


# Agreement of lockstep and plain training, as functions. Tolerances, on the
# inference-mode logits of all 256 rows (largest |logit| about 5-40):
# - SGD: 1e-4 relative to the largest logit: both follow one trajectory up to
#   float rounding;
# - Adam: 1e-3 (batch norm) and 2e-2 (batch renorm) relative. A Linear bias right
#   before a batch norm has a mathematically zero gradient, so each implementation
#   hands Adam its own rounding noise, which Adam scales up to steps of about the
#   learning rate. The bias itself does not change the training-mode function, but
#   it enters the running mean (inference mode) and, through d, batch
#   renormalisation's training. We compare the functions, not that bias.
# Running statistics: the same relative tolerance, except with Adam and a batch
# norm, where the running mean carries that bias's drift (at most the learning
# rate per step): 1e-2 absolute there.
AGREEMENT = {("sgd", k): 1e-4 for k in NORMALISERS} | {("adam", k): 1e-4 for k in NORMALISERS} \
    | {("adam", "batchnorm"): 1e-3, ("adam", "batchrenorm"): 2e-2}


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
@pytest.mark.parametrize("kind", NORMALISERS)
def test_lockstep_agrees_with_plain_training(configured, kind, optimizer):
    """train_lockstep (seed 1 of seeds [0, 1]) against train_plain (nn.Sequential + torch.optim), 3 epochs."""
    x, y = blobs()
    spec = mlp.NetSpec(kind)
    recipe = train.Recipe(optimizer=optimizer, lr=1e-3 if optimizer == "adam" else 0.05, batch_size=16, epochs=3,
                          renorm_warmup=0.0, renorm_rmax_full=0.5, renorm_dmax_full=0.5)
    stacked, log = train.train_lockstep(spec, recipe, [0, 1], x, y)
    net = train.train_plain(spec, recipe, 1, x, y)
    lockstep_logits = mlp.forward(stacked, spec, x.expand(2, -1, -1), train=False)[1]
    with torch.no_grad():
        plain_logits = net.eval()(x)
    tol = AGREEMENT[(optimizer, kind)]
    scale = plain_logits.abs().max()
    assert (lockstep_logits - plain_logits).abs().max() <= tol * scale
    assert torch.equal(lockstep_logits.argmax(1), plain_logits.argmax(1))
    plain_state = net.state_dict()
    for k in plain_state:
        if "running" in k:
            bound = 1e-2 if optimizer == "adam" and kind in BATCH_NORMALISERS else tol * (1 + plain_state[k].abs().max())
            assert (stacked[k][1] - plain_state[k]).abs().max() <= bound, k
        if k.endswith("num_batches_tracked"):
            assert int(stacked[k][1]) == int(plain_state[k]) == 3 * 16
    assert [r["epoch"] for r in log if r["seed"] == 1] == [1, 2, 3]


def test_epoch_log_scores_are_batch_mean_losses_and_row_accuracy(configured):
    g = torch.Generator().manual_seed(0)
    sizes = [4, 4, 4, 2]
    logits = torch.randn(2, sum(sizes), 10, generator=g)
    labels = torch.randint(0, 10, (2, sum(sizes)), generator=g)
    loss, accuracy = train._epoch_scores(logits, labels, sizes)
    for i in range(2):
        start, losses = 0, []
        for s in sizes:
            losses.append(F.cross_entropy(logits[i, start:start + s], labels[i, start:start + s]).item())
            start += s
        assert loss[i].item() == pytest.approx(sum(losses) / len(losses), rel=1e-6)
        assert accuracy[i].item() == pytest.approx((logits[i].argmax(1) == labels[i]).float().mean().item())


def test_cumulative_running_average_matches_plain_training(configured):
    """momentum=None (running statistics = average over all batches so far), as in BatchNorm1d."""
    x, y = blobs(n=128)
    spec = mlp.NetSpec("batchnorm", momentum=None)
    recipe = train.Recipe(optimizer="sgd", lr=0.05, batch_size=16, epochs=2)
    stacked, _ = train.train_lockstep(spec, recipe, [0], x, y)
    plain = train.train_plain(spec, recipe, 0, x, y).state_dict()
    for k in plain:
        if "running" in k:
            torch.testing.assert_close(stacked[k][0], plain[k], rtol=1e-5, atol=1e-5)
