# Study 1: companion dependence of training-mode predictions, for the dependence
# networks and every network of the grid (one job per normaliser and seed block).

COMP = config["companions"]
# One probe job per normaliser and seed block, over every grid batch size (a job's
# start-up costs more CPU than probing a network without batch statistics).
PROBE_JOBS = with_follow_up_blocks([dict(normaliser=n) for n in NORMALISERS])


rule companion_examples:
    message:
        "Choosing %d test examples per class for the companion study" % COMP["examples_per_class"]
    input:
        y_test=rules.split.output.y_test,
        indices=rules.split.output.indices,
    output:
        examples="results/companions/examples.csv",
    params:
        seed=COMP["seed"],
        examples_per_class=COMP["examples_per_class"],
    script:
        "../scripts/companions_examples.py"


rule probe_companions_dependence:
    message:
        "Probing the dependence networks with random and one-class companions"
    input:
        weights=rules.train_dependence.output.weights,
        x_test=rules.split.output.x_test,
        y_test=rules.split.output.y_test,
        y_train=rules.split.output.y_train,
        examples=rules.companion_examples.output.examples,
    output:
        probes="results/companions/dependence/probes.csv",
    params:
        **comp_probe_params("dependence"),
    resources:
        **job_size(2000, 30),
    script:
        "../scripts/companions_probe.py"


rule probe_companions_dependence_keep:
    message:
        "Probing the first dependence network trained with the leftover rows kept"
    input:
        weights=rules.train_dependence_keep.output.weights,
        x_test=rules.split.output.x_test,
        y_test=rules.split.output.y_test,
        y_train=rules.split.output.y_train,
        examples=rules.companion_examples.output.examples,
    output:
        probes="results/companions/dependence_keep/probes.csv",
    params:
        **comp_probe_params("dependence_keep"),
    resources:
        **job_size(2000, 30),
    script:
        "../scripts/companions_probe.py"


rule probe_companions_grid:
    message:
        "Probing {wildcards.normaliser} networks of every grid batch size (seeds {wildcards.block}) with companions"
    input:
        weights=lambda wc: expand(
            rules.train_grid.output.weights, normaliser=wc.normaliser, batch_size=GRID_BATCH_SIZES, block=wc.block
        ),
        x_test=rules.split.output.x_test,
        y_test=rules.split.output.y_test,
        y_train=rules.split.output.y_train,
        examples=rules.companion_examples.output.examples,
    output:
        probes="results/companions/grid/{normaliser}_seeds{block}.csv",
    params:
        **comp_probe_params("grid"),
    resources:
        **job_size(2000, 120),
    script:
        "../scripts/companions_probe.py"


rule summarise_companions:
    message:
        "Summarising companion dependence with bootstrap intervals over examples"
    input:
        dependence=rules.probe_companions_dependence.output.probes,
        dependence_keep=rules.probe_companions_dependence_keep.output.probes,
        cells=expand_cells(rules.probe_companions_grid.output.probes, PROBE_JOBS),
        published="workflow/resources/published.yaml",
        kept=lambda wc: KEPT_PROBES,  # both protocols' probes: the published comparisons' family as formed there
    output:
        summary_table="results/companions/summary.csv",
        grid_table="results/companions/grid_over_seeds.csv",
        summary=report(
            "results/summary/companions.json",
            category=study_category("companions", "Companion dependence"),
            subcategory="Summary",
            caption="../report/summary.rst",
            labels={"summary": "the study's numbers (JSON)"},
        ),
        macros="results/paper/macros/companions.tex",
        table=report(
            "results/paper/tables/companions.tex",
            category=study_category("companions", "Companion dependence"),
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "first dependence network: flip rate, training-mode accuracy, share of examples flipped"},
        ),
        networks_table="results/companions/dependence_over_networks.csv",
        networks_latex=report(
            "results/paper/tables/companions_networks.tex",
            category=study_category("companions", "Companion dependence"),
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "every dependence network: means with an interval over networks"},
        ),
    params:
        **exact_companions_param(),
        **grid_batches_param(),
        seed=COMP["seed"],
        resamples=COMP["bootstrap_resamples"],
        confidence=COMP["confidence"],
        examples_per_class=COMP["examples_per_class"],
        batches_per_example=COMP["batches_per_example"],
        one_class_batch_size=COMP["one_class_batch_size"],
        # the family of published comparisons where formed: its intervals at its level, named by its tag
        families={f: d for f, d in declared_families("companions").items() if f == "protocol_published"},
    resources:
        **job_size(1000, 10),
    script:
        "../scripts/companions_summarise.py"


