"""The training-curves study: each cell's gain over its last epochs, the cells named as not finished,
the test accuracies beside the published baselines, the table, the figure and the config check."""

from __future__ import annotations

import copy

import pandas as pd
import pytest
import yaml

from bnstudy.base.config import ConfigError, check_cross_fields, parts
from bnstudy.studies.curves import checks, figure, report
from test_sentences import problems


def epochs_file(curve_by_seed: dict[int, list[float]]) -> pd.DataFrame:
    """An epochs file: one row per seed and epoch, the validation accuracies given."""
    rows = []
    for seed, curve in curve_by_seed.items():
        for e, v in enumerate(curve, start=1):
            rows.append({"seed": seed, "epoch": e, "loss": 1.0 / e, "train_accuracy": v, "validation_accuracy": v})
    return pd.DataFrame(rows)


FLAT = {0: [0.50, 0.80, 0.850, 0.851, 0.852], 1: [0.50, 0.80, 0.850, 0.852, 0.853]}
RISING = {0: [0.50, 0.60, 0.700, 0.750, 0.800], 1: [0.50, 0.60, 0.700, 0.760, 0.790]}


def table(last=3, threshold=0.003):
    files = [("none", 2, epochs_file(FLAT)), ("batchnorm", 2, epochs_file(RISING)), ("none", 8, epochs_file(FLAT))]
    epochs = report.epochs_table(files)
    return report.cells(epochs, ["none", "batchnorm"], last, threshold), epochs


def test_a_cells_gain_is_the_mean_over_seeds_of_last_minus_k_epochs_before():
    cells, _ = table(last=3)
    bn = cells[(cells.normaliser == "batchnorm") & (cells.batch_size == 2)].iloc[0]
    # seed 0: 0.80 - 0.60 = 0.20; seed 1: 0.79 - 0.60 = 0.19
    assert bn["gain"] == pytest.approx(0.195)
    assert (bn["gain_min"], bn["gain_max"]) == pytest.approx((0.19, 0.20))
    assert bn["validation_accuracy"] == pytest.approx(0.795)
    none = cells[(cells.normaliser == "none") & (cells.batch_size == 2)].iloc[0]
    assert none["gain"] == pytest.approx((0.852 - 0.80 + 0.853 - 0.80) / 2)


def test_a_cell_is_finished_only_at_or_below_the_threshold():
    cells, _ = table(last=1, threshold=0.003)
    finished = {(r.normaliser, r.batch_size): r.finished for r in cells.itertuples()}
    assert finished == {("none", 2): True, ("none", 8): True, ("batchnorm", 2): False}
    cells, _ = table(last=1, threshold=0.0005)
    assert not cells[cells.normaliser == "none"]["finished"].any()  # none gains 0.1 points over its last epoch


def test_cells_follow_the_configs_normaliser_order():
    cells, _ = table()
    assert list(cells.normaliser) == ["none", "none", "batchnorm"]


def test_too_few_epochs_for_the_last_epochs_is_an_error():
    with pytest.raises(ValueError, match="not more than last_epochs"):
        table(last=5)


def test_an_epochs_file_without_validation_accuracy_is_refused():
    bare = epochs_file(FLAT).drop(columns=["validation_accuracy"])
    with pytest.raises(ValueError, match="no validation split"):
        report.epochs_table([("none", 2, bare)])


def test_the_sentence_names_every_unfinished_cell_with_its_gain():
    cells, _ = table(last=2)
    text = report.unfinished_sentence(cells, 2, 0.003)
    assert text.startswith("One of the 3 cells gained more than $0.3$ points")
    assert "batch norm at $b = 2$ ($+9.50$)" in text and "not finished" in text
    text = report.unfinished_sentence(table(last=3)[0], 3, 0.003)
    assert text.startswith("All 3 cells gained more than")
    assert "no normaliser at $b = 8$ ($+5.25$)" in text and "none at" not in text


def test_the_sentence_says_every_cell_finished_when_none_gained_above_the_threshold():
    cells, _ = table(last=1, threshold=0.003)
    finished = cells[cells.finished]
    text = report.unfinished_sentence(finished, 1, 0.003)
    assert text.startswith("Every cell gained at most $0.3$ points of validation accuracy over the last epoch ")
    assert "reached its validation plateau" in text


