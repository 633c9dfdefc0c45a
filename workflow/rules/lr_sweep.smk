# Learning rate against batch size: Adam's rate swept at every grid batch size, chosen per
# cell on a validation split carved from the training half (or, with lr_sweep.folds, by
# K-fold cross-validation on it), scored on the test half.

LR = config["lr_sweep"]
LR_FOLDS = LR.get("folds")
# the split job: K stratified folds of the training half (each training job trains every fold),
# else one stratified validation split
LR_SPLIT = (
    dict(
        message="Cutting the training half into %d stratified folds (seed %d)" % (LR_FOLDS, LR["validation_seed"]),
        path="results/data/lr_sweep_folds.csv",
        params=dict(folds=LR_FOLDS, seed=LR["validation_seed"]),
    )
    if LR_FOLDS
    else dict(
        message="Carving a stratified validation split (%s of the rows, seed %d) from the training half"
        % (LR["validation_fraction"], LR["validation_seed"]),
        path="results/data/lr_sweep_validation.csv",
        params=dict(fraction=LR["validation_fraction"], seed=LR["validation_seed"]),
    )
)
# the grid's rate, for reference: one rate, or each grid batch size's (grid.lr_by_batch_size)
LR_GRID_RATE = (
    {str(b): recipe_params(config["grid"], b, "none")["lr"] for b in GRID_BATCH_SIZES}
    if config["grid"].get("lr_by_batch_size")
    else config["grid"]["lr"]
)
# one job per normaliser and grid batch size (the batch sizes' networks are independent), so a
# cluster runs them side by side; the summary joins them in this order, the order one job per
# normaliser over every batch size wrote
LR_CELLS = [dict(normaliser=n, batch_size=b) for n in LR["normalisers"] for b in GRID_BATCH_SIZES]


rule lr_sweep_split:
    message:
        LR_SPLIT["message"]
    input:
        y=rules.split.output.y_train,
    output:
        split=LR_SPLIT["path"],
    params:
        **LR_SPLIT["params"],
    script:
        "../scripts/lr_sweep_split.py"


rule train_lr_sweep:
    message:
        "Training {wildcards.normaliser} at b={wildcards.batch_size} x learning rate %s x seed %s%s"
        % (LR["lrs"], LR["seeds"], " x %d folds" % LR_FOLDS if LR_FOLDS else "")
    input:
        x=rules.split.output.x_train,
        y=rules.split.output.y_train,
        x_test=rules.split.output.x_test,
        y_test=rules.split.output.y_test,
        split=rules.lr_sweep_split.output.split,
    output:
        runs="results/lr_sweep/runs/{normaliser}_b{batch_size}.csv",
        epochs="results/lr_sweep/runs/{normaliser}_b{batch_size}_epochs.csv",
    params:
        seeds=LR["seeds"],
        lrs=LR["lrs"],
        batch_sizes=lambda wc: [int(wc.batch_size)],
        net=lambda wc: net_params(wc.normaliser),
        recipe=lambda wc: recipe_params(
            config["grid"] | {"epochs": LR["epochs"], "epochs_by_batch_size": []}, wc.batch_size, wc.normaliser
        ),
    threads: THREADS  # config compute_threads: seeds trained at once
    resources:
        **job_size(1000, 30),
    script:
        "../scripts/lr_sweep_train.py"


rule summarise_lr_sweep:
    message:
        "Summarising the learning-rate sweep: chosen rates, accuracy at them, batch norm minus none"
    input:
        runs=expand_cells(rules.train_lr_sweep.output.runs, LR_CELLS),
        split=rules.lr_sweep_split.output.split,
    output:
        rates="results/lr_sweep/rates.csv",
        best="results/lr_sweep/best.csv",
        paired="results/lr_sweep/paired.csv",
        summary=report(
            "results/summary/lr_sweep.json",
            category=study_category("lr_sweep", "Learning rate against batch size"),
            subcategory="Summary",
            caption="../report/summary.rst",
            labels={"summary": "the study's numbers (JSON)"},
        ),
        macros="results/paper/macros/lr_sweep.tex",
        table=report(
            "results/paper/tables/lr_sweep.tex",
            category=study_category("lr_sweep", "Learning rate against batch size"),
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "each cell at its chosen learning rate; batch norm minus none"},
        ),
        validation_table=report(
            "results/paper/tables/lr_sweep_validation.tex",
            category=study_category("lr_sweep", "Learning rate against batch size"),
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "validation accuracy of every normaliser, batch size and learning rate"},
        ),
    params:
        grid_lr=LR_GRID_RATE,
        confidence=config["batch_size_eval"]["confidence"],
        families=declared_families("lr_sweep"),
        epochs=LR["epochs"],
        grid_seeds=len(SEEDS),
    script:
        "../scripts/lr_sweep_summarise.py"


rule figure_lr_sweep:
    message:
        "Drawing accuracy against batch size at each cell's chosen learning rate"
    input:
        best=rules.summarise_lr_sweep.output.best,
        rates=rules.summarise_lr_sweep.output.rates,
    output:
        pdf=report(
            "results/paper/figures/lr_sweep.pdf",
            category=study_category("lr_sweep", "Learning rate against batch size"),
            subcategory="Figure: accuracy at the chosen learning rate",
            caption="../report/lr_sweep.rst",
            labels={
                "normalisers": ", ".join(normaliser(n).label for n in LR["normalisers"]),
                "panels": "test accuracy, a line per normaliser; the chosen rate of each cell",
                "format": "vector (PDF)",
            },
        ),
        png=report(
            "results/paper/figures/lr_sweep.png",
            category=study_category("lr_sweep", "Learning rate against batch size"),
            subcategory="Figure: accuracy at the chosen learning rate",
            caption="../report/lr_sweep.rst",
            labels={
                "normalisers": ", ".join(normaliser(n).label for n in LR["normalisers"]),
                "panels": "test accuracy, a line per normaliser; the chosen rate of each cell",
                "format": "raster (PNG)",
            },
        ),
    params:
        grid_lr=LR_GRID_RATE,
    script:
        "../scripts/lr_sweep_figure.py"


register(rules.train_lr_sweep, LR_CELLS)
