# Gradient accumulation and ghost batch norm (issue 17, item 4): batch norm trained in
# micro-batches accumulated to one step of a grid batch, ghost batch norm with the
# micro-batch as virtual batch, against the grid's networks at both batch sizes; a second
# arm at the micro-batch with the rate scaled by micro-batch / batch (issue 29, item 11), and
# every network in inference mode with recomputed (exact) population statistics too.

from bnstudy.studies.accumulation.science import KINDS as ACC_KINDS
from bnstudy.studies.accumulation.science import variant_name

ACC = config["accumulation"]
# the grid's recipe at accumulation's batch size (its rate and epochs: grid.lr_by_batch_size, grid.epochs_by_batch_size)
ACC_RECIPE = recipe_params(config["grid"], ACC["batch_size"], ACC["normaliser"])
ACC_VARIANTS = [variant_name(k, m) for m in ACC["micro_batches"] for k in ACC_KINDS]
# the grid's cells compared with: the step's batch and every micro-batch
ACC_GRID = [dict(normaliser=ACC["normaliser"], batch_size=b) for b in [ACC["batch_size"], *ACC["micro_batches"]]]


rule train_accumulation:
    message:
        "Training %s in micro-batches of %s accumulated to %d rows, ghost batch norm and the rate-scaled "
        "micro-batch, seeds {wildcards.block}" % (ACC["normaliser"], ACC["micro_batches"], ACC["batch_size"])
    input:
        x=rules.split.output.x_train,
        y=rules.split.output.y_train,
        x_test=rules.split.output.x_test,
        y_test=rules.split.output.y_test,
    output:
        weights=expand("results/runs/accumulation/{variant}/seeds{{block}}.safetensors", variant=ACC_VARIANTS),
        epochs="results/accumulation/runs/seeds{block}_epochs.csv",
        accuracy="results/accumulation/runs/seeds{block}.csv",
        differences="results/accumulation/runs/seeds{block}_differences.csv",
    params:
        seeds=block_seeds,
        variants=ACC_VARIANTS,
        micro_batches=ACC["micro_batches"],
        net=net_params(ACC["normaliser"]),
        recipe=ACC_RECIPE,
        eval_seed=config["batch_size_eval"]["seed"],
    threads: THREADS  # config compute_threads: seeds trained at once
    resources:
        **job_size_with_rows(1000, 30),
    script:
        "../scripts/accumulation_train.py"


rule summarise_accumulation:
    message:
        "Summarising the accumulation study: accuracy, paired differences, accumulation against ghost batch norm"
    input:
        runs=expand(rules.train_accumulation.output.accuracy, block=FOLLOW_UP_BLOCKS),
        differences=expand(rules.train_accumulation.output.differences, block=FOLLOW_UP_BLOCKS),
        grid=expand_cells(rules.train_grid.output.accuracy, with_follow_up_blocks(ACC_GRID)),
        recomputed=expand_cells(rules.evaluate_remedies.output.accuracy, with_follow_up_blocks(ACC_GRID)),
        y=rules.split.output.y_train,
    output:
        table="results/accumulation/accuracy.csv",
        cells="results/accumulation/cells.csv",
        paired="results/accumulation/paired.csv",
        recompute="results/accumulation/recompute.csv",
        closeness="results/accumulation/closeness.csv",
        summary=report(
            "results/summary/accumulation.json",
            category=study_category("accumulation", "Gradient accumulation and ghost batch norm"),
            subcategory="Summary",
            caption="../report/summary.rst",
            labels={"summary": "the study's numbers (JSON)"},
        ),
        macros="results/paper/macros/accumulation.tex",
        latex_table=report(
            "results/paper/tables/accumulation.tex",
            category=study_category("accumulation", "Gradient accumulation and ghost batch norm"),
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "accuracy of each way of training, in both modes; paired differences"},
        ),
    params:
        batch_size=ACC["batch_size"],
        micro_batches=ACC["micro_batches"],
        confidence=config["batch_size_eval"]["confidence"],
        epochs=ACC_RECIPE["epochs"],
        lr=ACC_RECIPE["lr"],
        families=declared_families("accumulation"),
    script:
        "../scripts/accumulation_summarise.py"


rule figure_accumulation:
    message:
        "Drawing the accuracy of accumulation, ghost batch norm and the grid's batches"
    input:
        cells=rules.summarise_accumulation.output.cells,
    output:
        pdf=report(
            "results/paper/figures/accumulation.pdf",
            category=study_category("accumulation", "Gradient accumulation and ghost batch norm"),
            subcategory="Figure: accuracy by way of training",
            caption="../report/accumulation.rst",
            labels={
                "normalisers": ", ".join(normaliser(n).label for n in (ACC["normaliser"], "ghostbatchnorm")),
                "panels": f"one panel per micro-batch size: {', '.join(str(m) for m in ACC['micro_batches'])} rows",
                "format": "vector (PDF)",
            },
        ),
        png=report(
            "results/paper/figures/accumulation.png",
            category=study_category("accumulation", "Gradient accumulation and ghost batch norm"),
            subcategory="Figure: accuracy by way of training",
            caption="../report/accumulation.rst",
            labels={
                "normalisers": ", ".join(normaliser(n).label for n in (ACC["normaliser"], "ghostbatchnorm")),
                "panels": f"one panel per micro-batch size: {', '.join(str(m) for m in ACC['micro_batches'])} rows",
                "format": "raster (PNG)",
            },
        ),
    params:
        batch_size=ACC["batch_size"],
    script:
        "../scripts/accumulation_figure.py"


register(rules.train_accumulation, [dict(block=b) for b in FOLLOW_UP_BLOCKS])