rule figure_companions:
    message:
        "Drawing flip rate against probe batch size for every normaliser"
    input:
        summary_table=rules.summarise_companions.output.summary_table,
        grid_table=rules.summarise_companions.output.grid_table,
        published="workflow/resources/published.yaml",
    output:
        pdf=report(
            "results/paper/figures/companions.pdf",
            category=study_category("companions", "Companion dependence"),
            subcategory="Figure: flip rate by probe batch size",
            caption="../report/companions.rst",
            labels={
                "normalisers": ", ".join(normaliser(n).label for n in NORMALISERS),
                "panels": f"dependence networks ({normaliser(config['dependence']['normaliser']).label}); every normaliser; "
                f"one panel per normaliser with batch statistics: {', '.join(normaliser(n).label for n in NORMALISERS if normaliser(n).batch_statistics)}",
                "format": "vector (PDF)",
            },
        ),
        png=report(
            "results/paper/figures/companions.png",
            category=study_category("companions", "Companion dependence"),
            subcategory="Figure: flip rate by probe batch size",
            caption="../report/companions.rst",
            labels={
                "normalisers": ", ".join(normaliser(n).label for n in NORMALISERS),
                "panels": f"dependence networks ({normaliser(config['dependence']['normaliser']).label}); every normaliser; "
                f"one panel per normaliser with batch statistics: {', '.join(normaliser(n).label for n in NORMALISERS if normaliser(n).batch_statistics)}",
                "format": "raster (PNG)",
            },
        ),
    params:
        **exact_companions_param(),
    script:
        "../scripts/companions_figure.py"


register(rules.probe_companions_grid, PROBE_JOBS)


# Study 1 under both protocols (issue 29, item 2): every dependence network trained again with
# the leftover rows kept (the first one is rule train_dependence_keep's), probed as the dropped
# ones are, and both protocols side by side against the published table.
DEP_KEEP_MORE = DEP["seeds"][1:]
KEPT_PROBES = [rules.probe_companions_dependence_keep.output.probes]

if DEP_KEEP_MORE:

    rule train_dependence_keep_more:
        message:
            "Training the other dependence networks with the leftover rows kept, seeds %s" % DEP_KEEP_MORE
        input:
            x=rules.split.output.x_train,
            y=rules.split.output.y_train,
        output:
            weights="results/runs/dependence_keep/more.safetensors",
            epochs="results/runs/dependence_keep/more_epochs.csv",
        params:
            seeds=DEP_KEEP_MORE,
            net=net_params(DEP["normaliser"]),
            recipe=recipe_params(DEP | {"last_batch": "keep"}, DEP["batch_size"], DEP["normaliser"]),
        threads: THREADS  # config compute_threads: seeds trained at once
        resources:
            **job_size(1000, 20),
        script:
            "../scripts/train.py"

    rule probe_companions_dependence_keep_more:
        message:
            "Probing the other dependence networks trained with the leftover rows kept"
        input:
            weights=rules.train_dependence_keep_more.output.weights,
            x_test=rules.split.output.x_test,
            y_test=rules.split.output.y_test,
            y_train=rules.split.output.y_train,
            examples=rules.companion_examples.output.examples,
        output:
            probes="results/companions/dependence_keep/more_probes.csv",
        params:
            **comp_probe_params("dependence_keep"),
        resources:
            **job_size(2000, 30),
        script:
            "../scripts/companions_probe.py"

    KEPT_PROBES.append(rules.probe_companions_dependence_keep_more.output.probes)


rule summarise_protocols:
    message:
        "Comparing study 1 under both protocols: leftover rows dropped and kept, over networks"
    input:
        dropped=rules.probe_companions_dependence.output.probes,
        kept=KEPT_PROBES,
        published="workflow/resources/published.yaml",
    output:
        networks="results/companions/protocols/networks.csv",
        over_networks="results/companions/protocols/over_networks.csv",
        paired="results/companions/protocols/kept_minus_dropped.csv",
        summary=report(
            "results/summary/protocols.json",
            category=study_category("companions", "Companion dependence"),
            subcategory="Summary",
            caption="../report/summary.rst",
            labels={"summary": "both protocols' numbers (JSON)"},
        ),
        macros="results/paper/macros/protocols.tex",
        latex_table=report(
            "results/paper/tables/protocols.tex",
            category=study_category("companions", "Companion dependence"),
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "leftover rows dropped and kept: means over networks beside the published values"},
        ),
    params:
        confidence=COMP["confidence"],
        families=declared_families("companions"),
    script:
        "../scripts/protocols_summarise.py"