def accuracy_rows():
    rows = []
    for name, b, acc in (("none", 2, 0.90), ("none", 8, 0.91), ("batchnorm", 2, 0.70)):
        for seed in (0, 1):
            rows.append({"normaliser": name, "batch_size": b, "seed": seed, "mode": "inference", "accuracy": acc})
            rows.append({"normaliser": name, "batch_size": b, "seed": seed, "mode": "training", "accuracy": 0.1})
    return pd.DataFrame(rows)


def test_test_accuracy_is_the_inference_mode_mean_over_seeds():
    tests = report.test_accuracy(accuracy_rows(), ["none", "batchnorm"])
    assert list(zip(tests.normaliser, tests.batch_size)) == [("none", 2), ("none", 8), ("batchnorm", 2)]
    assert list(tests.test_accuracy) == pytest.approx([0.90, 0.91, 0.70])


BASELINES = [
    {"what": "two convolutions with pooling", "low": 0.916, "high": 0.916, "cite": "xiao2017"},
    {"what": "the benchmark's MLPs", "low": 0.87, "high": 0.88, "cite": "xiao2017"},
]


def test_the_baselines_sentence_sets_our_best_and_worst_cell_beside_each_published_value():
    tests = report.test_accuracy(accuracy_rows(), ["none", "batchnorm"])
    text = report.baselines_sentence(tests, BASELINES, 55000, "10 epochs")
    assert "Our best cell, no normaliser at $b = 8$, scores 91.0\\%" in text
    assert "$b = 2$, 70.0\\%" in text
    assert "91.6\\% for two convolutions with pooling~\\cite{xiao2017}" in text
    assert "87--88\\% for the benchmark's MLPs" in text
    assert "55{,}000 images" in text and "not to match these" in text
    assert "Published" not in report.baselines_sentence(tests, [], 55000, "10 epochs")
    # a tie at the top (the digits' batch norm at b = 32 and 64 score alike to the last row): both named
    tied = tests.assign(test_accuracy=[0.91, 0.91, 0.70])
    text = report.baselines_sentence(tied, [], 55000, "10 epochs")
    assert text.startswith("Our best cells, no normaliser at $b = 2$ and no normaliser at $b = 8$, score 91.0\\%")
    assert "our worst, batch norm at $b = 2$, 70.0\\%." in text and not problems(text)


def test_the_table_marks_an_unfinished_cell_with_a_dagger_and_prints_its_test_accuracy():
    cells, _ = table(last=2)
    tests = report.test_accuracy(accuracy_rows(), ["none", "batchnorm"])
    header, rows, align, _ = report.latex_table(cells, tests)
    assert header == ["", "$b = 2$", "$b = 8$"] and align == "lrr"
    bn = next(r for r in rows if "atch" in r[0])
    assert "$^\\dagger$" in bn[1] and bn[1].endswith(" 70.0") and bn[2] == "--"
    none = rows[0]
    assert "dagger" not in none[1]


def test_the_figure_has_a_panel_per_batch_size_and_a_line_per_normaliser():
    _, epochs = table()
    fig = figure.curves(report.by_epoch(epochs, ["none", "batchnorm"]), fig_width=6.0)
    axes = fig.get_axes()
    assert [ax.get_title() for ax in axes] == ["$b = 2$", "$b = 8$"]
    assert len(axes[0].get_lines()) == 2 and len(axes[1].get_lines()) == 1
    styles = {(line.get_marker(), line.get_linestyle()) for line in axes[0].get_lines()}
    assert len(styles) == 2  # told apart without colour


def fashion_config():
    with open("config/fashion-cnn.yaml") as f:
        return yaml.safe_load(f)


def test_the_committed_fashion_configs_pass_the_check():
    for name in ("config/fashion-cnn.yaml", "config/fashion-mlp.yaml"):
        with open(name) as f:
            config = yaml.safe_load(f)
        checks.check(config, parts(config))


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda c: (c["grid"].update(epochs=20), c["curves"].update(last_epochs=20)),
            "curves.last_epochs: 20 is not fewer than the grid's 20",
        ),
        (
            lambda c: c["grid"].update(epochs_by_batch_size=[{"batch_size": 128, "epochs": 3}]),
            "curves.last_epochs: 3 is not fewer than the grid's 3",  # the fewest epochs of any batch size
        ),
        (lambda c: c["curves"]["baselines"][1].update(low=0.9), "curves.baselines[1]: low 0.9 is above high"),
    ],
)
def test_the_check_refuses_in_one_line(edit, message):
    config = copy.deepcopy(fashion_config())
    edit(config)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        checks.check(config, None)


