"""The training curves without a validation split (the digits): each cell's gain in training accuracy
and change of training loss over its last epochs, by hand on small tables; every variant of the
generated sentences; the table, the figure and the config check on the digits configs."""

from __future__ import annotations

import copy

import pandas as pd
import pytest
import yaml

from bnstudy.base import normalisers
from bnstudy.base.config import ConfigError, parts
from bnstudy.paper import figures
from bnstudy.studies.curves import checks, figure, report, training
from conftest import ROOT


def epochs_file(curves: dict[int, list[tuple[float, float]]]) -> pd.DataFrame:
    """A digits epochs file: one row per seed and epoch, ``(loss, train_accuracy)`` given, no
    validation accuracy."""
    rows = []
    for seed, curve in curves.items():
        for e, (loss, acc) in enumerate(curve, start=1):
            rows.append({"seed": seed, "epoch": e, "loss": loss, "train_accuracy": acc})
    return pd.DataFrame(rows)


# binary fractions: every mean and difference below is exact
FITTED = {
    0: [(1.0, 0.5), (0.5, 1.0), (0.25, 1.0), (0.125, 1.0)],
    1: [(1.0, 0.5), (0.5, 0.75), (0.5, 1.0), (0.25, 1.0)],
}
GAINING = {
    0: [(2.0, 0.25), (1.5, 0.5), (1.0, 0.5), (1.0, 0.75)],
    1: [(2.0, 0.25), (1.0, 0.5), (1.0, 0.625), (1.0, 0.5)],
}
RISING_LOSS = {seed: [(0.5, 0.5), (0.5, 0.75), (0.5, 0.75), (0.75, 0.75)] for seed in (0, 1)}


def table(last=2, threshold=0.003, files=None):
    files = files or [("none", 2, FITTED), ("batchnorm", 2, GAINING), ("none", 8, RISING_LOSS)]
    epochs = training.epochs_table([(n, b, epochs_file(c)) for n, b, c in files])
    return training.cells(epochs, ["none", "batchnorm"], last, threshold), epochs


def cell(cells, name, b):
    return cells[(cells.normaliser == name) & (cells.batch_size == b)].iloc[0]


def test_a_cells_gain_and_loss_change_are_worked_by_hand():
    cells, _ = table(last=2)
    bn = cell(cells, "batchnorm", 2)
    # seed 0: 0.75 - 0.5 = 0.25; seed 1: 0.5 - 0.5 = 0
    assert (bn["gain"], bn["gain_min"], bn["gain_max"]) == (0.125, 0.0, 0.25)
    assert bn["train_accuracy"] == 0.625 and bn["epochs"] == 4 and bn["seeds"] == 2
    # mean loss: epoch 4 (1.0 + 1.0) / 2 = 1.0, epoch 2 (1.5 + 1.0) / 2 = 1.25: 1.0 / 1.25 - 1 = -0.2
    assert (bn["loss"], bn["loss_before"]) == (1.0, 1.25)
    assert bn["loss_change"] == pytest.approx(-0.2, abs=1e-15)
    none = cell(cells, "none", 2)
    # seed 0: 1.0 - 1.0; seed 1: 1.0 - 0.75; loss (0.125 + 0.25) / 2 over (0.5 + 0.5) / 2
    assert (none["gain"], none["loss"], none["loss_before"]) == (0.125, 0.1875, 0.5)
    assert none["loss_change"] == pytest.approx(0.1875 / 0.5 - 1)
    assert none["fitted"] == 2 and bn["fitted"] == 0
    assert cell(cells, "none", 8)["loss_change"] == 0.5


def test_a_cell_is_at_its_plateau_only_at_or_below_the_threshold():
    cells, _ = table(last=2, threshold=0.125)  # two cells gain exactly 0.125: at the threshold
    assert {(r.normaliser, r.batch_size): r.plateau for r in cells.itertuples()} == {
        ("none", 2): True, ("none", 8): True, ("batchnorm", 2): True}  # fmt: skip
    cells, _ = table(last=2, threshold=0.1)
    assert list(cells.plateau) == [False, True, False]  # none at 8 gains 0 over its last two epochs
    cells, _ = table(last=1, threshold=0.003)
    # last epoch: none at 2 gains 0, batch norm at 2 gains (0.25 - 0.125) / 2 = 0.0625 > 0.003
    assert cell(cells, "batchnorm", 2)["gain"] == 0.0625 and not cell(cells, "batchnorm", 2)["plateau"]


