# Training curves: every grid network's validation accuracy after each epoch (the grid's epochs
# files), each cell's gain over its last epochs, the test accuracies beside the data set's published
# baselines (bnstudy.studies.curves). Without a validation split (the digits), the training loss and
# training accuracy after each epoch and their change over the last epochs (studies.curves.training).
# Only where the config has a `curves` section.

from bnstudy.base.config import parts as config_parts

CURVES = config["curves"]
CURVES_CAPTION = study_category("curves", "Training curves")
CURVES_VALIDATION = bool(GRID_VALIDATION)  # the grid scored on a validation split after each epoch
CURVES_SCORE = "validation accuracy" if CURVES_VALIDATION else "training loss and accuracy"


rule summarise_curves:
    message:
        "Summarising the training curves: %s by epoch, the gain over the last %d epochs"
        % (CURVES_SCORE, CURVES["last_epochs"])
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
            labels={
                "table": (
                    "validation accuracy, its gain over the last epochs and test accuracy by cell"
                    if CURVES_VALIDATION
                    else "training accuracy and loss and their change over the last epochs by cell"
                )
            },
        ),
    params:
        cells=[(job["normaliser"], int(job["batch_size"])) for job in GRID_JOBS],
        normalisers=NORMALISERS,
        validation=CURVES_VALIDATION,
        settings=canonical(CURVES)
        | {"train_rows": config_parts(config).train_rows}
        | ({"validation_rows": config["data"]["validation_size"]} if CURVES_VALIDATION else {}),
    script:
        "../scripts/curves_summarise.py"


rule figure_curves:
    message:
        "Drawing the %s by epoch" % CURVES_SCORE
    input:
        by_epoch=rules.summarise_curves.output.by_epoch,
    output:
        pdf=report(
            "results/paper/figures/curves.pdf",
            category=CURVES_CAPTION,
            subcategory="Figure: %s by epoch" % CURVES_SCORE,
            caption="../report/curves.rst",
            labels={
                "normalisers": ", ".join(normaliser(n).label for n in NORMALISERS),
                "panels": "one per training batch size, a line per normaliser",
                "format": "vector (PDF)",
            },
        ),
        png=report(
            "results/paper/figures/curves.png",
            category=CURVES_CAPTION,
            subcategory="Figure: %s by epoch" % CURVES_SCORE,
            caption="../report/curves.rst",
            labels={
                "normalisers": ", ".join(normaliser(n).label for n in NORMALISERS),
                "panels": "one per training batch size, a line per normaliser",
                "format": "raster (PNG)",
            },
        ),
    script:
        "../scripts/curves_figure.py"
