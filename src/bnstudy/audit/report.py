"""What a person reads: findings in plain words, a one-screen summary, JSON, a figure and HTML."""

from __future__ import annotations

import base64
import html
import io
import json
import math

SEVERITY = ("ok", "note", "warn")
STALE = 0.1  # distance above which running statistics are called stale (about a 10% error)


def pct(v) -> str:
    return "n/a" if v is None or v != v else f"{100 * v:.1f}%"


def interval(r) -> str:
    return "" if r["ci_low"] != r["ci_low"] else f" [{pct(r['ci_low'])}, {pct(r['ci_high'])}]"


def _level(rate) -> str:
    return "ok" if rate == 0 else "note" if rate < 0.01 else "warn"


def _ever(share: float) -> str:
    """How many sampled examples change with some companion, in words where a percentage would
    print a degenerate ``100.0%`` or ``0.0%`` for all or none."""
    if share == 1:
        return "every one of them changes"
    if share == 0:
        return "none of them changes"
    return f"{pct(share)} of them change"


def findings(result) -> list[dict]:
    """One dict per finding: ``topic``, ``level`` (ok, note, warn) and ``text``."""
    return _companion_findings(result) + _group_findings(result) + _layer_findings(result) + _accuracy_findings(result)


def _companion_findings(result) -> list[dict]:
    """No batch statistics at all; the serving batch; random batches."""
    out = []
    s = result.settings
    conf = f"{100 * s['confidence']:g}% interval over examples"
    random = sorted((r for r in result.flips if r["design"] == "random"), key=lambda r: r["batch_size"])
    batch_kinds = sorted({n["kind"] for n in result.normalisers if n["batch_statistics"]})
    if result.batch_free:
        kinds = ", ".join(sorted({n["kind"] for n in result.normalisers}))
        measured = sum(r["flips"] for r in result.flips)
        probes = sum(r["probes"] for r in result.flips)
        out.append(
            {
                "topic": "companions",
                "level": "ok" if measured == 0 else "warn",
                "text": f"No layer reads batch statistics ({kinds}: each example is normalised by itself), so no "
                f"label can depend on its companions; measured: {measured} of {probes} labels changed.",
            }
        )
    serving = s.get("serving_batch")
    out += _headline(result, conf)
    if serving and result.flip(serving) is not None and not result.batch_free:
        r = result.flip(serving)
        out.append(
            {
                "topic": "serving",
                "level": _level(r["flip_rate"]),
                "text": f"At your serving batch of {serving}, {pct(r['flip_rate'])} of labels depend on the "
                f"companions{interval(r)} ({conf}), if the model is run in training mode.",
            }
        )
    if random and not result.batch_free:
        parts = ", ".join(f"{pct(r['flip_rate'])} at b={r['batch_size']}" for r in random)
        worst = max(random, key=lambda r: r["flip_rate"])
        out.append(
            {
                "topic": "random",
                "level": _level(worst["flip_rate"]),
                "text": f"In random batches, the label changes between inference and training mode for {parts} "
                f"({', '.join(batch_kinds)}); largest at b={worst['batch_size']}{interval(worst)}.",
            }
        )
    return out


def _headline(result, conf: str) -> list[dict]:
    """With group ids and a serving batch: the flip rate in batches of one group at the serving batch,
    the batches a server of grouped traffic (one customer, source or day at a time) really sees."""
    s = result.settings
    serving = s.get("serving_batch")
    if not (s.get("groups") and serving) or result.batch_free:
        return []
    r = result.flip(serving, "group")
    if r is None:
        return [
            {
                "topic": "serving_groups",
                "level": "note",
                "text": f"No group holds {serving} rows: one-group batches of your serving batch were not "
                "measured (the notes say how many rows each size left out).",
            }
        ]
    base = result.flip(serving)
    against = f", against {pct(base['flip_rate'])} in random batches" if base else ""
    level = _level(r["flip_rate"])
    advice = (
        "No label changed: grouped batches leave this model's labels alone at that size."
        if level == "ok"
        else "Serve in evaluation mode (model.eval(), and a test that says so), never with the statistics of "
        "a batch of one group; if batches must be normalised together, mix groups within each batch, "
        "or use group or layer norm, which normalise each example by itself."
    )
    return [
        {
            "topic": "serving_groups",
            "level": level,
            "text": f"At your serving batch of {serving} with every batch from one group (one customer, source "
            f"or day, as your group ids say), {pct(r['flip_rate'])} of labels depend on the companions"
            f"{interval(r)} ({conf}){against}, if the model is run in training mode. {advice}",
        }
    ]


