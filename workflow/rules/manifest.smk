# The hash manifest: one row per output file of every other rule, in DAG order.
# Included last, after every rules file has registered its outputs.
import csv

REGISTRY[:] = dag_order(REGISTRY, REGISTERED_JOBS)
BENCHMARKS.sort()


# Snakemake re-creates a lost intermediate file only when something downstream of it is out of
# date too, else it answers "Nothing to be done": name the files the last finished build hashed
# that are gone, and what re-creates them (docs/verify.md).
_LOST = []
if workflow.is_main_process:
    try:
        with open("results/manifest.tsv", newline="", encoding="utf-8") as _built:
            _LOST = [
                row["path"]
                for row in csv.DictReader(_built, delimiter="\t")
                if row.get("path") and not Path(row["path"]).exists()
            ]
    except (OSError, UnicodeDecodeError, csv.Error):
        _LOST = []  # no finished build (or its manifest is damaged: python -m bnstudy.pipeline.manifest verify says so)
if _LOST:
    print(
        f"bnstudy: {len(_LOST)} output(s) of the last build are gone (first: {_LOST[0]}); "
        "if this run does not re-create them, `make repair` does (docs/verify.md)",
        file=sys.stderr,
    )


rule manifest:
    localrule: True
    message:
        "Hashing every output into results/manifest.tsv"
    input:
        [path for _, _, path in REGISTRY],
    output:
        manifest="results/manifest.tsv",
    params:
        entries=REGISTRY,
    script:
        "../scripts/manifest.py"


rule runtimes:
    localrule: True
    message:
        "Summarising per-rule runtimes from the benchmark files (not hashed: they differ on every run)"
    input:
        manifest=rules.manifest.output.manifest,
        benchmarks=BENCHMARKS,
    output:
        runtimes=report(
            "results/provenance/runtimes.csv",
            category="Provenance",
            subcategory="Runtimes",
            caption="../report/runtimes.rst",
            labels={"file": "per-rule runtimes of this build (CSV, not hashed)"},
        ),
    script:
        "../scripts/runtimes.py"
