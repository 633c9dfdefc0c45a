# Study 2: accuracy of every grid network by training batch size.


rule evaluate_grid:
    message:
        "Evaluating {wildcards.normaliser} networks trained at batch size {wildcards.batch_size}"
    input:
        weights=rules.train_grid.output.weights,
        x_test=rules.split.output.x_test,
        y_test=rules.split.output.y_test,
        y_train=rules.split.output.y_train,
        code=code("evaluate_grid.py"),
    output:
        accuracy="results/batch_size/cells/{normaliser}_b{batch_size}.csv",
        correct="results/batch_size/cells/{normaliser}_b{batch_size}_correct.csv",
    params:
        seed=config["batch_size_eval"]["seed"],
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=lambda wc, attempt: 1000 * attempt,
        runtime=5,
    log:
        "results/logs/evaluate_grid/{normaliser}_b{batch_size}.log",
    benchmark:
        "results/benchmarks/evaluate_grid/{normaliser}_b{batch_size}.tsv"
    script:
        "../scripts/evaluate_grid.py"


rule evaluate_keep:
    message:
        "Evaluating {wildcards.normaliser} networks trained at batch size {wildcards.batch_size}, leftover rows kept"
    input:
        weights=rules.train_keep.output.weights,
        x_test=rules.split.output.x_test,
        y_test=rules.split.output.y_test,
        y_train=rules.split.output.y_train,
        code=code("evaluate_grid.py"),
    output:
        accuracy="results/batch_size/keep/{normaliser}_b{batch_size}.csv",
        correct="results/batch_size/keep/{normaliser}_b{batch_size}_correct.csv",
    params:
        seed=config["batch_size_eval"]["seed"],
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=lambda wc, attempt: 1000 * attempt,
        runtime=5,
    log:
        "results/logs/evaluate_keep/{normaliser}_b{batch_size}.log",
    benchmark:
        "results/benchmarks/evaluate_keep/{normaliser}_b{batch_size}.tsv"
    script:
        "../scripts/evaluate_grid.py"


REMEDY_CELLS = [c for c in grid_cells() if c["normaliser"] == "batchnorm"]


rule evaluate_remedies:
    message:
        "Replacing the running statistics of {wildcards.normaliser} networks trained at batch size "
        "{wildcards.batch_size}: debiased EMA, cumulative average, PreciseBN, exact"
    input:
        weights=rules.train_grid.output.weights,
        x_train=rules.split.output.x_train,
        y_train=rules.split.output.y_train,
        x_test=rules.split.output.x_test,
        y_test=rules.split.output.y_test,
        code=code("evaluate_remedies.py"),
    output:
        accuracy="results/batch_size/remedies/{normaliser}_b{batch_size}.csv",
        distances="results/batch_size/remedies/{normaliser}_b{batch_size}_distances.csv",
        correct="results/batch_size/remedies/{normaliser}_b{batch_size}_correct.csv",
    params:
        seed=config["batch_size_eval"]["seed"],
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=lambda wc, attempt: 1000 * attempt,
        runtime=10,
    log:
        "results/logs/evaluate_remedies/{normaliser}_b{batch_size}.log",
    benchmark:
        "results/benchmarks/evaluate_remedies/{normaliser}_b{batch_size}.tsv"
    script:
        "../scripts/evaluate_remedies.py"