def _group_findings(result) -> list[dict]:
    """Batches of one label or one group; the exact design at b = 2."""
    out = []
    s = result.settings
    serving = s.get("serving_batch")
    for design, what in (("label", "one label"), ("group", "one group")):
        rows = sorted((r for r in result.flips if r["design"] == design), key=lambda r: r["batch_size"])
        if not rows or result.batch_free or (design == "group" and result.flip(serving or 0, "group")):
            continue  # the one-group rate at the serving batch is the headline
        at_serving = [r for r in rows if r["batch_size"] == serving]
        r = at_serving[0] if at_serving else max(rows, key=lambda r: r["flip_rate"])
        base = result.flip(r["batch_size"])
        against = f", against {pct(base['flip_rate'])} in random batches of that size" if base else ""
        out.append(
            {
                "topic": design,
                "level": _level(r["flip_rate"]),
                "text": f"In batches of {what} at b={r['batch_size']} (what sorted or grouped traffic does), "
                f"{pct(r['flip_rate'])}{interval(r)} of labels change{against}.",
            }
        )
    ex = result.flip(2, "exact")
    if ex is not None and not result.batch_free:
        out.append(
            {
                "topic": "exact",
                "level": _level(ex["flip_rate"]),
                "text": f"Exactly, at b=2 with every one of the {s['exact_pool'] - 1} other rows as companion: "
                f"{pct(ex['flip_rate'])} of labels change for {ex['examples']} sampled examples"
                f"{interval(ex)}; {_ever(ex['ever_flipped'])} with at least one companion.",
            }
        )
    return out


def _layer_findings(result) -> list[dict]:
    """Running statistics never updated, or stale for the data (or all within bounds)."""
    out = []
    bn = [r for r in result.layers if r["batch_statistics"]]
    never = [r for r in bn if r.get("never_updated")]
    if never:
        names = ", ".join(r["name"] for r in never[:5]) + (", ..." if len(never) > 5 else "")
        out.append(
            {
                "topic": "never_updated",
                "level": "warn",
                "text": f"Running statistics never updated in {len(never)} of {len(bn)} batch-norm layers ({names}): "
                "0 updates or still mean 0 and variance 1 as initialised, so inference mode normalises with the "
                "wrong statistics. Recompute them.",
            }
        )
    checked = [r for r in bn if r.get("mean_distance") is not None]
    rows = checked[0].get("statistics_rows") if checked else None
    banded = [r for r in checked if r.get("mean_noise") is not None]
    beyond = f" beyond the sampling noise of the data's {rows} rows" if banded else ""
    allowing = f", once the sampling noise of its {rows} rows is allowed for" if banded else ""
    stale = sorted(
        (r for r in checked if r["stale"] and not r["never_updated"]),
        key=lambda r: -max(r["mean_distance"], r["var_distance"]),
    )
    if stale:
        worst = "; ".join(
            f"{r['name']}: mean off by {r['mean_distance']:.2f} standard deviations, variance by a factor "
            f"{math.exp(r['var_distance']):.2f}"
            for r in stale[:3]
        )
        updates = sorted({r["updates"] for r in stale if r["updates"] is not None})
        carried = f"; they carry {', '.join(map(str, updates[:3]))}{'...' if len(updates) > 3 else ''} updates"
        carried = carried if updates else ""
        out.append(
            {
                "topic": "stale",
                "level": "warn",
                "text": f"Running statistics are stale for this data in {len(stale)} of {len(bn)} batch-norm layers "
                f"(RMS distance from the exact statistics above {STALE:g}{beyond}; worst: {worst}){carried}.",
            }
        )
    elif checked and not never:
        worst = max(checked, key=lambda r: max(r["mean_distance"], r["var_distance"]))
        out.append(
            {
                "topic": "stale",
                "level": "ok",
                "text": f"All {len(checked)} batch-norm layers hold running statistics within {STALE:g} of the exact "
                f"statistics of the data{allowing} (largest: {worst['name']}, mean {worst['mean_distance']:.3f}, "
                f"variance {worst['var_distance']:.3f}).",
            }
        )
    noisy = [r for r in banded if max(r["mean_noise"], r["var_noise"]) > STALE]
    if noisy:
        top = max(noisy, key=lambda r: max(r["mean_noise"], r["var_noise"]))
        out.append(
            {
                "topic": "noise",
                "level": "note",
                "text": f"With {rows} rows the exact statistics are themselves uncertain by up to "
                f"{max(top['mean_noise'], top['var_noise']):.2f} ({top['name']}, 95% band): staleness below that "
                "cannot be told from sampling noise. More rows (--stats-data) narrow the band.",
            }
        )
    return out


