# The hash manifest: one row per output file of every other rule, in DAG order.
# Included last, after every rules file has registered its outputs.


REGISTRY[:] = dag_order(REGISTRY, REGISTERED_JOBS)
BENCHMARKS.sort()


def lost_outputs(built="results/manifest.tsv"):
    """Files the last finished build hashed that are gone now (empty if it has no readable manifest)."""
    import csv

    try:
        with open(built, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
    except (OSError, UnicodeDecodeError, csv.Error):
        return []
    return [r["path"] for r in rows if r.get("path") and not Path(r["path"]).exists()]


# Snakemake re-creates a lost intermediate file only when something downstream of it is out of
# date too, else it answers "Nothing to be done": say so, and what re-creates it (docs/verify.md).
_LOST = lost_outputs() if workflow.is_main_process else []
if _LOST:
    print(
        f"bnstudy: {len(_LOST)} output(s) of the last build are gone (first: {_LOST[0]}); "
        "if this run does not re-create them, `make repair` does (docs/verify.md)",
        file=sys.stderr,
    )


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