rule summarise_batch_size:
    message:
        "Summarising accuracy over seeds for every normaliser and batch size"
    input:
        cells=expand(
            rules.evaluate_grid.output.accuracy,
            zip,
            normaliser=[c["normaliser"] for c in grid_cells()],
            batch_size=[c["batch_size"] for c in grid_cells()],
        ),
        remedies=expand(
            rules.evaluate_remedies.output.accuracy,
            zip,
            normaliser=[c["normaliser"] for c in REMEDY_CELLS],
            batch_size=[c["batch_size"] for c in REMEDY_CELLS],
        ),
        distances=expand(
            rules.evaluate_remedies.output.distances,
            zip,
            normaliser=[c["normaliser"] for c in REMEDY_CELLS],
            batch_size=[c["batch_size"] for c in REMEDY_CELLS],
        ),
        correct=expand(
            rules.evaluate_grid.output.correct,
            zip,
            normaliser=[c["normaliser"] for c in grid_cells()],
            batch_size=[c["batch_size"] for c in grid_cells()],
        ),
        remedies_correct=expand(
            rules.evaluate_remedies.output.correct,
            zip,
            normaliser=[c["normaliser"] for c in REMEDY_CELLS],
            batch_size=[c["batch_size"] for c in REMEDY_CELLS],
        ),
        keep=expand(
            rules.evaluate_keep.output.accuracy,
            zip,
            normaliser=[c["normaliser"] for c in KEEP_CELLS],
            batch_size=[c["batch_size"] for c in KEEP_CELLS],
        ),
        keep_correct=expand(
            rules.evaluate_keep.output.correct,
            zip,
            normaliser=[c["normaliser"] for c in KEEP_CELLS],
            batch_size=[c["batch_size"] for c in KEEP_CELLS],
        ),
        published="workflow/resources/published.yaml",
        code=code("summarise_batch_size.py"),
    output:
        runs="results/batch_size/accuracy.csv",
        summary_table="results/batch_size/summary.csv",
        distances="results/batch_size/distances.csv",
        distance_summary="results/batch_size/distance_summary.csv",
        gains="results/batch_size/gains.csv",
        paired="results/batch_size/paired_seeds.csv",
        summary="results/summary/batch_size.json",
        macros="results/paper/macros/batch_size.tex",
        table="results/paper/tables/batch_size.tex",
        remedies_table="results/paper/tables/batch_size_remedies.tex",
        distance_table="results/paper/tables/batch_size_distances.tex",
        gain_table="results/paper/tables/batch_size_gains.tex",
    params:
        confidence=config["batch_size_eval"]["confidence"],
        momentum=config["network"]["momentum"],
        epochs=config["grid"]["epochs"],
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=lambda wc, attempt: 500 * attempt,
        runtime=5,
    log:
        "results/logs/summarise_batch_size.log",
    benchmark:
        "results/benchmarks/summarise_batch_size.tsv"
    script:
        "../scripts/summarise_batch_size.py"


rule figure_batch_size:
    message:
        "Drawing accuracy against training batch size"
    input:
        summary=rules.summarise_batch_size.output.summary_table,
        code=code("figure_batch_size.py"),
    output:
        pdf=report(
            "results/paper/figures/batch_size.pdf", category="Study 2: batch size", caption="../report/batch_size.rst"
        ),
        png="results/paper/figures/batch_size.png",
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=lambda wc, attempt: 500 * attempt,
        runtime=5,
    log:
        "results/logs/figure_batch_size.log",
    benchmark:
        "results/benchmarks/figure_batch_size.tsv"
    script:
        "../scripts/figure_batch_size.py"


rule figure_batch_size_remedies:
    message:
        "Drawing batch norm's inference accuracy under each replacement of its running statistics"
    input:
        summary=rules.summarise_batch_size.output.summary_table,
        code=code("figure_batch_size_remedies.py"),
    output:
        pdf=report(
            "results/paper/figures/batch_size_remedies.pdf",
            category="Study 2: batch size",
            caption="../report/batch_size_remedies.rst",
        ),
        png="results/paper/figures/batch_size_remedies.png",
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=lambda wc, attempt: 500 * attempt,
        runtime=5,
    log:
        "results/logs/figure_batch_size_remedies.log",
    benchmark:
        "results/benchmarks/figure_batch_size_remedies.tsv"
    script:
        "../scripts/figure_batch_size_remedies.py"


register(rules.evaluate_grid, grid_cells())
register(rules.evaluate_remedies, REMEDY_CELLS)
register(rules.evaluate_keep, KEEP_CELLS)
register(rules.summarise_batch_size)
register(rules.figure_batch_size)
register(rules.figure_batch_size_remedies)
PAPER_INPUTS["macros_batch_size"] = rules.summarise_batch_size.output.macros
PAPER_INPUTS["table_batch_size"] = rules.summarise_batch_size.output.table
PAPER_INPUTS["figure_batch_size"] = rules.figure_batch_size.output.pdf
PAPER_INPUTS["table_batch_size_remedies"] = rules.summarise_batch_size.output.remedies_table
PAPER_INPUTS["table_batch_size_distances"] = rules.summarise_batch_size.output.distance_table
PAPER_INPUTS["table_batch_size_gains"] = rules.summarise_batch_size.output.gain_table
PAPER_INPUTS["figure_batch_size_remedies"] = rules.figure_batch_size_remedies.output.pdf