def _accuracy_findings(result) -> list[dict]:
    """Accuracy with the stored running statistics, and with recomputed ones."""
    out = []
    a = result.accuracy
    if a is not None and a.get("recomputed") is not None:
        gain = 100 * a["gain"]
        ci = (
            ""
            if a["gain_ci_low"] != a["gain_ci_low"]
            else f" [{100 * a['gain_ci_low']:+.1f}, {100 * a['gain_ci_high']:+.1f}]"
        )
        level = "warn" if a["gain_ci_low"] == a["gain_ci_low"] and a["gain_ci_low"] > 0 else "ok"
        out.append(
            {
                "topic": "accuracy",
                "level": level,
                "text": f"Accuracy with the stored running statistics {pct(a['running'])}; with statistics "
                f"recomputed on the {a['statistics_data']} ({a['statistics_rows']} rows, PreciseBN-style) "
                f"{pct(a['recomputed'])}: {gain:+.1f} points{ci}; {a['changed_labels']} labels change.",
            }
        )
    elif a is not None:
        out.append({"topic": "accuracy", "level": "ok", "text": f"Inference-mode accuracy {pct(a['running'])}."})
    return out


def summary(result) -> str:
    """The one-screen summary: findings, then the table of flip rates."""
    s, t = result.settings, result.timing
    mark = {"ok": "  ok ", "note": " note", "warn": " WARN"}
    lines = [
        f"bnstudy audit: {s['rows']} examples of shape {tuple(s['input_shape'])}, "
        f"{sum(n['batch_statistics'] for n in result.normalisers)} batch-statistics and "
        f"{sum(not n['batch_statistics'] for n in result.normalisers)} batch-free normalisation layers",
        f"{t['probes']} probes in {t['probe_seconds']:.1f} s ({t['probes_per_second']:.0f}/s); "
        f"{s['probes_per_example']} per example and size",
        "",
    ]
    lines += [f"{mark[f['level']]}  {f['text']}" for f in findings(result)]
    lines += ["", f"{'design':<28}{'b':>5}{'examples':>10}{'flip rate':>11}  {100 * s['confidence']:g}% interval"]
    order = {"random": 0, "label": 1, "group": 2, "exact": 3}
    for r in sorted(result.flips, key=lambda r: (order[r["design"]], r["batch_size"])):
        from .core import DESIGN_WORDS

        ci = f"[{pct(r['ci_low'])}, {pct(r['ci_high'])}]" if r["ci_low"] == r["ci_low"] else "none (one example)"
        lines.append(
            f"{DESIGN_WORDS[r['design']]:<28}{r['batch_size']:>5}{r['examples']:>10}{pct(r['flip_rate']):>11}  {ci}"
        )
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines)


