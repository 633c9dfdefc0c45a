# Side by side: this build's headline numbers beside those of other builds, read from the macro
# files each other build's pipeline wrote, once they match the manifest the config names
# (bnstudy.studies.compare; the config check verifies them before any job starts).

COMPARE_CAPTION = "Side by side"
COMPARE_BUILDS = config["compare"]["builds"]
COMPARE_APPEND = config["compare"].get("append_papers", False)
# each other build's paper, copied once its bytes match its manifest (append_papers), and the pages
# that append them to this paper
COMPARE_PARTS = (
    dict(
        parts=[f"results/paper/parts/part{i + 1}.pdf" for i in range(len(COMPARE_BUILDS))],
        parts_tex="results/paper/tables/compare_parts.tex",
    )
    if COMPARE_APPEND
    else {}
)


rule summarise_compare:
    message:
        "Setting the headline numbers of %d other build(s) beside this one's" % len(config["compare"]["builds"])
    input:
        ours=compare_own_macros,
        theirs=compare_their_macros(),
        expected=[build["expected"] for build in COMPARE_BUILDS],
        papers=[os.path.join(b["directory"], "paper/main.pdf") for b in COMPARE_BUILDS] if COMPARE_APPEND else [],
    output:
        **COMPARE_PARTS,
        summary=report(
            "results/summary/compare.json",
            category=COMPARE_CAPTION,
            subcategory="Summary",
            caption="../report/summary.rst",
            labels={"summary": "the table's cells, by build (JSON)"},
        ),
        macros="results/paper/macros/compare.tex",
        table=report(
            "results/paper/tables/compare.tex",
            category=COMPARE_CAPTION,
            subcategory="LaTeX tables",
            caption="../report/table.rst",
            labels={"table": "headline numbers of this build and the others, side by side"},
        ),
    params:
        builds=canonical(COMPARE_BUILDS),
        append_papers=COMPARE_APPEND,
    script:
        "../scripts/compare_summarise.py"
