"""Issue 15's statistics: stratified bootstrap, the any-class design and its mixture prediction,
the design macros that replace typed numbers."""

from __future__ import annotations

import numpy as np
import pytest

from bnstudy.base import stats
from bnstudy.paper import design
from bnstudy.studies.companions import draws
from bnstudy.studies.companions import science as companions


def test_stratified_bootstrap_keeps_class_counts_so_constant_classes_give_no_spread():
    # values constant within each class: every stratified resample has the same mean
    strata = np.repeat(np.arange(4), 5)
    values = strata.astype(float)
    lo, hi = stats.bootstrap_examples(values, 500, 0.95, np.random.default_rng(0), strata=strata)
    assert lo == pytest.approx(values.mean()) and hi == pytest.approx(values.mean())
    lo, hi = stats.bootstrap_examples(values, 500, 0.95, np.random.default_rng(0))
    assert hi - lo > 0.1


def test_stratified_bootstrap_by_hand_for_one_stratum_is_the_plain_bootstrap():
    v = np.array([0.1, 0.5, 0.2, 0.9])
    plain = stats.bootstrap_examples(v, 300, 0.9, np.random.default_rng(3))
    one = stats.bootstrap_examples(v, 300, 0.9, np.random.default_rng(3), strata=np.zeros(4))
    assert plain == one


def test_any_class_batches_draw_one_class_from_all_classes_the_own_included():
    y = np.arange(600) % 10
    example = 23
    batches = draws.one_class_batches(y, example, 16, 400, seed=0, own="any")
    assert (batches[:, 0] == example).all() and (batches[:, 1:] != example).all()
    classes = y[batches[:, 1:]]
    assert (classes == classes[:, :1]).all()
    assert set(classes[:, 0].tolist()) == set(range(10))  # the example's own class (3) included
    assert all(len(set(row.tolist())) == 16 for row in batches)


def test_other_class_draws_are_unchanged_by_the_any_class_design():
    y = np.arange(899) % 10
    other = draws.one_class_batches(y, 23, 16, 40, 0, own=False)
    assert (y[other[:, 1:]] != y[23]).all()
    assert not np.array_equal(other, draws.one_class_batches(y, 23, 16, 40, 0, own="any"))


def test_mixture_flip_rate_by_hand():
    assert companions.mixture_flip_rate(0.870, 0.146, 10) == pytest.approx(0.1 * 0.870 + 0.9 * 0.146)


def test_two_row_output_is_one_only_in_the_limit():
    assert design.two_row_output(np.sqrt(1e-5), 1e-5) == pytest.approx(1 / np.sqrt(2))
    assert design.two_row_output(1.0, 1e-5) < 1.0
    assert design.two_row_output(1.0, 0.0) == 1.0


def test_pooled_rows_sentence_counts_the_rows_a_pass_keeps():
    assert design.pooled_rows_sentence("drop", [2, 64], 898) == (
        "it pools 898 of the 898 rows at batch 2 and 896 of the 898 rows at batch 64"
    )
    assert design.pooled_rows_sentence("keep", [64], 898) == "it pools 898 of the 898 rows at batch 64"


def test_monotone_sentence_is_true_of_the_means():
    from bnstudy.studies.running_stats import science as running_stats

    assert running_stats.monotone_sentence({8: 0.1, 32: 0.2, 256: 1.0}) == "rises with every step in batch size"
    text = running_stats.monotone_sentence({8: 0.12, 16: 0.09, 32: 0.2, 256: 1.0})
    assert text.startswith("is not monotone") and "from $b=8$ to $b=16$, where it is smallest" in text


def test_replicate_shuffles_differ_and_shuffle_zero_is_the_single_pass():
    from bnstudy.nets import data
    from bnstudy.studies.running_stats import science as running_stats

    x = data.synthetic_population(0, 64, 5)
    rows = running_stats.replicated_study(x, [8], 0.9, seed=0, shuffles=3)
    ema = [r for r in rows if r["estimator"] == "ema"]
    assert [r["shuffle"] for r in ema] == [0, 1, 2]
    assert len({r["running_error"] for r in ema}) == 3
    single = [r for r in running_stats.study(x, [8], [0.9], "shuffled", 0) if r["estimator"] == "ema"][0]
    assert ema[0]["running_error"] == single["running_error"]