def to_dict(result) -> dict:
    """Everything but the per-example counts, JSON-safe (NaN as null)."""

    def clean(v):
        if isinstance(v, float) and v != v:
            return None
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, list):
            return [clean(x) for x in v]
        return v

    return clean(
        {
            "settings": result.settings,
            "findings": findings(result),
            "flips": result.flips,
            "layers": result.layers,
            "accuracy": result.accuracy,
            "normalisers": result.normalisers,
            "timing": result.timing,
            "notes": result.notes,
        }
    )


def json_bytes(result) -> bytes:
    return (json.dumps(to_dict(result), indent=2, sort_keys=True) + "\n").encode()


def need_matplotlib(option: str) -> None:
    """Refuse ``option`` (``--figure``, ``--html``) in one line if matplotlib is not installed."""
    import importlib.util

    from .engine import AuditError

    if importlib.util.find_spec("matplotlib") is None:
        raise AuditError(
            f"{option} draws its figure with matplotlib, which is not installed: pip install matplotlib "
            "(or pip install 'bnstudy[figures]')"
        )


def write_json(result, path) -> None:
    from pathlib import Path

    from .files import write_all

    write_all([(Path(path), json_bytes(result))])


def figure_png(result, dpi: int = 110) -> bytes:
    """Flip rate against batch size (log scale), random against one-group designs, with intervals."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from .core import DESIGN_WORDS

    fig = Figure(figsize=(6.4, 4.0))
    ax = fig.add_subplot()
    styles = {"random": ("C0", "o-"), "label": ("C1", "s--"), "group": ("C2", "^-."), "exact": ("C3", "D")}
    for design, (colour, style) in styles.items():
        rows = sorted((r for r in result.flips if r["design"] == design), key=lambda r: r["batch_size"])
        if not rows:
            continue
        b = [r["batch_size"] for r in rows]
        v = [100 * r["flip_rate"] for r in rows]
        lo = [max(0.0, v_ - 100 * r["ci_low"]) if r["ci_low"] == r["ci_low"] else 0.0 for v_, r in zip(v, rows)]
        hi = [max(0.0, 100 * r["ci_high"] - v_) if r["ci_high"] == r["ci_high"] else 0.0 for v_, r in zip(v, rows)]
        ax.errorbar(b, v, yerr=[lo, hi], fmt=style, color=colour, capsize=3, label=DESIGN_WORDS[design])
    serving = result.settings.get("serving_batch")
    if serving:
        ax.axvline(serving, color="0.5", lw=0.8, ls=":")
        ax.annotate("serving batch", (serving, 1), xycoords=("data", "axes fraction"), fontsize=8, ha="left", va="top")
    ax.set_xscale("log", base=2)
    sizes = result.settings["batch_sizes"]
    ax.set_xticks(sizes, [str(b) for b in sizes])
    ax.set_xlabel("batch size b (training mode)")
    ax.set_ylabel("labels that change (%)")
    ax.set_ylim(bottom=0)
    ax.set_title("Companion dependence: inference vs training mode")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


def write_figure(result, path) -> None:
    from pathlib import Path

    from .files import write_all

    write_all([(Path(path), figure_png(result))])


def _layer_table_rows(result) -> str:
    """The HTML rows of the normalisation layers' table."""
    e = html.escape

    def num(v, f="{:.3f}"):
        return "n/a" if v is None else f.format(v)

    def verdict(r):
        if r.get("never_updated"):
            return "never updated"
        return {True: "stale", False: "ok"}.get(r.get("stale"), "n/a")

    return "\n".join(
        f"<tr><td>{e(r['name'])}</td><td>{e(r['kind'])}</td>"
        + (
            f"<td>{num(r.get('updates'), '{}')}</td><td>{num(r.get('mean_distance'))}</td>"
            f"<td>{num(r.get('var_distance'))}</td><td>{num(r.get('mean_noise'))} / {num(r.get('var_noise'))}</td>"
            f"<td>{verdict(r)}</td>"
            if r["batch_statistics"]
            else "<td colspan=5>batch-free (normalises each example by itself)</td>"
        )
        + "</tr>"
        for r in result.layers
    )


