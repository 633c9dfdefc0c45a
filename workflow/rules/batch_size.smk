# Study 2: accuracy of every grid network by training batch size.


REMEDY_CELLS = with_blocks([c for c in grid_cells() if c["normaliser"] == "batchnorm"])
GRID_JOBS = with_blocks(grid_cells())
KEEP_JOBS = with_follow_up_blocks(KEEP_CELLS)


rule evaluate_remedies:
    message:
        "Replacing the running statistics of {wildcards.normaliser} networks trained at batch size "
        "{wildcards.batch_size} (seeds {wildcards.block}): debiased EMA, cumulative average, PreciseBN, exact"
    input:
        weights=rules.train_grid.output.weights,
        x_train=rules.split.output.x_train,
        y_train=rules.split.output.y_train,
        x_test=rules.split.output.x_test,
        y_test=rules.split.output.y_test,
    output:
        accuracy="results/batch_size/remedies/{normaliser}_b{batch_size}_seeds{block}.csv",
        distances="results/batch_size/remedies/{normaliser}_b{batch_size}_seeds{block}_distances.csv",
        correct="results/batch_size/remedies/{normaliser}_b{batch_size}_seeds{block}_correct.csv",
    params:
        seed=config["batch_size_eval"]["seed"],
    resources:
        **job_size_with_rows(1000, 10),
    script:
        "../scripts/evaluate_remedies.py"


rule summarise_batch_size:
    message:
        "Summarising accuracy over seeds for every normaliser and batch size"
    input:
        cells=expand_cells(rules.train_grid.output.accuracy, GRID_JOBS),
        remedies=expand_cells(rules.evaluate_remedies.output.accuracy, REMEDY_CELLS),
        distances=expand_cells(rules.evaluate_remedies.output.distances, REMEDY_CELLS),
        correct=expand_cells(rules.train_grid.output.correct, GRID_JOBS),
        remedies_correct=expand_cells(rules.evaluate_remedies.output.correct, REMEDY_CELLS),
        keep=expand_cells(rules.train_keep.output.accuracy, KEEP_JOBS),
        keep_correct=expand_cells(rules.train_keep.output.correct, KEEP_JOBS),
        published="workflow/resources/published.yaml",
    output:
        runs="results/batch_size/accuracy.csv",
        summary_table="results/batch_size/summary.csv",
        distances="results/batch_size/distances.csv",
        distance_summary="results/batch_size/distance_summary.csv",
        gains="results/batch_size/gains.csv",
        paired="results/batch_size/paired_seeds.csv",
        equivalence="results/batch_size/equivalence.csv",
        summary=report(
            "results/summary/batch_size.json",
            category=study_category("batch_size", "Training batch size"),
            subcategory="Summary",
            caption="../report/summary.rst",
            labels={"summary": "the study's numbers (JSON)"},
        ),
        macros="results/paper/macros/batch_size.tex",
        table=report(
            "results/paper/tables/batch_size.tex",
            category=study_category("batch_size", "Training batch size"),
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "accuracy by normaliser and batch size, beside the published values"},
        ),
        remedies_table=report(
            "results/paper/tables/batch_size_remedies.tex",
            category=study_category("batch_size", "Training batch size"),
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "batch norm in inference mode with each replacement of its running statistics"},
        ),
        distance_table=report(
            "results/paper/tables/batch_size_distances.tex",
            category=study_category("batch_size", "Training batch size"),
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "distance of each set of running statistics to the exact statistics"},
        ),
        gain_table=report(
            "results/paper/tables/batch_size_gains.tex",
            category=study_category("batch_size", "Training batch size"),
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "paired accuracy differences, with intervals and McNemar tests"},
        ),
    params:
        confidence=config["batch_size_eval"]["confidence"],
        families=declared_families("batch_size"),
        momentum=config["network"]["momentum"],
        epochs=config["grid"]["epochs"],
    script:
        "../scripts/summarise_batch_size.py"


rule figure_batch_size:
    message:
        "Drawing accuracy against training batch size"
    input:
        summary=rules.summarise_batch_size.output.summary_table,
        gains=rules.summarise_batch_size.output.gains,
    output:
        pdf=report(
            "results/paper/figures/batch_size.pdf",
            category=study_category("batch_size", "Training batch size"),
            subcategory="Figure: accuracy by training batch size",
            caption="../report/batch_size.rst",
            labels={
                "normalisers": ", ".join(normaliser(n).label for n in NORMALISERS),
                "panels": "accuracy, a line per normaliser and mode; paired differences between normalisers",
                "format": "vector (PDF)",
            },
        ),
        png=report(
            "results/paper/figures/batch_size.png",
            category=study_category("batch_size", "Training batch size"),
            subcategory="Figure: accuracy by training batch size",
            caption="../report/batch_size.rst",
            labels={
                "normalisers": ", ".join(normaliser(n).label for n in NORMALISERS),
                "panels": "accuracy, a line per normaliser and mode; paired differences between normalisers",
                "format": "raster (PNG)",
            },
        ),
    script:
        "../scripts/figure_batch_size.py"


rule figure_batch_size_remedies:
    message:
        "Drawing batch norm's inference accuracy under each replacement of its running statistics"
    input:
        summary=rules.summarise_batch_size.output.summary_table,
        gains=rules.summarise_batch_size.output.gains,
    output:
        pdf=report(
            "results/paper/figures/batch_size_remedies.pdf",
            category=study_category("batch_size", "Training batch size"),
            subcategory="Figure: running-statistics remedies",
            caption="../report/batch_size_remedies.rst",
            labels={
                "normalisers": "batch norm; none for reference",
                "panels": "accuracy, a line per set of running statistics; paired gain of each remedy",
                "format": "vector (PDF)",
            },
        ),
        png=report(
            "results/paper/figures/batch_size_remedies.png",
            category=study_category("batch_size", "Training batch size"),
            subcategory="Figure: running-statistics remedies",
            caption="../report/batch_size_remedies.rst",
            labels={
                "normalisers": "batch norm; none for reference",
                "panels": "accuracy, a line per set of running statistics; paired gain of each remedy",
                "format": "raster (PNG)",
            },
        ),
    script:
        "../scripts/figure_batch_size_remedies.py"


register(rules.evaluate_remedies, REMEDY_CELLS)
