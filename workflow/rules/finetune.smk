# Fine-tuning in small batches (issue 17, item 5): the batch-norm grid networks of one
# batch size fine-tuned in small batches, random or one-class, with the normalisation
# layers live (training mode) or frozen (inference mode).

TUNE = config["finetune"]
# bnstudy.studies.finetune.science.CONTROLS that the grid trains: the fine-tuning arms' controls
FINETUNE_CONTROLS = [n for n in ["none", "layernorm"] if n in config["normalisers"]]


rule finetune:
    message:
        "Fine-tuning the batchnorm grid networks of b=%d, seeds {wildcards.block}, for %d steps in batches of %d, live and frozen"
        % (TUNE["source_batch_size"], TUNE["steps"], TUNE["batch_size"])
    input:
        weights=expand(
            rules.train_grid.output.weights,
            normaliser="batchnorm",
            batch_size=TUNE["source_batch_size"],
            allow_missing=True,
        ),
        x_train=rules.split.output.x_train,
        y_train=rules.split.output.y_train,
        x_test=rules.split.output.x_test,
        y_test=rules.split.output.y_test,
    output:
        networks="results/finetune/seeds{block}_networks.csv",
        along="results/finetune/seeds{block}_along.csv",
    params:
        batch_size=TUNE["batch_size"],
        steps=TUNE["steps"],
        lrs=TUNE["lrs"],
        every=TUNE["every"],
        seed=TUNE["seed"],
    resources:
        **job_size_with_rows(1000, 10),
    script:
        "../scripts/finetune_run.py"


rule finetune_arms:
    message:
        "Fine-tuning arms (issue 29), seeds {wildcards.block}: batch norm live, frozen and at momentum 0, no normaliser and layer norm, on the training half as it is and shifted"
    input:
        weights=expand(
            rules.train_grid.output.weights,
            normaliser=["batchnorm", *FINETUNE_CONTROLS],
            batch_size=TUNE["source_batch_size"],
            allow_missing=True,
        ),
        x_train=rules.split.output.x_train,
        y_train=rules.split.output.y_train,
        x_test=rules.split.output.x_test,
        y_test=rules.split.output.y_test,
    output:
        arms="results/finetune/seeds{block}_arms.csv",
    params:
        normalisers=["batchnorm", *FINETUNE_CONTROLS],
        batch_size=TUNE["batch_size"],
        steps=TUNE["steps"],
        lrs=TUNE["lrs"],
        seed=TUNE["seed"],
        shift=canonical(TUNE["shift"]),
    resources:
        **job_size_with_rows(1000, 10),
    script:
        "../scripts/finetune_arms.py"


rule summarise_finetune:
    message:
        "Summarising the fine-tuning study: JSON, macros, table"
    input:
        networks=expand(rules.finetune.output.networks, block=FOLLOW_UP_BLOCKS),
        along=expand(rules.finetune.output.along, block=FOLLOW_UP_BLOCKS),
        arms=expand(rules.finetune_arms.output.arms, block=FOLLOW_UP_BLOCKS),
        y_train=rules.split.output.y_train,
    output:
        summary=report(
            "results/summary/finetune.json",
            category=study_category("finetune", "Fine-tuning in small batches"),
            subcategory="Summary",
            caption="../report/summary.rst",
            labels={"summary": "the study's numbers (JSON)"},
        ),
        along="results/finetune/along_mean.csv",
        macros="results/paper/macros/finetune.tex",
        table=report(
            "results/paper/tables/finetune.tex",
            category=study_category("finetune", "Fine-tuning in small batches"),
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "change of accuracy after fine-tuning, live and frozen"},
        ),
        arms_table=report(
            "results/paper/tables/finetune_arms.tex",
            category=study_category("finetune", "Fine-tuning in small batches"),
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "change of accuracy by arm and input condition, with the controls"},
        ),
    params:
        source_batch_size=TUNE["source_batch_size"],
        batch_size=TUNE["batch_size"],
        steps=TUNE["steps"],
        lrs=TUNE["lrs"],
        every=TUNE["every"],
        seed=TUNE["seed"],
        shift=canonical(TUNE["shift"]),
        momentum=config["network"]["momentum"],
        confidence=TUNE["confidence"],
        families=declared_families("finetune"),
    script:
        "../scripts/finetune_summarise.py"


rule figure_finetune:
    message:
        "Drawing the networks along the fine-tuning"
    input:
        summary=rules.summarise_finetune.output.summary,
        along=rules.summarise_finetune.output.along,
        networks=expand(rules.finetune.output.along, block=FOLLOW_UP_BLOCKS),
    output:
        pdf=report(
            "results/paper/figures/finetune.pdf",
            category=study_category("finetune", "Fine-tuning in small batches"),
            subcategory="Figure: accuracy and statistics along the fine-tuning",
            caption="../report/finetune.rst",
            labels={
                "normalisers": "batch norm",
                "panels": f"one column per learning rate: {', '.join(f'{lr:g}' for lr in config['finetune']['lrs'])}; rows: accuracy, distance to the exact statistics; bands: range over networks",
                "format": "vector (PDF)",
            },
        ),
        png=report(
            "results/paper/figures/finetune.png",
            category=study_category("finetune", "Fine-tuning in small batches"),
            subcategory="Figure: accuracy and statistics along the fine-tuning",
            caption="../report/finetune.rst",
            labels={
                "normalisers": "batch norm",
                "panels": f"one column per learning rate: {', '.join(f'{lr:g}' for lr in config['finetune']['lrs'])}; rows: accuracy, distance to the exact statistics; bands: range over networks",
                "format": "raster (PNG)",
            },
        ),
    script:
        "../scripts/finetune_figure.py"


register(rules.finetune, [dict(block=b) for b in FOLLOW_UP_BLOCKS])
register(rules.finetune_arms, [dict(block=b) for b in FOLLOW_UP_BLOCKS])
