# Convolutional networks (issue 17, item 1; issue 28): a CNN on the configured data set's split
# (its training and test rows as square one-channel images of the data set's side: the digits
# 8x8, Fashion-MNIST 28x28), every normaliser of `conv` at its batch sizes and seeds (one job per
# normaliser), study 2 on every network and study 1 at batches of two on the batch-norm networks,
# beside the MLP's numbers.

CONV = config["conv"]
CONV_CELLS = [dict(normaliser=n) for n in CONV["normalisers"]]
CONV_CHANNELS = [layer["channels"] for layer in CONV["layers"]] if "layers" in CONV else CONV["channels"]
CONV_SPEC = dict(
    channels=CONV_CHANNELS,
    groups=CONV["groups"],
    eps=config["network"]["eps"],
    momentum=config["network"]["momentum"],
) | ({"layers": CONV["layers"]} if "layers" in CONV else {})


rule train_conv:
    message:
        "Training the convolutional network with {wildcards.normaliser} at batch sizes %s x seeds %s"
        % (CONV["batch_sizes"], CONV["seeds"])
    input:
        x=rules.split.output.x_train,
        y=rules.split.output.y_train,
        x_test=rules.split.output.x_test,
        y_test=rules.split.output.y_test,
        code=code("conv_fit.py"),
    output:
        weights="results/conv/{normaliser}.safetensors",
        runs="results/conv/{normaliser}_runs.csv",
        epochs="results/conv/{normaliser}_epochs.csv",
    params:
        spec=lambda wc: CONV_SPEC | spec_settings(wc.normaliser, config),
        recipe=lambda wc: recipe_params(
            config["grid"] | {"epochs": CONV["epochs"]}, CONV["batch_sizes"][0], wc.normaliser
        ),
        batch_sizes=CONV["batch_sizes"],
        seeds=CONV["seeds"],
        eval_seed=config["batch_size_eval"]["seed"],
    conda:
        CONDA_ENV
    threads: THREADS  # config compute_threads: seeds trained at once
    resources:
        **job_size(1000, 30),
    log:
        log_for("train_conv", "{normaliser}"),
    benchmark:
        bench_for("train_conv", "{normaliser}")
    script:
        "../scripts/conv_fit.py"


rule probe_conv:
    message:
        "Probing the batch-norm convolutional networks with companions at batches of two"
    input:
        weights=expand(rules.train_conv.output.weights, normaliser="batchnorm"),
        x_test=rules.split.output.x_test,
        y_test=rules.split.output.y_test,
        examples=rules.companion_examples.output.examples,
        code=code("conv_probe.py"),
    output:
        probes="results/conv/probes.csv",
        rates="results/conv/flip_rates.csv",
    params:
        spec=CONV_SPEC,
        batch_sizes=CONV["batch_sizes"],
        seeds=CONV["seeds"],
        seed=CONV["probe"]["seed"],
        draws=CONV["probe"]["draws"],
        exact_per_class=CONV["probe"]["exact_per_class"],
        exact_companions=CONV["probe"].get("exact_companions"),
    conda:
        CONDA_ENV
    resources:
        **job_size(1000, 30),
    log:
        log_for("probe_conv"),
    benchmark:
        bench_for("probe_conv")
    script:
        "../scripts/conv_probe.py"


rule summarise_conv:
    message:
        "Summarising the convolutional network beside the MLP"
    input:
        runs=expand_cells(rules.train_conv.output.runs, CONV_CELLS),
        rates=rules.probe_conv.output.rates,
        probes=rules.probe_conv.output.probes,
        mlp=rules.summarise_batch_size.output.summary,
        mlp_flips=rules.summarise_companions.output.grid_table,
        x_test=rules.split.output.x_test,
        code=code("conv_summarise.py"),
    output:
        side="results/conv/side_by_side.csv",
        paired="results/conv/minus_none.csv",
        summary=report(
            "results/summary/conv.json",
            category="Study 8 - Convolutional networks",
            subcategory="Summary",
            caption="../report/summary.rst",
            labels={"summary": "the study's numbers (JSON)"},
        ),
        macros="results/paper/macros/conv.tex",
        table=report(
            "results/paper/tables/conv.tex",
            category="Study 8 - Convolutional networks",
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "the CNN beside the MLP: accuracy in both modes, flip rate at b = 2"},
        ),
    params:
        confidence=config["batch_size_eval"]["confidence"],
        channels=CONV_CHANNELS,
        layers=CONV.get("layers"),
        groups=CONV["groups"],
        epochs=CONV["epochs"],
        lr=config["grid"]["lr"],
        draws=CONV["probe"]["draws"],
        exact_per_class=CONV["probe"]["exact_per_class"],
        exact_companions=CONV["probe"].get("exact_companions"),
        mlp_seeds=len(SEEDS),
    conda:
        CONDA_ENV
    resources:
        **SECONDS_JOB,
    log:
        log_for("summarise_conv"),
    benchmark:
        bench_for("summarise_conv")
    script:
        "../scripts/conv_summarise.py"


rule figure_conv:
    message:
        "Drawing the convolutional network beside the MLP"
    input:
        side=rules.summarise_conv.output.side,
        code=code("conv_figure.py"),
    output:
        pdf=report(
            "results/paper/figures/conv.pdf",
            category="Study 8 - Convolutional networks",
            subcategory="Figure: the CNN beside the MLP",
            caption="../report/conv.rst",
            labels={
                "normalisers": ", ".join(normaliser(n).label for n in CONV["normalisers"]),
                "panels": "(a) accuracy of every normaliser; (b) batch norm in both modes; (c) batch norm's flip rate",
                "format": "vector (PDF)",
            },
        ),
        png=report(
            "results/paper/figures/conv.png",
            category="Study 8 - Convolutional networks",
            subcategory="Figure: the CNN beside the MLP",
            caption="../report/conv.rst",
            labels={
                "normalisers": ", ".join(normaliser(n).label for n in CONV["normalisers"]),
                "panels": "(a) accuracy of every normaliser; (b) batch norm in both modes; (c) batch norm's flip rate",
                "format": "raster (PNG)",
            },
        ),
    conda:
        CONDA_ENV
    resources:
        **SECONDS_JOB,
    log:
        log_for("figure_conv"),
    benchmark:
        bench_for("figure_conv")
    script:
        "../scripts/conv_figure.py"


register(rules.train_conv, CONV_CELLS)