def test_cells_follow_the_configs_normaliser_order_and_too_few_epochs_are_refused():
    cells, _ = table()
    assert list(zip(cells.normaliser, cells.batch_size)) == [("none", 2), ("none", 8), ("batchnorm", 2)]
    with pytest.raises(ValueError, match="not more than last_epochs"):
        table(last=4)
    with pytest.raises(ValueError, match=r"lacks \['train_accuracy'\]"):
        training.epochs_table([("none", 2, epochs_file(FITTED).drop(columns=["train_accuracy"]))])


def test_a_digits_epochs_file_is_still_refused_by_the_validation_mode():
    with pytest.raises(ValueError, match="no validation split"):
        report.epochs_table([("none", 2, epochs_file(FITTED))])


def test_by_epoch_is_the_mean_over_seeds_of_loss_and_training_accuracy():
    _, epochs = table()
    rows = training.by_epoch(epochs, ["none", "batchnorm"])
    assert list(rows.columns) == ["normaliser", "batch_size", "epoch", "seeds", "loss", "train_accuracy"]
    bn = rows[(rows.normaliser == "batchnorm") & (rows.epoch == 3)].iloc[0]
    assert (bn["loss"], bn["train_accuracy"], bn["seeds"]) == (1.0, 0.5625, 2)


def test_a_relative_change_of_zero_loss():
    assert training.relative_change(0.0, 0.0) == 0.0
    assert training.relative_change(0.5, 2.0) == -0.75
    with pytest.raises(ValueError):
        training.relative_change(0.1, 0.0)


def test_the_gaining_sentence_in_every_variant():
    cells, _ = table(last=2, threshold=0.1)
    text = training.gaining_sentence(cells, 2, 0.1)
    assert text.startswith("Two of the 3 cells gained more than $10.0$ points of training accuracy over the last two")
    assert "no normaliser at $b = 2$ ($+12.50$) and batch norm at $b = 2$ ($+12.50$)" in text
    assert "were still gaining on their training images" in text
    one = training.gaining_sentence(cells.iloc[[1, 2]], 2, 0.1)
    assert one.startswith("One of the 2 cells") and "was still gaining on its training images" in one
    every = training.gaining_sentence(cells[~cells.plateau], 2, 0.1)
    assert every.startswith("All 2 cells gained more than")
    none = training.gaining_sentence(cells[cells.plateau], 2, 0.1)
    assert none.startswith("Every cell gained at most $10.0$ points of training accuracy over the last two epochs")
    assert "the largest gain, $0.00$ points, no normaliser at $b = 8$" in none and "no cell was still gaining" in none


def test_the_loss_sentence_in_every_variant():
    cells, _ = table(last=2)  # none at 2: 0.1875 / 0.5 - 1 = -62.5 %; batch norm: -20 %; none at 8: +50 %
    falling = cells[cells.loss_change < 0]
    assert training.loss_sentence(falling, 2) == (
        "The training loss (mean over seeds) fell over the last two epochs in every cell, by up to 62\\% of its "
        "value two epochs before (no normaliser at $b = 2$)."
    )
    assert training.loss_sentence(cells[cells.loss_change > 0], 2) == (
        "The training loss (mean over seeds) fell over the last two epochs in no cell."
    )
    last, _ = table(last=1)  # batch norm's loss is flat in its last epoch; none at 2 halves
    text = training.loss_sentence(last, 1)
    assert "fell over the last epoch in one of the 3 cells, by up to 50\\% of its value one epoch before" in text
    assert text.endswith("it did not fall in no normaliser at $b = 8$ ($+50\\%$) and batch norm at $b = 2$ ($0\\%$).")


def test_the_loss_sentence_names_the_cells_where_the_loss_rose():
    cells, _ = table(last=2)
    text = training.loss_sentence(cells, 2)
    # none at 2: 0.1875 / 0.5 - 1 = -62.5 %; none at 8: +50 %; only batch norm and none at 2 fell
    assert "in two of the 3 cells, by up to 62\\% of its value two epochs before (no normaliser at $b = 2$)" in text
    assert text.endswith("; it did not fall in no normaliser at $b = 8$ ($+50\\%$).")


def test_the_limits_sentence_in_every_variant():
    cells, _ = table()
    text = training.limits_sentence(cells)
    assert text.startswith("One of the 3 cells was right on every training row in the last epoch in every seed")
    assert "training accuracy can keep rising while the test accuracy does not" in text
    assert training.limits_sentence(cells[cells.fitted == 0]).startswith("In no cell was every network right")
    both = pd.concat([cells.iloc[[0]], cells.iloc[[0]].assign(batch_size=4)])
    assert training.limits_sentence(both).startswith("All 2 cells were right on every training row")
    three = pd.concat([cells, cells.iloc[[0]].assign(batch_size=4)])
    assert training.limits_sentence(three).startswith("Two of the 4 cells were right")


