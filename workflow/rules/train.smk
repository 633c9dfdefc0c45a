# Training. One job trains one seed block of one (normaliser, batch size) cell, all
# its seeds at once (grid.seed_block), and evaluates what it trained: a new seed
# trains and evaluates only its own block.


# A data set with a validation split (Fashion-MNIST) scores every grid network on it after each
# epoch (the epochs file's validation_accuracy: the training curves); the digits have none.
GRID_VALIDATION = (
    dict(x_validation=rules.split.output.x_validation, y_validation=rules.split.output.y_validation)
    if "x_validation" in SPLIT_OUTPUTS
    else {}
)


rule train_grid:
    message:
        "Training and evaluating {wildcards.normaliser} at batch size {wildcards.batch_size}, seeds {wildcards.block}"
    input:
        **GRID_VALIDATION,
        x=rules.split.output.x_train,
        y=rules.split.output.y_train,
        x_test=rules.split.output.x_test,
        y_test=rules.split.output.y_test,
    output:
        weights="results/runs/grid/{normaliser}/b{batch_size}/seeds{block}.safetensors",
        epochs="results/runs/grid/{normaliser}/b{batch_size}/seeds{block}_epochs.csv",
        accuracy="results/batch_size/cells/{normaliser}_b{batch_size}_seeds{block}.csv",
        correct="results/batch_size/cells/{normaliser}_b{batch_size}_seeds{block}_correct.csv",
    params:
        seeds=block_seeds,
        net=lambda wc: net_params(wc.normaliser),
        recipe=lambda wc: recipe_params(config["grid"], wc.batch_size, wc.normaliser),
        eval_seed=config["batch_size_eval"]["seed"],
    threads: THREADS  # config compute_threads: seeds trained at once
    resources:
        **job_size(1500, 60),
    script:
        "../scripts/train.py"


rule train_sorted:
    message:
        "Training {wildcards.normaliser} at batch size {wildcards.batch_size} on class-sorted batches, seeds {wildcards.block}"
    input:
        x=rules.split.output.x_train,
        y=rules.split.output.y_train,
    output:
        weights="results/runs/sorted/{normaliser}/b{batch_size}/seeds{block}.safetensors",
        epochs="results/runs/sorted/{normaliser}/b{batch_size}/seeds{block}_epochs.csv",
    params:
        seeds=block_seeds,
        net=lambda wc: net_params(wc.normaliser),
        recipe=lambda wc: recipe_params(config["grid"], wc.batch_size, wc.normaliser, order="class_sorted"),
    threads: THREADS  # config compute_threads: seeds trained at once
    resources:
        **job_size(1500, 60),
    script:
        "../scripts/train.py"


DEP = config["dependence"]


rule train_dependence:
    message:
        "Training the dependence networks (study 1): SGD, batch size %d, seeds %s" % (DEP["batch_size"], DEP["seeds"])
    input:
        x=rules.split.output.x_train,
        y=rules.split.output.y_train,
    output:
        weights="results/runs/dependence/networks.safetensors",
        epochs="results/runs/dependence/epochs.csv",
    params:
        seeds=DEP["seeds"],
        net=net_params(DEP["normaliser"]),
        recipe=recipe_params(DEP, DEP["batch_size"], DEP["normaliser"]),
    threads: THREADS  # config compute_threads: seeds trained at once
    resources:
        **job_size(1000, 20),
    script:
        "../scripts/train.py"


KEEP = config["last_batch_keep"]
KEEP_CELLS = [dict(normaliser=n, batch_size=KEEP["batch_size"]) for n in KEEP["normalisers"]]


rule train_keep:
    message:
        "Training and evaluating {wildcards.normaliser} at batch size {wildcards.batch_size} with the leftover rows kept, seeds {wildcards.block}"
    input:
        x=rules.split.output.x_train,
        y=rules.split.output.y_train,
        x_test=rules.split.output.x_test,
        y_test=rules.split.output.y_test,
    output:
        weights="results/runs/keep/{normaliser}/b{batch_size}/seeds{block}.safetensors",
        epochs="results/runs/keep/{normaliser}/b{batch_size}/seeds{block}_epochs.csv",
        accuracy="results/batch_size/keep/{normaliser}_b{batch_size}_seeds{block}.csv",
        correct="results/batch_size/keep/{normaliser}_b{batch_size}_seeds{block}_correct.csv",
    params:
        seeds=block_seeds,
        net=lambda wc: net_params(wc.normaliser),
        recipe=lambda wc: recipe_params(config["grid"] | {"last_batch": "keep"}, wc.batch_size, wc.normaliser),
        eval_seed=config["batch_size_eval"]["seed"],
    threads: THREADS  # config compute_threads: seeds trained at once
    resources:
        **job_size(1000, 30),
    script:
        "../scripts/train.py"


rule train_dependence_keep:
    message:
        "Training the first dependence network with the leftover rows kept, seed %d" % DEP["seeds"][0]
    input:
        x=rules.split.output.x_train,
        y=rules.split.output.y_train,
    output:
        weights="results/runs/dependence_keep/networks.safetensors",
        epochs="results/runs/dependence_keep/epochs.csv",
    params:
        seeds=[DEP["seeds"][0]],
        net=net_params(DEP["normaliser"]),
        recipe=recipe_params(DEP | {"last_batch": "keep"}, DEP["batch_size"], DEP["normaliser"]),
    threads: THREADS  # config compute_threads: seeds trained at once
    resources:
        **job_size(1000, 15),
    script:
        "../scripts/train.py"


SORTED = config["sorted_training"]
SORTED_CELLS = [dict(normaliser=SORTED["normaliser"], batch_size=b) for b in SORTED["batch_sizes"]]

register(rules.train_dependence)
register(rules.train_dependence_keep)
register(rules.train_keep, with_follow_up_blocks(KEEP_CELLS))
register(rules.train_grid, with_blocks(grid_cells()))
register(rules.train_sorted, with_follow_up_blocks(SORTED_CELLS))
