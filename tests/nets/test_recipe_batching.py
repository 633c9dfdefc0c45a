"""The training recipe, batch renorm's ramps, the batch order and the fixed-order
reductions' Python wrappers, by value on tiny inputs."""

import numpy as np
import pytest

from bnstudy.base.runtime import STREAM_ORDER, derive_seed
from bnstudy.compiled import reductions
from bnstudy.nets import batching, recipe

# ---- recipe ----------------------------------------------------------------------


def test_recipe_from_params_keeps_only_its_fields():
    r = recipe.Recipe.from_params({"lr": 0.5, "batch_size": 8, "network": "x", "epochs": 3})
    assert r == recipe.Recipe(lr=0.5, batch_size=8, epochs=3)
    assert r.optimizer == "adam" and r.order == "shuffle" and r.last_batch == "drop"


def test_recipe_metadata_round_trip_restores_types():
    r = recipe.Recipe(
        optimizer="sgd",
        lr=0.05,
        sgd_momentum=0.8,
        batch_size=16,
        epochs=7,
        order="class_sorted",
        last_batch="keep",
        renorm_rmax=2.5,
        renorm_dmax=4.0,
        renorm_warmup=0.1,
        renorm_rmax_full=0.5,
        renorm_dmax_full=0.3,
    )
    meta = r.metadata()
    assert meta["batch_size"] == "16" and meta["lr"] == "0.05" and meta["optimizer"] == "sgd"
    assert all(isinstance(v, str) for v in meta.values())
    back = recipe.Recipe.from_metadata(meta | {"normaliser": "batchnorm"})
    assert back == r and isinstance(back.batch_size, int) and isinstance(back.lr, float)
    assert recipe.Recipe.from_metadata({"epochs": "2"}) == recipe.Recipe(epochs=2)


@pytest.mark.parametrize(
    "n, b, last, sizes",
    [
        (10, 4, "drop", [4, 4]),
        (10, 4, "keep", [4, 4, 2]),
        (9, 4, "keep", [4, 4]),  # a leftover of one row is always dropped
        (8, 4, "keep", [4, 4]),
        (11, 4, "keep", [4, 4, 3]),
        (3, 4, "keep", [3]),
        (3, 4, "drop", []),
        (898, 64, "drop", [64] * 14),
    ],
)
def test_batch_sizes_per_epoch_by_hand(n, b, last, sizes):
    assert recipe.batch_sizes_per_epoch(n, b, last) == sizes
    assert recipe.steps_per_epoch(n, b, last) == len(sizes)


def test_batch_sizes_default_drops_and_unknown_last_batch_is_refused():
    assert recipe.batch_sizes_per_epoch(10, 4) == [4, 4]
    assert recipe.steps_per_epoch(10, 4) == 2
    with pytest.raises(ValueError, match="unknown last_batch 'kep'"):
        recipe.batch_sizes_per_epoch(10, 4, "kep")


def test_renorm_schedule_at_its_milestones_by_hand():
    s = recipe.RenormSchedule(total_steps=100, rmax=3.0, dmax=5.0, warmup=0.1, rmax_full=0.5, dmax_full=0.3)
    assert s.limits(0) == (1.0, 0.0)
    assert s.limits(10) == (1.0, 0.0)  # t == warmup: still plain batch norm
    assert s.limits(20) == pytest.approx((1.0 + 2.0 * 0.1 / 0.4, 5.0 * 0.1 / 0.2))
    assert s.limits(30) == pytest.approx((1.0 + 2.0 * 0.2 / 0.4, 5.0))  # dmax reached at 30 %
    assert s.limits(50) == pytest.approx((3.0, 5.0))
    assert s.limits(90) == (3.0, 5.0)
    assert s.final == (3.0, 5.0)
    # no steps: the milestones are read against one step
    z = recipe.RenormSchedule(total_steps=0)
    assert z.limits(0) == (1.0, 0.0) and z.final == (1.0, 0.0)
    assert recipe.RenormSchedule(total_steps=1).limits(1) == (3.0, 5.0)


def test_renorm_schedule_defaults_are_ioffes():
    s = recipe.RenormSchedule(total_steps=1000)
    assert (s.rmax, s.dmax, s.warmup, s.rmax_full, s.dmax_full) == (3.0, 5.0, 0.05, 0.4, 0.25)


def test_renorm_schedule_of_a_recipe():
    r = recipe.Recipe(
        batch_size=4,
        epochs=3,
        last_batch="keep",
        renorm_rmax=2.0,
        renorm_dmax=1.0,
        renorm_warmup=0.2,
        renorm_rmax_full=0.6,
        renorm_dmax_full=0.4,
    )
    s = recipe.renorm_schedule("batchrenorm", r, 10)
    assert s == recipe.RenormSchedule(total_steps=9, rmax=2.0, dmax=1.0, warmup=0.2, rmax_full=0.6, dmax_full=0.4)
    assert recipe.renorm_schedule("batchnorm", r, 10) is None
    assert recipe.renorm_schedule("groupnorm", r, 10) is None


