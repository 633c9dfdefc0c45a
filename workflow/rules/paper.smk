# The paper: LaTeX sources in paper/, every number, table and figure from results/.


rule design_macros:
    localrule: True
    message:
        "Writing the study design (config and data sizes) as LaTeX macros"
    input:
        y_train=rules.split.output.y_train,
        y_test=rules.split.output.y_test,
    output:
        macros="results/paper/macros/design.tex",
    params:
        config=CANONICAL_CONFIG,
    script:
        "../scripts/design_macros.py"


register(rules.design_macros)
PAPER_INPUTS["macros_design"] = rules.design_macros.output.macros


rule families:
    localrule: True
    message:
        "Reading each study's families of comparisons against the config's declaration"
    input:
        unpack(lambda wc: {s: f"results/summary/{s}.json" for s in family_summaries()}),
    output:
        macros="results/paper/macros/families.tex",
        table=report(
            "results/paper/tables/families.tex",
            category="Methods",
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "the families of comparisons, their adjustment and smallest effect of interest"},
        ),
    params:
        families=canonical(config["families"]),
        formed=[[f, study] for f, study in catalogue.families(config).items()],  # in the paper's order
        sections={s.name: list(s.paper_sections) for s in catalogue.included(config) if s.formed_families(config)},
    script:
        "../scripts/families_table.py"


register(rules.families)
PAPER_INPUTS["macros_families"] = rules.families.output.macros
PAPER_INPUTS["table_families"] = rules.families.output.table


rule provenance:
    localrule: True
    message:
        "Recording package versions, digests and machine settings for the paper"
    input:
        outputs=[path for _, _, path in REGISTRY],
    output:
        analysis_manifest="results/provenance/analysis_manifest.tsv",
        macros="results/paper/macros/provenance.tex",
        table=report(
            "results/paper/tables/provenance.tex",
            category="Provenance",
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "software and compute settings of this build"},
        ),
    params:
        entries=dag_order(REGISTRY, REGISTERED_JOBS),
        config=CANONICAL_CONFIG,
    log:
        log_for("provenance"),
        machine="results/provenance/machine.csv",  # the build record: not hashed
    script:
        "../scripts/provenance.py"


register(rules.provenance)
PAPER_INPUTS["macros_provenance"] = rules.provenance.output.macros
PAPER_INPUTS["table_provenance"] = rules.provenance.output.table


rule paper:
    localrule: True
    message:
        "Building paper/main.pdf"
    input:
        unpack(lambda wc: PAPER_INPUTS),
        main="paper/main.tex",
        sections=sorted(str(p) for p in Path("paper/sections").glob("*.tex")),
    output:
        pdf=report(
            "paper/main.pdf", category="Paper", caption="../report/paper.rst", labels={"file": "the paper (PDF)"}
        ),
    params:
        generated=lambda wc: sorted((k, str(v)) for k, v in PAPER_INPUTS.items()),
        sections=catalogue.paper_sections(config),  # the studies' sections, for main.tex
    resources:
        **job_size(1000, 15),
    script:
        "../scripts/build_paper.py"


register(rules.paper)


rule figures:
    localrule: True
    message:
        "All figures of the paper"
    input:
        lambda wc: sorted(str(p) for p in PAPER_INPUTS.values() if "/figures/" in str(p)),
