# Training. One job trains all seeds of one (normaliser, batch size) in lockstep.


rule train_grid:
    message:
        "Training {wildcards.normaliser} at batch size {wildcards.batch_size}, seeds %s" % SEEDS
    input:
        x=rules.split.output.x_train,
        y=rules.split.output.y_train,
        code=code("train.py"),
    output:
        weights=expand("results/runs/grid/{{normaliser}}/b{{batch_size}}/seed{seed}.safetensors", seed=SEEDS),
        epochs="results/runs/grid/{normaliser}/b{batch_size}/epochs.csv",
    params:
        seeds=SEEDS,
        net=lambda wc: net_params(wc.normaliser),
        recipe=lambda wc: recipe_params(config["grid"], wc.batch_size),
    conda:
        CONDA_ENV
    threads: THREADS  # config compute_threads: seeds trained at once
    resources:
        mem_mb=lambda wc, attempt: 1500 * attempt,
        runtime=60,
    log:
        "results/logs/train_grid/{normaliser}_b{batch_size}.log",
    benchmark:
        "results/benchmarks/train_grid/{normaliser}_b{batch_size}.tsv"
    script:
        "../scripts/train.py"


rule train_sorted:
    message:
        "Training {wildcards.normaliser} at batch size {wildcards.batch_size} on class-sorted batches"
    input:
        x=rules.split.output.x_train,
        y=rules.split.output.y_train,
        code=code("train.py"),
    output:
        weights=expand("results/runs/sorted/{{normaliser}}/b{{batch_size}}/seed{seed}.safetensors", seed=SEEDS),
        epochs="results/runs/sorted/{normaliser}/b{batch_size}/epochs.csv",
    params:
        seeds=SEEDS,
        net=lambda wc: net_params(wc.normaliser),
        recipe=lambda wc: recipe_params(config["grid"], wc.batch_size, order="class_sorted"),
    conda:
        CONDA_ENV
    threads: THREADS  # config compute_threads: seeds trained at once
    resources:
        mem_mb=lambda wc, attempt: 1500 * attempt,
        runtime=60,
    log:
        "results/logs/train_sorted/{normaliser}_b{batch_size}.log",
    benchmark:
        "results/benchmarks/train_sorted/{normaliser}_b{batch_size}.tsv"
    script:
        "../scripts/train.py"


DEP = config["dependence"]


rule train_dependence:
    message:
        "Training the dependence networks (study 1): SGD, batch size %d, seeds %s" % (DEP["batch_size"], DEP["seeds"])
    input:
        x=rules.split.output.x_train,
        y=rules.split.output.y_train,
        code=code("train.py"),
    output:
        weights=[f"results/runs/dependence/seed{s}.safetensors" for s in DEP["seeds"]],
        epochs="results/runs/dependence/epochs.csv",
    params:
        seeds=DEP["seeds"],
        net=net_params(DEP["normaliser"]),
        recipe=recipe_params(DEP, DEP["batch_size"]),
    conda:
        CONDA_ENV
    threads: THREADS  # config compute_threads: seeds trained at once
    resources:
        mem_mb=lambda wc, attempt: 1000 * attempt,
        runtime=20,
    log:
        "results/logs/train_dependence.log",
    benchmark:
        "results/benchmarks/train_dependence.tsv"
    script:
        "../scripts/train.py"


KEEP = config["last_batch_keep"]
KEEP_CELLS = [dict(normaliser=n, batch_size=KEEP["batch_size"]) for n in KEEP["normalisers"]]


rule train_keep:
    message:
        "Training {wildcards.normaliser} at batch size {wildcards.batch_size} with the leftover rows kept"
    input:
        x=rules.split.output.x_train,
        y=rules.split.output.y_train,
        code=code("train.py"),
    output:
        weights=expand("results/runs/keep/{{normaliser}}/b{{batch_size}}/seed{seed}.safetensors", seed=SEEDS),
        epochs="results/runs/keep/{normaliser}/b{batch_size}/epochs.csv",
    params:
        seeds=SEEDS,
        net=lambda wc: net_params(wc.normaliser),
        recipe=lambda wc: recipe_params(config["grid"] | {"last_batch": "keep"}, wc.batch_size),
    conda:
        CONDA_ENV
    threads: THREADS  # config compute_threads: seeds trained at once
    resources:
        mem_mb=lambda wc, attempt: 1000 * attempt,
        runtime=30,
    log:
        "results/logs/train_keep/{normaliser}_b{batch_size}.log",
    benchmark:
        "results/benchmarks/train_keep/{normaliser}_b{batch_size}.tsv"
    script:
        "../scripts/train.py"


rule train_dependence_keep:
    message:
        "Training the first dependence network with the leftover rows kept, seed %d" % DEP["seeds"][0]
    input:
        x=rules.split.output.x_train,
        y=rules.split.output.y_train,
        code=code("train.py"),
    output:
        weights=[f"results/runs/dependence_keep/seed{DEP['seeds'][0]}.safetensors"],
        epochs="results/runs/dependence_keep/epochs.csv",
    params:
        seeds=[DEP["seeds"][0]],
        net=net_params(DEP["normaliser"]),
        recipe=recipe_params(DEP | {"last_batch": "keep"}, DEP["batch_size"]),
    conda:
        CONDA_ENV
    threads: THREADS  # config compute_threads: seeds trained at once
    resources:
        mem_mb=lambda wc, attempt: 1000 * attempt,
        runtime=15,
    log:
        "results/logs/train_dependence_keep.log",
    benchmark:
        "results/benchmarks/train_dependence_keep.tsv"
    script:
        "../scripts/train.py"


SORTED = config["sorted_training"]
SORTED_CELLS = [dict(normaliser=SORTED["normaliser"], batch_size=b) for b in SORTED["batch_sizes"]]

register(rules.train_dependence)
register(rules.train_dependence_keep)
register(rules.train_keep, KEEP_CELLS)
register(rules.train_grid, grid_cells())
register(rules.train_sorted, SORTED_CELLS)
