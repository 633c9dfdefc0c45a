rule split:
    message:
        "Splitting the digits into stratified, standardised halves"
    input:
        code=code("split.py"),
    output:
        x_train="results/data/x_train.npy",
        y_train="results/data/y_train.npy",
        x_test="results/data/x_test.npy",
        y_test="results/data/y_test.npy",
        indices="results/data/split_indices.csv",
        standardisation="results/data/standardisation.csv",
    params:
        seed=config["split"]["seed"],
        test_size=config["split"]["test_size"],
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=per_attempt(1000),
        runtime=per_attempt(5),
    log:
        "results/logs/split.log",
    benchmark:
        "results/benchmarks/split.tsv"
    script:
        "../scripts/split.py"


register(rules.split)
