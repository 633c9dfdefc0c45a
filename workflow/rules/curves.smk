# Training curves: every grid network's validation accuracy after each epoch (the grid's epochs
# files), each cell's gain over its last epochs, the test accuracies beside the data set's published
# baselines (bnstudy.studies.curves). Only where the config has a `curves` section (a data set with a
# validation split).

from bnstudy.base.config import parts as config_parts

CURVES = config["curves"]
CURVES_CAPTION = "Training curves"


rule summarise_curves:
    message:
        "Summarising the training curves: validation accuracy by epoch, the gain over the last %d epochs"
        % CURVES["last_epochs"]
    input:
        epochs=expand_cells(rules.train_grid.output.epochs, GRID_JOBS),
        accuracy=expand_cells(rules.train_grid.output.accuracy, GRID_JOBS),
    output:
        by_epoch="results/curves/by_epoch.csv",
        cells="results/curves/cells.csv",
        summary=report(
            "results/summary/curves.json",
            category=CURVES_CAPTION,
            subcategory="Summary",
            caption="../report/summary.rst",
            labels={"summary": "the study's numbers (JSON)"},
        ),
        macros="results/paper/macros/curves.tex",
        table=report(
            "results/paper/tables/curves.tex",
            category=CURVES_CAPTION,
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "validation accuracy, its gain over the last epochs and test accuracy by cell"},
        ),
    params:
        cells=[(job["normaliser"], int(job["batch_size"])) for job in GRID_JOBS],
        normalisers=NORMALISERS,
        settings=canonical(CURVES)
        | {"train_rows": config_parts(config).train_rows, "validation_rows": config["data"]["validation_size"]},
    script:
        "../scripts/curves_summarise.py"


rule figure_curves:
    message:
        "Drawing validation accuracy by epoch"
    input:
        by_epoch=rules.summarise_curves.output.by_epoch,
    output:
        pdf=report(
            "results/paper/figures/curves.pdf",
            category=CURVES_CAPTION,
            subcategory="Figure: validation accuracy by epoch",
            caption="../report/curves.rst",
            labels={"panels": "one per training batch size, a line per normaliser", "format": "vector (PDF)"},
        ),
        png=report(
            "results/paper/figures/curves.png",
            category=CURVES_CAPTION,
            subcategory="Figure: validation accuracy by epoch",
            caption="../report/curves.rst",
            labels={"panels": "one per training batch size, a line per normaliser", "format": "raster (PNG)"},
        ),
    script:
        "../scripts/curves_figure.py"