def test_shuffle_summary_is_the_t_interval_over_shuffles_on_the_log_scale():
    import pandas as pd
    from scipy import stats as sps

    from bnstudy.studies.running_stats import shuffles as running_stats_shuffles

    vals = [0.11, 0.14, 0.09]
    shuffles = pd.DataFrame(
        [
            {
                "estimator": "ema",
                "batch_size": 8,
                "updates": 64,
                "shuffle": i,
                "running_error": v,
                "train_eval_rmse": 0.3,
            }
            for i, v in enumerate(vals)
        ]
    )
    s = running_stats_shuffles.shuffle_summary_table(shuffles, 0.95)
    r = s[s.metric == "running_error"].iloc[0]
    # the error cannot be negative: the t interval is formed on the log scale (delta method,
    # standard error of the log = sem / mean) and mapped back
    mean, sem = np.mean(vals), sps.sem(vals)
    half = sps.t.ppf(0.975, 2) * sem / mean
    lo, hi = mean * np.exp(-half), mean * np.exp(half)
    assert r["shuffles"] == 3 and (r.ci_low, r.ci_high) == pytest.approx((lo, hi))
    assert 0 < r.ci_low < mean < r.ci_high


def test_the_leftover_rows_are_counted_at_each_batch_size_and_none_is_said():
    from bnstudy.paper.design import last_batch_sentence, leftover_counts

    assert leftover_counts(898, [2, 4, 8, 16, 32, 64]) == "none at batch 2, 2 rows at batches 4, 8, 16, 32 and 64"
    assert leftover_counts(10000, [2, 8]) == "none at any batch size"
    assert (
        leftover_counts(55000, [2, 8, 32, 128]) == "none at batches 2 and 8, 24 rows at batch 32, 88 rows at batch 128"
    )
    assert "(1 row at batch 3)" in last_batch_sentence("keep", [3], 10)


def test_the_grids_normalisers_are_named_for_the_sentences_about_them():
    from bnstudy.paper.design import grid_kind_macros

    every = grid_kind_macros(["none", "batchnorm", "batchrenorm", "layernorm", "groupnorm", "rmsnorm"])
    assert {"gridHasRenorm", "gridHasLayernorm", "gridHasGroupnorm"} <= set(every)
    assert every["gridControlWords"] == "without a normaliser or with layer, group or RMS normalisation"
    cnn = grid_kind_macros(["none", "batchnorm", "groupnorm"])
    assert "gridHasRenorm" not in cnn and "gridHasLayernorm" not in cnn
    assert cnn["gridControlWords"] == "without a normaliser or with group normalisation"
    assert cnn["gridNoStatsSentence"].startswith("Group normalisation has no batch statistics, so its two")
    assert every["gridNoStatsSentence"].startswith("Layer, group and RMS normalisation have no batch statistics")
    assert "gridNoStatsSentence" not in grid_kind_macros(["none", "batchnorm"])


@pytest.mark.parametrize("grid", ["drop", "keep"])
@pytest.mark.parametrize("dependence", ["drop", "keep"])
def test_the_last_batch_is_said_unstated_by_the_published_text_in_every_variant(grid, dependence):
    """The published text does not say how an epoch's last batch was handled: no variant claims it
    did; each cites PyTorch's DataLoader default and names the parts that drop the batch."""
    from bnstudy.paper.design import last_batch_departure

    text = last_batch_departure(grid, dependence)
    assert text.startswith("The published text does not say how an epoch's last, smaller batch was handled; ")
    default = "\\texttt{drop\\_last=True} (\\texttt{drop\\_last} defaults to \\texttt{False})"
    assert f"{default}~\\cite{{torchdataloader}}" in text
    assert "default data loader" not in text and "as the published study used" not in text
    assert text.endswith(".") and "  " not in text
    dropped = [name for name, p in (("the grid", grid), ("the dependence network", dependence)) if p == "drop"]
    if dropped:
        assert f"so dropping it for {' and '.join(dropped)} may depart from the published protocol." in text
    else:
        assert "we keep it, as PyTorch's \\texttt{DataLoader} does unless given" in text