def accuracy_rows():
    rows = []
    for name, b, acc in (("none", 2, 0.90), ("none", 8, 0.91), ("batchnorm", 2, 0.70)):
        for seed in (0, 1):
            rows.append({"normaliser": name, "batch_size": b, "seed": seed, "mode": "inference", "accuracy": acc})
    return pd.DataFrame(rows)


def test_the_macros_mark_the_training_text_and_the_validation_macros_do_not():
    cells, _ = table(last=2, threshold=0.1)
    tests = report.test_accuracy(accuracy_rows(), ["none", "batchnorm"])
    m = training.macros(cells, tests, {"last_epochs": 2, "threshold": 0.1, "train_rows": 898})
    assert m["curvesTraining"] == "1" and m["curvesUnfinishedCount"] == "2" and m["curvesCells"] == "3"
    assert m["curvesLastBefore"] == "two epochs" and m["curvesEpochs"] == "4"
    assert m["curvesBaselines"].startswith("Our best cell, no normaliser at $b = 8$")
    assert "Published" not in m["curvesBaselines"]  # no baselines for the digits
    assert {"curvesLoss", "curvesLimits", "curvesUnfinished"} <= set(m)
    section = (ROOT / "paper" / "sections" / "curves.tex").read_text()
    abstract = (ROOT / "paper" / "sections" / "abstract.tex").read_text()
    assert "\\curvesAbstractSentence" in abstract
    for name in m:
        used = f"\\{name}" in section or name == "curvesAbstractSentence"
        assert used or name in ("curvesCells", "curvesUnfinishedCount", "curvesLast"), name
    validation = report.cells(
        report.epochs_table([("none", 2, epochs_file(FITTED).assign(validation_accuracy=0.5))]), ["none"], 2, 0.1
    )
    vm = report.macros(validation, tests, {"last_epochs": 2, "threshold": 0.1, "train_rows": 1, "validation_rows": 10})
    assert "curvesTraining" not in vm and "curvesLoss" not in vm


def test_the_summary_says_what_the_curves_score():
    cells, _ = table()
    tests = report.test_accuracy(accuracy_rows(), ["none", "batchnorm"])
    s = training.summary_json(cells, tests, {"last_epochs": 2, "threshold": 0.003})
    assert s["on"] == "training" and s["baselines"] == [] and len(s["cells"]) == 3


@pytest.mark.parametrize(
    "value, text",
    [
        (1.234, "1234"),  # two significant digits or more: no power of ten
        (0.000396, "0.40"),
        (0.0000369, "0.037"),
        (0.0123, "12"),
        (0.00000012345, "$1.2 \\cdot 10^{-4}$"),
        (0.0, "0"),
    ],
)
def test_a_loss_in_thousandths_by_hand(value, text):
    assert training.thousandths(value) == text


def test_the_table_gives_two_rows_per_normaliser_and_marks_a_gaining_cell():
    cells, _ = table(last=2, threshold=0.1)
    header, rows, align, _ = training.latex_table(cells)
    assert header == ["", "", "$b = 2$", "$b = 8$"] and align == "llrr"
    loss = "$10^3 \\times$ loss"
    assert [r[:2] for r in rows] == [["none", "accuracy"], ["", loss], ["batch norm", "accuracy"], ["", loss]]
    assert rows[0][2] == "100.0 ($+12.50$$^\\dagger$)" and rows[0][3] == "75.0 ($0.00$)"
    # none at 2: 0.1875 and -62.5 %; none at 8: 0.75 and +50 %
    assert rows[1][2] == "188 ($-62$)" and rows[1][3] == "750 ($+50$)"
    assert rows[2][3] == "--" and rows[3][3] == "--"


def test_the_figure_has_a_loss_and_an_accuracy_row_with_a_panel_per_batch_size():
    _, epochs = table()
    fig = figure.training_curves(training.by_epoch(epochs, ["none", "batchnorm"]), fig_width=6.0)
    axes = fig.get_axes()
    assert [ax.get_title() for ax in axes] == ["$b = 2$", "$b = 8$", "", ""]
    assert axes[0].get_yscale() == "log" and axes[2].get_ylabel() == "training accuracy (%)"
    assert [len(ax.get_lines()) for ax in axes] == [2, 1, 2, 1]
    registry = {normalisers.get(n).marker for n in ("none", "batchnorm")}
    assert {line.get_marker() for line in axes[0].get_lines()} == registry
    assert len({(line.get_marker(), line.get_linestyle()) for line in axes[2].get_lines()}) == 2  # told apart in grey
    assert figures.outside(fig) == []
    figures.plt.close(fig)


