# The hash manifest: one row per output file of every other rule, in DAG order.
# Included last, after every rules file has registered its outputs.


REGISTRY[:] = dag_order(REGISTRY, REGISTERED_JOBS)
BENCHMARKS.sort()


rule manifest:
    message:
        "Hashing every output into results/manifest.tsv"
    input:
        [path for _, _, path in REGISTRY],
        code=code("manifest.py"),
    output:
        manifest="results/manifest.tsv",
    params:
        entries=REGISTRY,
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=per_attempt(500),
        runtime=per_attempt(5),
    log:
        "results/logs/manifest.log",
    benchmark:
        "results/benchmarks/manifest.tsv"
    script:
        "../scripts/manifest.py"


rule runtimes:
    message:
        "Summarising per-rule runtimes from the benchmark files (not hashed: they differ on every run)"
    input:
        manifest=rules.manifest.output.manifest,
        benchmarks=BENCHMARKS,
        code=code("runtimes.py"),
    output:
        runtimes=report(
            "results/provenance/runtimes.csv",
            category="Provenance",
            subcategory="Runtimes",
            caption="../report/runtimes.rst",
            labels={"file": "per-rule runtimes of this build (CSV, not hashed)"},
        ),
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=per_attempt(500),
        runtime=per_attempt(5),
    log:
        "results/logs/runtimes.log",
    script:
        "../scripts/runtimes.py"