def test_a_rate_for_a_batch_size_outside_the_grid_is_refused_before_any_job():
    config = copy.deepcopy(fashion_config())
    config["grid"]["lr_by_batch_size"] = [{"batch_size": 4, "lr": 1e-3}]
    with pytest.raises(ConfigError, match=r"grid.lr_by_batch_size\[0\].batch_size: 4 is not one of"):
        check_cross_fields(config)
    config["grid"]["lr_by_batch_size"] = [{"batch_size": 2, "lr": 1e-3}, {"batch_size": 2, "lr": 1e-4}]
    with pytest.raises(ConfigError, match="given a rate twice"):
        check_cross_fields(config)


def test_epochs_for_a_batch_size_outside_the_grid_twice_or_with_fewer_steps_are_refused_before_any_job():
    config = copy.deepcopy(fashion_config())
    config["grid"]["epochs_by_batch_size"] = [{"batch_size": 4, "epochs": 30}]
    with pytest.raises(ConfigError, match=r"grid.epochs_by_batch_size\[0\].batch_size: 4 is not one of"):
        check_cross_fields(config)
    config["grid"]["epochs_by_batch_size"] = [{"batch_size": 2, "epochs": 5}, {"batch_size": 2, "epochs": 6}]
    with pytest.raises(ConfigError, match="given its epochs twice"):
        check_cross_fields(config)
    # 10,000 rows: batch 32 at 20 epochs takes 312 x 20 = 6,240 steps; batch 128 at 80 takes 78 x 80 = 6,240
    config["grid"]["epochs"] = 20  # whatever the committed config trains
    config["grid"]["epochs_by_batch_size"] = [{"batch_size": 128, "epochs": 80}]
    with pytest.raises(ConfigError, match="batch 32 takes 6240 steps, not more than batch 128's 6240"):
        check_cross_fields(config)
    config["grid"]["epochs_by_batch_size"] = [{"batch_size": 128, "epochs": 79}]
    check_cross_fields(config)


def test_the_epochs_in_words_name_the_batch_sizes_that_train_for_other_epochs():
    table = pd.DataFrame({"normaliser": ["none"] * 4, "batch_size": [2, 8, 32, 128], "epochs": [10, 20, 20, 20]})
    assert report.epochs_words(table) == "20 (10 at batch 2)"
    assert report.epochs_words(table, " epochs") == "20 epochs (10 at batch 2)"
    assert report.epochs_words(table.assign(epochs=20)) == "20"


def test_the_noise_sentence_compares_one_accuracys_standard_error_with_the_threshold():
    cells, _ = table(last=2)
    text = report.noise_sentence(cells, 5000, 0.003)
    p = report.mean_of(cells["validation_accuracy"])
    se = (p * (1 - p) / 5000) ** 0.5
    assert f"{100 * se:.2f} points over the 5{{,}}000 validation images, larger than the threshold" in text
    assert "smaller than the threshold" in report.noise_sentence(cells, 10**7, 0.003)


def test_a_cells_gains_that_cancel_over_seeds_are_zero_not_a_residue():
    """Two networks whose last-epoch gains cancel (counts over 899 rows): the cell's gain is 0.0, not
    the float residue the table printed as '+4 x 10^-15'."""
    import pandas as pd

    from bnstudy.studies.curves import report as curves_report

    rows = []
    for seed, (before, after) in enumerate([(12, 19), (40, 33)]):
        for epoch, correct in ((1, before), (2, after)):
            rows.append({"normaliser": "batchnorm", "batch_size": 4, "seed": seed, "epoch": epoch,
                         "validation_accuracy": correct / 899})  # fmt: skip
    epochs = pd.DataFrame(rows)
    gains = [19 / 899 - 12 / 899, 33 / 899 - 40 / 899]
    assert sum(gains) != 0  # the residue
    cell = curves_report.cells(epochs, ["batchnorm"], 1, 0.003).iloc[0]
    assert cell["gain"] == 0.0 and bool(cell["finished"])