def test_final_limits_from_weights_metadata():
    meta = recipe.Recipe(batch_size=4, epochs=1, renorm_rmax=2.0, renorm_dmax=1.5).metadata()
    assert recipe.final_limits(meta | {"normaliser": "batchrenorm"}, 10) == (2.0, 1.5)
    assert recipe.final_limits(meta | {"normaliser": "batchnorm"}, 10) == (1.0, 0.0)
    assert recipe.final_limits(meta, 10) == (1.0, 0.0)
    short = recipe.Recipe(batch_size=4, epochs=10, renorm_rmax=2.0, renorm_dmax=1.5).metadata()
    assert recipe.final_limits(short | {"normaliser": "batchrenorm"}, 10) == (2.0, 1.5)


# ---- batch order -------------------------------------------------------------------


def test_order_generator_is_the_order_stream_of_the_seed():
    a = batching.order_generator(7).integers(0, 2**62, size=4)
    b = np.random.default_rng(derive_seed(7, STREAM_ORDER)).integers(0, 2**62, size=4)
    assert a.tolist() == b.tolist()


def test_shuffled_epoch_is_the_generators_permutation_cut_into_batches():
    labels = np.arange(10) % 3
    batches = batching.epoch_batches(np.random.default_rng(5), labels, 4)
    perm = np.random.default_rng(5).permutation(10)
    assert [b.tolist() for b in batches] == [perm[:4].tolist(), perm[4:8].tolist()]
    kept = batching.epoch_batches(np.random.default_rng(5), labels, 4, last_batch="keep")
    assert [b.tolist() for b in kept] == [perm[:4].tolist(), perm[4:8].tolist(), perm[8:].tolist()]
    rows = batching.epoch_rows(np.random.default_rng(5), labels, 4, last_batch="keep")
    assert rows.tolist() == perm.tolist()
    assert batching.epoch_rows(np.random.default_rng(5), labels, 4).tolist() == perm[:8].tolist()


def test_class_sorted_epoch_by_hand():
    labels = np.array([2, 0, 1, 0, 2, 1, 0, 1, 2, 0, 1])  # 11 rows
    rng = np.random.default_rng(3)
    batches = batching.epoch_batches(rng, labels, 4, order="class_sorted", last_batch="keep")
    ref = np.random.default_rng(3)
    perm = ref.permutation(11)
    perm = perm[np.argsort(labels[perm], kind="stable")]
    cut = [perm[0:4], perm[4:8], perm[8:11]]
    order = ref.permutation(2)
    expected = [cut[order[0]], cut[order[1]], cut[2]]
    assert [b.tolist() for b in batches] == [e.tolist() for e in expected]
    assert rng.integers(0, 2**62) == ref.integers(0, 2**62), "one draw for the batch order, no more"
    # each full batch holds at most two classes, sorted
    for b in batches:
        assert np.all(np.diff(labels[b]) >= 0)


def test_class_sorted_keeps_every_row_once_and_drops_as_asked():
    labels = np.repeat(np.arange(4), 6)
    for seed in range(5):
        b = batching.epoch_batches(np.random.default_rng(seed), labels, 5, order="class_sorted")
        assert [len(x) for x in b] == [5] * 4
        rows = np.concatenate(b)
        assert len(set(rows.tolist())) == 20
        assert all(len(set(labels[x].tolist())) <= 2 for x in b)


def test_unknown_order_is_refused():
    with pytest.raises(ValueError, match="unknown order 'sorted'"):
        batching.epoch_batches(np.random.default_rng(0), np.zeros(8), 4, order="sorted")
    assert batching.ORDERS == ("shuffle", "class_sorted")


# ---- reductions: the Python wrappers around the compiled loops -----------------------


def test_column_moments_by_hand():
    mean, var = reductions.column_moments(np.array([[1.0, 2.0], [3.0, 2.0], [5.0, 8.0]]))
    assert mean.tolist() == [3.0, 4.0]
    assert var.tolist() == [8.0 / 3.0, 8.0]  # ddof 0
    mean, var = reductions.column_moments(np.array([[1, 2]], dtype=np.int64))
    assert mean.tolist() == [1.0, 2.0] and var.tolist() == [0.0, 0.0] and mean.dtype == np.float64
    f = np.asfortranarray(np.array([[1.0, 4.0], [3.0, 8.0]]))
    assert reductions.column_moments(f)[1].tolist() == [1.0, 4.0]
    for bad in (np.zeros(3), np.zeros((0, 2)), np.zeros((2, 2, 2))):
        with pytest.raises(ValueError, match="non-empty 2-D"):
            reductions.column_moments(bad)