def html_report(result) -> str:
    """A self-contained HTML page: findings, the figure (embedded PNG), tables. The page's script
    records whether the figure decoded (``data-figure-width`` on the body) and says so if not."""
    from .core import DESIGN_WORDS

    e = html.escape
    png = base64.b64encode(figure_png(result)).decode("ascii")
    colour = {"ok": "#1a7f37", "note": "#9a6700", "warn": "#cf222e"}
    items = "\n".join(
        f'<li><b style="color:{colour[f["level"]]}">{e(f["level"])}</b> {e(f["text"])}</li>' for f in findings(result)
    )
    flip_rows = "\n".join(
        f"<tr><td>{e(DESIGN_WORDS[r['design']])}</td><td>{r['batch_size']}</td><td>{r['examples']}</td>"
        f"<td>{r['probes']}</td><td>{pct(r['flip_rate'])}</td><td>{e(interval(r).strip())}</td>"
        f"<td>{pct(r['ever_flipped'])}</td></tr>"
        for r in result.flips
    )

    layer_rows = _layer_table_rows(result)
    notes = "".join(f"<li>{e(n)}</li>" for n in result.notes)
    s, t = result.settings, result.timing
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>bnstudy audit</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:.2em .6em;text-align:right}}
td:first-child,th:first-child{{text-align:left}}li{{margin:.3em 0}}</style></head>
<body>
<h1>bnstudy audit</h1>
<p>{s["rows"]} examples of shape {e(str(tuple(s["input_shape"])))}; {s["probes_per_example"]} probes per
example and batch size; {t["probes"]} probes in {t["probe_seconds"]:.1f} s. A probe is one prediction in
training mode (batch statistics) inside a batch; it flips when its label differs from the inference-mode
label (running statistics).</p>
<h2>Findings</h2>
<ul>
{items}
</ul>
<h2>Flip rate against batch size</h2>
<img id="figure" alt="flip rate against batch size" src="data:image/png;base64,{png}">
<p id="figure-status"></p>
<table><tr><th>companions</th><th>b</th><th>examples</th><th>probes</th><th>flip rate</th>
<th>{100 * s["confidence"]:g}% interval</th><th>ever flipped</th></tr>
{flip_rows}
</table>
<h2>Normalisation layers</h2>
<p>Distances of the running statistics from the exact statistics of the data: mean, RMS shift in
standard deviations; variance, RMS log-ratio (0.1 is about 10%). The noise band (mean / variance) is
how far the exact statistics of this many rows stray by sampling alone (95%); a layer is stale when a
distance exceeds 0.1 and its band added in squares.</p>
<table><tr><th>layer</th><th>kind</th><th>updates</th><th>mean distance</th><th>variance distance</th>
<th>noise band</th><th>verdict</th></tr>
{layer_rows}
</table>
{f"<h2>Notes</h2><ul>{notes}</ul>" if notes else ""}
<script>
(function () {{
  var img = document.getElementById("figure");
  function done() {{
    document.body.setAttribute("data-figure-width", String(img.naturalWidth));
    if (!img.naturalWidth) document.getElementById("figure-status").textContent = "The figure did not load.";
  }}
  if (img.complete) done(); else {{ img.addEventListener("load", done); img.addEventListener("error", done); }}
}})();
</script>
</body></html>
"""


def write_html(result, path) -> None:
    from pathlib import Path

    from .files import write_all

    write_all([(Path(path), html_report(result).encode("utf-8"))])


RENDER = {"json": json_bytes, "figure": figure_png, "html": lambda result: html_report(result).encode("utf-8")}