def test_the_figure_at_its_printed_width_for_every_normaliser_keeps_text_legible_and_inside():
    rows = []
    for k, name in enumerate(normalisers.NAMES):
        for b in (2, 4, 8, 16, 32, 64):
            for e in range(1, 21):
                rows.append(dict(normaliser=name, batch_size=b, epoch=e, seeds=20, loss=1.0 / (e + k),
                                 train_accuracy=1.0 - 0.3 / e))  # fmt: skip
    fig = figure.training_curves(pd.DataFrame(rows))
    assert figures.outside(fig) == []
    assert figures.font_sizes(fig)[0][0] >= figures.MIN_FONT_PT - 1e-9
    figures.plt.close(fig)


def load(name):
    return yaml.safe_load((ROOT / "config" / name).read_text())


def test_the_digits_configs_pass_the_check_and_train_for_more_epochs_than_last_epochs():
    for name in ("config.yaml", "combined.yaml", "test.yaml"):
        config = load(name)
        assert config["data"]["name"] == "digits" and "curves" in config
        checks.check(config, parts(config))
        assert config["curves"]["last_epochs"] < config["grid"]["epochs"]
    assert load("test.yaml")["curves"]["last_epochs"] == 1 and load("test.yaml")["grid"]["epochs"] == 2


@pytest.mark.parametrize("name", ["config.yaml", "test.yaml"])
def test_the_check_refuses_as_many_last_epochs_as_the_digits_grid_trains(name):
    config = copy.deepcopy(load(name))
    epochs = config["grid"]["epochs"]
    config["curves"]["last_epochs"] = epochs
    with pytest.raises(ConfigError, match=f"curves.last_epochs: {epochs} is not fewer than the grid's {epochs}"):
        checks.check(config, None)
    config["curves"]["last_epochs"] = epochs - 1
    checks.check(config, None)


def test_rows_gained_in_one_seed_cancel_rows_lost_in_others_exactly():
    """Over 896 rows: seed 0 gains two rows, seeds 1 and 2 lose one each. The quotients' float
    differences do not cancel (nor do they rounded to 12 decimals); the counts do."""
    up, down = 896 / 896 - 894 / 896, 894 / 896 - 895 / 896
    assert up + 2 * down != 0 and round(up, 12) + 2 * round(down, 12) != 0  # what exact counts are for
    curves = {0: [(1.0, 894 / 896), (0.5, 1.0)], 1: [(1.0, 895 / 896), (0.5, 894 / 896)],
              2: [(1.0, 895 / 896), (0.5, 894 / 896)]}  # fmt: skip
    epochs = training.epochs_table([("batchnorm", 32, epochs_file(curves))])
    cells = training.cells(epochs, ["batchnorm"], 1, 0.003)
    assert cells.loc[0, "gain"] == 0.0
    assert (cells.loc[0, "gain_min"], cells.loc[0, "gain_max"]) == (-1 / 896, 2 / 896)


def test_an_accuracy_is_read_as_its_exact_count_or_refused():
    from fractions import Fraction

    assert training.share(895 / 896) == Fraction(895, 896) and training.share(1.0) == 1
    with pytest.raises(ValueError, match="not a count over at most"):
        training.share(0.1234567890123)


@pytest.mark.parametrize("late", [0, 1, 2])
def test_the_abstract_sentence_counts_the_cells_still_gaining_and_names_the_largest(late):
    import pandas as pd

    from bnstudy.studies.curves import training

    gains = [0.009, 0.004, 0.001, 0.0][:4]
    rows = [
        {"normaliser": n, "batch_size": b, "gain": g if i < late else 0.001, "plateau": i >= late}
        for i, (n, b, g) in enumerate([("batchnorm", 2, gains[0]), ("batchrenorm", 4, gains[1]), ("none", 8, gains[2])])
    ]
    text = training.abstract_sentence(pd.DataFrame(rows), 3, 0.003)
    if late == 0:
        assert text.startswith("By the end of training every grid cell had stopped gaining")
    else:
        assert text.startswith(f"{'One' if late == 1 else 'Two'} of the 3 grid cells {'was' if late == 1 else 'were'}")
        assert "$+0.90$" in text and ("most of all" in text) == (late > 1)
