"""What a person reads: findings in plain words, a one-screen summary, JSON, a figure and HTML."""

from __future__ import annotations

import base64
import html
import io
import json

from .findings import findings, interval, pct


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
        from .options import DESIGN_WORDS

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

    from .options import DESIGN_WORDS

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
    from .options import DESIGN_WORDS

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
