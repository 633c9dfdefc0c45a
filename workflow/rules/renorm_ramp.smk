# Batch renorm's ramp: the grid's batch-renorm networks retrained with other schedules of the limits,
# paired by seed with the grid's batch norm and batch renorm networks of the same seeds and batch sizes
# (bnstudy.studies.renorm_ramp).
RAMP = config["renorm_ramp"]
RAMP_CAPTION = study_category("renorm_ramp", "Batch renorm's ramp")
RAMP_JOBS = [dict(batch_size=b) for b in RAMP["batch_sizes"]]
# the grid's side of the pairs: batch norm and batch renorm at the study's batch sizes, every block holding one of its seeds
RAMP_GRID = [
    dict(normaliser=n, batch_size=b, block=block)
    for n in ("batchnorm", "batchrenorm")
    for b in RAMP["batch_sizes"]
    for block, seeds in SEED_BLOCKS.items()
    if set(seeds) & set(RAMP["seeds"])
]


rule train_renorm_ramp:
    message:
        "Training batch renorm at batch size {wildcards.batch_size} with each schedule variant of its limits, seeds %s"
        % ", ".join(map(str, RAMP["seeds"]))
    input:
        x=rules.split.output.x_train,
        y=rules.split.output.y_train,
        x_test=rules.split.output.x_test,
        y_test=rules.split.output.y_test,
    output:
        accuracy="results/renorm_ramp/b{batch_size}.csv",
    params:
        seeds=RAMP["seeds"],
        net=lambda wc: net_params("batchrenorm"),
        recipe=lambda wc: recipe_params(config["grid"], wc.batch_size, "batchrenorm"),
        schedules=canonical(RAMP["schedules"]),
        batchrenorm=canonical(config["batchrenorm"]),
    threads: THREADS  # config compute_threads: seeds trained at once
    resources:
        **job_size(1000, 30),
    script:
        "../scripts/renorm_ramp_train.py"


rule summarise_renorm_ramp:
    message:
        "Summarising batch renorm's schedule variants against the grid's batch norm and batch renorm, paired by seed"
    input:
        study=expand_cells(rules.train_renorm_ramp.output.accuracy, RAMP_JOBS),
        grid=expand_cells(rules.train_grid.output.accuracy, RAMP_GRID),
    output:
        cells="results/renorm_ramp/comparisons.csv",
        summary=report(
            "results/summary/renorm_ramp.json",
            category=RAMP_CAPTION,
            subcategory="Summary",
            caption="../report/summary.rst",
            labels={"summary": "the study's numbers (JSON)"},
        ),
        macros="results/paper/macros/renorm_ramp.tex",
        table=report(
            "results/paper/tables/renorm_ramp.tex",
            category=RAMP_CAPTION,
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "batch renorm's schedules against batch norm, paired by seed"},
        ),
    params:
        seeds=RAMP["seeds"],
        batch_sizes=RAMP["batch_sizes"],
        schedules=canonical(RAMP["schedules"]),
        batchrenorm=canonical(config["batchrenorm"]),
        confidence=config["batch_size_eval"]["confidence"],
        families=declared_families("renorm_ramp"),
    script:
        "../scripts/renorm_ramp_summarise.py"


register(rules.train_renorm_ramp, RAMP_JOBS)
