# PreciseBN on a budget: every grid batch-norm network's population statistics recomputed from a few
# seeded batches of training rows, against its running averages, the whole pass and the exact
# statistics (bnstudy.studies.precise_rows).

PRECISE = config["precise_rows"]
PRECISE_CAPTION = study_category("precise_rows", "PreciseBN on a budget")


rule evaluate_precise_rows:
    message:
        "Recomputing the statistics of batch-norm networks trained at batch size {wildcards.batch_size} "
        "(seeds {wildcards.block}) from %s training rows" % ", ".join(map(str, PRECISE["rows"]))
    input:
        weights=expand(rules.train_grid.output.weights, normaliser="batchnorm", allow_missing=True),
        x_train=rules.split.output.x_train,
        y_train=rules.split.output.y_train,
        x_test=rules.split.output.x_test,
        y_test=rules.split.output.y_test,
    output:
        rows="results/precise_rows/b{batch_size}_seeds{block}.csv",
    params:
        settings=dict(budgets=PRECISE["rows"], replicates=PRECISE["replicates"], seed=PRECISE["seed"]),
        last_batch=config["grid"]["last_batch"],
    resources:
        **job_size_with_rows(1000, 10),
    script:
        "../scripts/precise_rows_evaluate.py"


PRECISE_JOBS = with_blocks([dict(batch_size=b) for b in GRID_BATCH_SIZES])


rule summarise_precise_rows:
    message:
        "Summarising PreciseBN on a budget: accuracy against the exact statistics, paired by seed"
    input:
        rows=expand_cells(rules.evaluate_precise_rows.output.rows, PRECISE_JOBS),
        # the running averages against the exact statistics are the batch-size study's exact_vs_ema: its
        # family (remedies, over the grid's batch sizes) gives their interval here
        gains=rules.summarise_batch_size.output.gains,
    output:
        cells="results/precise_rows/cells.csv",
        summary=report(
            "results/summary/precise_rows.json",
            category=PRECISE_CAPTION,
            subcategory="Summary",
            caption="../report/summary.rst",
            labels={"summary": "the study's numbers (JSON)"},
        ),
        macros="results/paper/macros/precise_rows.tex",
        table=report(
            "results/paper/tables/precise_rows.tex",
            category=PRECISE_CAPTION,
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "accuracy against the exact statistics by rows pooled and training batch size"},
        ),
    params:
        budgets=PRECISE["rows"],
        replicates=PRECISE["replicates"],
        seed=PRECISE["seed"],
        confidence=config["batch_size_eval"]["confidence"],
        families=declared_families("precise_rows", "batch_size"),  # and the remedies'
    script:
        "../scripts/precise_rows_summarise.py"


rule figure_precise_rows:
    message:
        "Drawing accuracy against the exact statistics by rows pooled"
    input:
        cells=rules.summarise_precise_rows.output.cells,
    output:
        pdf=report(
            "results/paper/figures/precise_rows.pdf",
            category=PRECISE_CAPTION,
            subcategory="Figure: accuracy by rows pooled",
            caption="../report/precise_rows.rst",
            labels={
                "normalisers": normaliser("batchnorm").label,
                "panels": "one panel: a line per training batch size",
                "format": "vector (PDF)",
            },
        ),
        png=report(
            "results/paper/figures/precise_rows.png",
            category=PRECISE_CAPTION,
            subcategory="Figure: accuracy by rows pooled",
            caption="../report/precise_rows.rst",
            labels={
                "normalisers": normaliser("batchnorm").label,
                "panels": "one panel: a line per training batch size",
                "format": "raster (PNG)",
            },
        ),
    script:
        "../scripts/precise_rows_figure.py"


register(rules.evaluate_precise_rows, PRECISE_JOBS)