def test_weighted_column_sums_by_hand():
    out = reductions.weighted_column_sums(np.array([1.0, 2.0, -1.0]), np.array([[1.0, 0.5], [2.0, 1.0], [4.0, 3.0]]))
    assert out.tolist() == [1.0, -0.5]
    out = reductions.weighted_column_sums(np.array([2, 3]), np.array([[1, 2], [3, 4]], dtype=np.int32))
    assert out.tolist() == [11.0, 16.0] and out.dtype == np.float64
    # float32 inputs are widened before they are multiplied: float64 products, not float32 ones
    w32 = np.array([0.1, 0.7, 1.3], np.float32)
    a32 = np.array([[1.1], [2.3], [3.7]], np.float32)
    p = [float(w32[i]) * float(a32[i, 0]) for i in range(3)]  # float64 products
    assert reductions.weighted_column_sums(w32, a32).tolist() == [(p[0] + p[1]) + p[2]]  # added in row order
    p32 = [float(np.float32(w32[i] * a32[i, 0])) for i in range(3)]  # what float32 products would give
    assert (p32[0] + p32[1]) + p32[2] != (p[0] + p[1]) + p[2]
    with pytest.raises(ValueError, match="do not match"):
        reductions.weighted_column_sums(np.ones(2), np.ones((3, 2)))
    with pytest.raises(ValueError, match="do not match"):
        reductions.weighted_column_sums(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="do not match"):
        reductions.weighted_column_sums(np.ones((3, 1)), np.ones((3, 2)))


def test_sum_of_squares_and_rms_by_hand():
    assert reductions.sum_of_squares(np.array([[1.0, 2.0], [3.0, 4.0]])) == 30.0
    assert reductions.sum_of_squares([3, 4]) == 25.0
    assert isinstance(reductions.sum_of_squares([1]), float)
    assert reductions.rms(np.array([[3.0, 4.0], [0.0, 0.0]])) == 2.5
    assert reductions.rms([2.0]) == 2.0
    assert isinstance(reductions.rms([2.0]), float)
    with pytest.raises(ValueError, match="^rms of an empty array$"):
        reductions.rms(np.zeros((0, 3)))


def test_renorm_schedule_of_one_step_reads_the_step_against_one():
    s = recipe.RenormSchedule(total_steps=1, warmup=0.6, rmax_full=0.8, dmax_full=0.7)
    assert s.limits(1) == (3.0, 5.0)  # t = 1, past every milestone


def test_class_sorted_order_is_stable_within_a_class_on_many_rows():
    """Stable sorting keeps the permuted order within a class (an unstable sort of
    tied labels need not, on long arrays)."""
    labels = np.random.default_rng(0).integers(0, 3, size=300)
    for seed in range(3):
        rows = batching.epoch_rows(np.random.default_rng(seed), labels, 300, order="class_sorted")
        perm = np.random.default_rng(seed).permutation(300)
        expected = np.concatenate([perm[labels[perm] == c] for c in range(3)])
        assert rows.tolist() == expected.tolist()


def test_reductions_widen_float32_before_multiplying():
    """Products are taken in float64: float32 products would round."""
    w = np.array([1.1, 3.3], np.float32)
    a = np.array([[1.3], [0.7]], np.float32)
    expected = float(np.float64(w[0]) * np.float64(a[0, 0])) + float(np.float64(w[1]) * np.float64(a[1, 0]))
    assert reductions.weighted_column_sums(w, a).tolist() == [expected]
    v = np.array([1.1, 2.3, 0.7], np.float32)
    wide = v.astype(np.float64)
    assert reductions.sum_of_squares(v) == float(wide[0] * wide[0] + wide[1] * wide[1] + wide[2] * wide[2])
    assert reductions.rms(v) == float(np.sqrt((wide[0] * wide[0] + wide[1] * wide[1] + wide[2] * wide[2]) / 3))


def test_learning_rate_scales_per_epoch_and_the_metadata_of_a_run_without_decay():
    assert recipe.lr_scales(recipe.Recipe(epochs=4)).tolist() == [1.0, 1.0, 1.0, 1.0]
    linear = recipe.lr_scales(recipe.Recipe(epochs=4, lr_schedule="linear"))
    assert linear.dtype == np.float64 and linear.tolist() == [1.0, 0.75, 0.5, 0.25]
    assert recipe.lr_scales(recipe.Recipe(epochs=3, lr_schedule="linear")).tolist() == [1.0, 2 / 3, 1 / 3]
    with pytest.raises(ValueError, match="unknown lr_schedule 'cosine'"):
        recipe.lr_scales(recipe.Recipe(lr_schedule="cosine"))
    # weights files of runs without a decay are as before it existed; with one they say so, and read back
    assert "lr_schedule" not in recipe.Recipe().metadata()
    meta = recipe.Recipe(lr_schedule="linear").metadata()
    assert meta["lr_schedule"] == "linear" and recipe.Recipe.from_metadata(meta).lr_schedule == "linear"
