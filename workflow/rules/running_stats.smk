# Studies 3 and 5: running statistics on an enumerated population, and what tests can see.

RS = config["running_stats"]
RS_KEEP = 1.0 - config["network"]["momentum"]  # the keep-factor of the trained networks (0.9)


rule population:
    message:
        "Generating the enumerated population: %d rows x %d features, seed %d"
        % (RS["rows"], RS["features"], RS["seed"])
    output:
        population="results/running_stats/population.npy",
    params:
        seed=RS["seed"],
        rows=RS["rows"],
        features=RS["features"],
    script:
        "../scripts/running_stats_population.py"


rule running_stats:
    message:
        "One batch-norm layer over the population: batch sizes %s, keep-factors %s, shuffled and sorted"
        % (RS["batch_sizes"], RS["keeps"])
    input:
        population=rules.population.output.population,
    output:
        passes="results/running_stats/passes.csv",
        shuffles="results/running_stats/shuffles.csv",
    params:
        seed=RS["seed"],
        batch_sizes=RS["batch_sizes"],
        keeps=RS["keeps"],
        sort_feature=RS["sort_feature"],
        keep=RS_KEEP,
        shuffles=RS["shuffles"],
    resources:
        **job_size(1000, 10),
    script:
        "../scripts/running_stats.py"


rule running_stats_selfchecks:
    message:
        "The four self-checks and the differential check, shuffled and sorted"
    input:
        population=rules.population.output.population,
    output:
        checks="results/running_stats/selfchecks.csv",
    params:
        seed=RS["seed"],
        batch_sizes=RS["batch_sizes"],
        keep=RS_KEEP,
        sort_feature=RS["sort_feature"],
    resources:
        **job_size(1000, 10),
    script:
        "../scripts/running_stats_selfchecks.py"


rule evaluate_sorted:
    message:
        "Class-sorted versus shuffled {wildcards.normaliser} networks at batch size {wildcards.batch_size}"
    input:
        sorted_weights=lambda wc: expand(
            rules.train_sorted.output.weights,
            normaliser=wc.normaliser,
            batch_size=wc.batch_size,
            block=FOLLOW_UP_BLOCKS,
        ),
        # the grid network of the same normaliser and batch size, if the grid has one
        shuffled_weights=lambda wc: (
            expand(
                rules.train_grid.output.weights,
                normaliser=wc.normaliser,
                batch_size=wc.batch_size,
                block=FOLLOW_UP_BLOCKS,
            )
            if int(wc.batch_size) in GRID_BATCH_SIZES and wc.normaliser in NORMALISERS
            else []
        ),
        x_test=rules.split.output.x_test,
        y_test=rules.split.output.y_test,
        y_train=rules.split.output.y_train,
    output:
        cell="results/running_stats/sorted_training/{normaliser}_b{batch_size}.csv",
    params:
        seed=config["batch_size_eval"]["seed"],
    resources:
        **job_size(1000, 5),
    script:
        "../scripts/running_stats_sorted.py"


rule summarise_running_stats:
    message:
        "Summarising the running-statistics study: JSON, macros, tables"
    input:
        population=rules.population.output.population,
        passes=rules.running_stats.output.passes,
        shuffles=rules.running_stats.output.shuffles,
        checks=rules.running_stats_selfchecks.output.checks,
        sorted_cells=expand(
            rules.evaluate_sorted.output.cell,
            zip,
            normaliser=[c["normaliser"] for c in SORTED_CELLS],
            batch_size=[c["batch_size"] for c in SORTED_CELLS],
        ),
        published="workflow/resources/published.yaml",
    output:
        summary=report(
            "results/summary/running_stats.json",
            category=study_category("running_stats", "Running statistics"),
            subcategory="Summary",
            caption="../report/summary.rst",
            labels={"summary": "the study's numbers (JSON)"},
        ),
        sorted_training="results/running_stats/sorted_training.csv",
        macros="results/paper/macros/running_stats.tex",
        table_errors=report(
            "results/paper/tables/running_stats.tex",
            category=study_category("running_stats", "Running statistics"),
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "error of the running statistics after one pass; train/inference RMSE"},
        ),
        table_selfchecks=report(
            "results/paper/tables/running_stats_selfchecks.tex",
            category=study_category("running_stats", "Running statistics"),
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "the layer's self-checks and the differential check, every pass"},
        ),
        table_remedies=report(
            "results/paper/tables/running_stats_remedies.tex",
            category=study_category("running_stats", "Running statistics"),
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "remedies on the same passes"},
        ),
        table_sorted=report(
            "results/paper/tables/running_stats_sorted.tex",
            category=study_category("running_stats", "Running statistics"),
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "batch-norm networks trained on shuffled or class-sorted batches"},
        ),
        shuffle_summary="results/running_stats/shuffles_summary.csv",
        table_shuffles=report(
            "results/paper/tables/running_stats_shuffles.tex",
            category=study_category("running_stats", "Running statistics"),
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "the shuffled pass over repeated seeded shuffles"},
        ),
    params:
        keep=RS_KEEP,
        confidence=RS["confidence"],
        sort_feature=RS["sort_feature"],
        rows=RS["rows"],
        features=RS["features"],
        seed=RS["seed"],
    script:
        "../scripts/running_stats_summary.py"


rule figure_running_stats:
    message:
        "Drawing running-statistics error against batch size"
    input:
        passes=rules.running_stats.output.passes,
        shuffles=rules.running_stats.output.shuffles,
    output:
        pdf=report(
            "results/paper/figures/running_stats.pdf",
            category=study_category("running_stats", "Running statistics"),
            subcategory="Figure: running-statistics error by batch size",
            caption="../report/running_stats.rst",
            labels={
                "normalisers": "batch norm (one layer on an enumerated population)",
                "panels": "shuffled batches: error of the running statistics; train/inference RMSE, shuffled and sorted; bands: range over the repeated shuffles",
                "format": "vector (PDF)",
            },
        ),
        png=report(
            "results/paper/figures/running_stats.png",
            category=study_category("running_stats", "Running statistics"),
            subcategory="Figure: running-statistics error by batch size",
            caption="../report/running_stats.rst",
            labels={
                "normalisers": "batch norm (one layer on an enumerated population)",
                "panels": "shuffled batches: error of the running statistics; train/inference RMSE, shuffled and sorted; bands: range over the repeated shuffles",
                "format": "raster (PNG)",
            },
        ),
    params:
        keep=RS_KEEP,
    script:
        "../scripts/running_stats_figure.py"


register(rules.evaluate_sorted, SORTED_CELLS)
