# Training-mode serving with live running statistics (issue 17, item 3): test
# batches streamed through the batch-norm grid networks in training mode, their
# running statistics moved after every batch.

SERVE = config["serving"]


rule serve_stream:
    message:
        "Serving %d random and %d class-sorted streams of %d-row batches through the %s grid networks in training mode"
        % (SERVE["replicates"], SERVE["replicates"], SERVE["batch_size"], SERVE["normaliser"])
    input:
        weights=expand(
            rules.train_grid.output.weights,
            normaliser=SERVE["normaliser"],
            batch_size=SERVE["train_batch_sizes"],
            block=FOLLOW_UP_BLOCKS,
        ),
        x_test=rules.split.output.x_test,
        y_test=rules.split.output.y_test,
        x_train=rules.split.output.x_train,
        y_train=rules.split.output.y_train,
    output:
        networks="results/serving/networks.csv",
        along="results/serving/along.csv",
    params:
        train_batch_sizes=SERVE["train_batch_sizes"],
        batch_size=SERVE["batch_size"],
        passes=SERVE["passes"],
        seed=SERVE["seed"],
        held_out=SERVE["held_out"],
        replicates=SERVE["replicates"],
        training_rows=SERVE.get("training_rows", False),
    resources:
        **job_size(1000, 10),
    script:
        "../scripts/serving_stream.py"


rule summarise_serving:
    message:
        "Summarising the serving study: JSON, macros, table"
    input:
        networks=rules.serve_stream.output.networks,
        along=rules.serve_stream.output.along,
    output:
        summary=report(
            "results/summary/serving.json",
            category=study_category("serving", "Serving with live running statistics"),
            subcategory="Summary",
            caption="../report/summary.rst",
            labels={"summary": "the study's numbers (JSON)"},
        ),
        along="results/serving/along_mean.csv",
        macros="results/paper/macros/serving.tex",
        table=report(
            "results/paper/tables/serving.tex",
            category=study_category("serving", "Serving with live running statistics"),
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "accuracy before and along the stream, by training batch size"},
        ),
    params:
        normaliser=SERVE["normaliser"],
        batch_size=SERVE["batch_size"],
        passes=SERVE["passes"],
        seed=SERVE["seed"],
        held_out=SERVE["held_out"],
        replicates=SERVE["replicates"],
        momentum=config["network"]["momentum"],
        confidence=SERVE["confidence"],
        families=declared_families("serving"),
    script:
        "../scripts/serving_summarise.py"


rule figure_serving:
    message:
        "Drawing training-mode accuracy along the served streams"
    input:
        summary=rules.summarise_serving.output.summary,
        along=rules.summarise_serving.output.along,
    output:
        pdf=report(
            "results/paper/figures/serving.pdf",
            category=study_category("serving", "Serving with live running statistics"),
            subcategory="Figure: accuracy along the served stream",
            caption="../report/serving.rst",
            labels={
                "normalisers": normaliser(SERVE["normaliser"]).label,
                "panels": "random stream; class-sorted stream",
                "format": "vector (PDF)",
            },
        ),
        png=report(
            "results/paper/figures/serving.png",
            category=study_category("serving", "Serving with live running statistics"),
            subcategory="Figure: accuracy along the served stream",
            caption="../report/serving.rst",
            labels={
                "normalisers": normaliser(SERVE["normaliser"]).label,
                "panels": "random stream; class-sorted stream",
                "format": "raster (PNG)",
            },
        ),
    params:
        normaliser=SERVE["normaliser"],
    script:
        "../scripts/serving_figure.py"
