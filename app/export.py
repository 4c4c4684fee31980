"""The explorer as one self-contained HTML file: no server, no network.

    python -m app.export OUT.html [--preset NAME] [--fragment]

Builds the same Bokeh page as the served app (widgets.page.HeadPage, from a
HeadState loaded with the preset), inlines BokehJS, static/attention.js (the
JavaScript port of the core), a little glue and static/a11y.js (control names,
the figures' tables, focus rings), and wires every control with CustomJS
instead of Python callbacks.  Each callback calls
`AttentionHead.attend` + `AttentionHead.viewData` in the browser and writes
the result into the same ColumnDataSources, colour mappers, ranges and Divs
that `HeadPage.update` writes on the server.

The page is laid out like the served one (app/main.py): a header, then the
Bokeh document's four roots (controls, top, readout, bottom; see
HeadPage.roots) placed by static/page.css's grid areas.  Separate roots keep
a change of the steps text from re-laying out the whole page.

`--fragment` writes a `<div>` (the same grid) plus `<script>` blocks (BokehJS
inlined too) that work pasted into any otherwise empty page.

Limitation, stated in the page too: the sliders are made once for the start
preset's shape, so the preset picker offers only presets with the same
number of tokens, width C and head width d as the start preset.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys
from dataclasses import asdict
from pathlib import Path

from bokeh.core.templates import get_env
from bokeh.embed import components, file_html
from bokeh.embed.bundle import bundle_for_objs_and_resources
from bokeh.models import CustomJS, Div
from bokeh.resources import Resources

from core.attention import NORMALISERS
from core.presets import PRESETS, Preset
from widgets import controls as controls_module
from widgets.controls import CUSTOM, SLIDER_LABEL_CHARS
from widgets.matrix_plot import FLAT_UP_TO, LABEL_FITS_CELL, SLANT
from widgets.page import SQUARE, HeadPage
from widgets.state import HeadState
from widgets.style import AXIS_LABEL_CHARS

ROOT = Path(__file__).resolve().parents[1]
ATTENTION_JS = ROOT / "static" / "attention.js"
BOKEH_PATCH_JS = ROOT / "static" / "bokeh_patch.js"
A11Y_JS = ROOT / "static" / "a11y.js"
A11Y_CSS = ROOT / "static" / "a11y.css"
EXPORT_CSS = ROOT / "static" / "export.css"
PAGE_CSS = ROOT / "static" / "page.css"
MAX_BYTES = 2_000_000

TITLE = "One attention head"
DESCRIPTION = (
    "Drag a token's vector, pick the query token, and watch how it divides its attention among the "
    "tokens and where its output lands. Every number is computed in your browser from the chapter's "
    "formulas."
)
# The Bokeh document's roots (HeadPage.roots), each in its grid area of static/page.css.
AREAS = (
    ("controls", "Controls"),
    ("top", "Weights and the blend"),
    ("readout", "The steps"),
    ("bottom", "Scores and projections"),
)

CSS = ""  # extra rules for the export only, with static/export.css if there is one

# The browser half: one state per embedded page, kept in a WeakMap keyed by
# the page's preset Select (so two fragments on one page do not share it).
# It mirrors HeadState.apply / load, HeadExplorer._redraw / _sync_controls and
# HeadPage.update.  Every label reaches the DOM as text: Select options,
# slider titles, axis ticks and hover fields are text in Bokeh; the message
# is escaped here; steps and checks come escaped from viewData.
GLUE_JS = r"""
(function () {
  "use strict";
  const NORMALISERS = __NORMALISERS__;
  const SQUARE = __SQUARE__;
  const CUSTOM = __CUSTOM__;
  const states = new WeakMap();

  function esc(text) {
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;").replace(/'/g, "&#x27;");
  }

  function sliderRange(v) {
    const t = Math.trunc(v);
    return [Math.min(-2.0, t - (v < 0 ? 1 : 0)), Math.max(2.0, t + (v > 0 ? 1 : 0))];
  }

  function fromPreset(p) {
    return {
      tokens: p.tokens.slice(), X: p.X.map(r => r.slice()), W_Q: p.W_Q, W_K: p.W_K, W_V: p.W_V,
      scaling: p.scaling, causal: p.causal, tied_qk: p.tied_qk, normaliser: p.normaliser,
      x_scale: p.x_scale, query: p.tokens.indexOf(p.query), preset: p.name,
    };
  }

  function stateOf(M) {
    let s = states.get(M.controls.preset);
    if (s === undefined) {
      const data = JSON.parse(M.controls.preset.tags[0]);
      s = {data: data, inputs: data.start, syncing: false, message: ""};
      states.set(M.controls.preset, s);
    }
    return s;
  }

  // Every Div.text write makes BokehJS re-lay out that Div's root, so unchanged text is not written.
  function setText(div, text) {
    if (div.text !== text) div.text = text;
  }

  function setMessage(M, s, text) {
    s.message = text;
    setText(M.controls.message, text ? '<div class="alert">' + esc(text) + "</div>" : "");
  }

  function assignData(source, value) {
    source.data = source.data instanceof Map ? new Map(Object.entries(value)) : value;
  }

  function column(source, name) {
    return source.data instanceof Map ? source.data.get(name) : source.data[name];
  }

  // Equal columns (numbers, NaN equal to NaN, or strings)?
  function sameColumn(a, b) {
    if (a === undefined || a.length !== b.length) return false;
    for (let k = 0; k < b.length; k++) {
      if (a[k] !== b[k] && !(Number.isNaN(a[k]) && Number.isNaN(b[k]))) return false;
    }
    return true;
  }

  // Write a source only if some column differs: each write re-indexes its glyphs and repaints the figure.
  function updateSource(source, value) {
    const same = Object.keys(value).every(k => sameColumn(column(source, k), value[k]));
    if (!same) assignData(source, value);
  }

  // Same cells, new numbers: keep the x, y, row and col columns, write only what changed (if anything).
  function updateCells(source, cells, reshape) {
    if (reshape) return assignData(source, cells);
    const value = column(source, "value"), text = column(source, "text");
    const newValue = !sameColumn(value, cells.value), newText = !sameColumn(text, cells.text);
    if (!newValue && !newText) return;
    const data = source.data instanceof Map ? new Map(source.data) : Object.assign({}, source.data);
    const put = (k, v) => (data instanceof Map ? data.set(k, v) : (data[k] = v));
    if (newValue) put("value", cells.value);
    if (newText) put("text", cells.text);
    source.data = data;
  }

  // The cells of a figure's matrices as one set of columns (widgets/matrix_plot.py side_by_side).
  function sideBySide(cells, blocks, gap) {
    const out = {x: [], y: [], value: [], text: [], row: [], col: [], matrix: []};
    const nCols = Math.max(...cells[blocks[0]].x) + 1;
    blocks.forEach((name, k) => {
      const c = cells[name], shift = k * (nCols + gap);
      c.x.forEach(x => { out.x.push(x + shift); out.matrix.push(name); });
      for (const col of ["y", "value", "text", "row", "col"]) out[col].push(...c[col]);
    });
    return out;
  }

  function isOn(active) {
    return Array.from(active || []).indexOf(0) >= 0;
  }

  function setToggle(box, on) {
    if (isOn(box.active) !== on) box.active = on ? [0] : [];
  }

  // A label cut to fit an axis or a slider title (widgets/style.py short_label).
  function shortLabel(label, width) {
    const chars = Array.from(String(label));
    return chars.length <= width ? chars.join("") : chars.slice(0, width - 1).join("") + "…";
  }

  // Tick labels for a token axis; a column axis slants them when one is too long for its cell
  // (widgets/matrix_plot.py MatrixPlot._set_axes).
  function overrides(axis, labels, columns) {
    const entries = labels.map((label, k) => [k, shortLabel(label, __AXIS_LABEL__)]);
    axis.major_label_overrides = axis.major_label_overrides instanceof Map
      ? new Map(entries) : Object.fromEntries(entries);
    if (columns) {
      const fits = entries.length <= __FLAT_UP_TO__
        && entries.every(([, text]) => Array.from(text).length <= __FITS_CELL__);
      axis.major_label_orientation = fits ? 0 : __SLANT__;
    }
  }

  function compute(v) {
    const head = AttentionHead.attend(v.X, v.W_Q, v.W_K, v.W_V, {
      scaling: v.scaling, causal: v.causal, tied_qk: v.tied_qk,
      normaliser: v.normaliser, x_scale: v.x_scale,
    });
    if (head.T !== v.tokens.length) {
      throw new Error("X has " + head.T + " rows but there are " + v.tokens.length + " token labels");
    }
    if (!Number.isInteger(v.query) || v.query < 0 || v.query >= head.T) {
      throw new Error("query is " + v.query + "; expected a token index from 0 to " + (head.T - 1));
    }
    return {head: head, data: AttentionHead.viewData(head, v.query, v.tokens, [0, 1])};
  }

  function draw(M, data, labels, relabel) {
    for (const name of Object.keys(M.plots)) {
      const m = M.plots[name];
      const [low, high] = data.limits[m.blocks[0]];  // Q, K and V share one colour range
      if (m.mapper.low !== low || m.mapper.high !== high) {
        m.mapper.setv({low: low, high: high});
        m.ink.setv({low: low, high: high});
      }
      updateCells(m.source, sideBySide(data.cells, m.blocks, m.gap), relabel);
      const square = SQUARE.indexOf(name) >= 0;
      if (square) updateSource(m.outline, data.outline);
      if (relabel) {
        if (square) overrides(m.xaxis, labels, true);
        overrides(m.yaxis, labels);
      }
    }
    const b = M.blend;
    updateSource(b.values, data.blend.values);
    updateSource(b.hull, data.blend.hull);
    updateSource(b.output, data.blend.output);
    updateSource(b.links, data.blend.links);
    const [x0, x1, y0, y1] = data.bounds;
    const xr = b.x_range, yr = b.y_range;
    if (relabel || x0 < xr.start || x1 > xr.end || y0 < yr.start || y1 > yr.end) {
      xr.setv({start: x0, end: x1});
      yr.setv({start: y0, end: y1});
    }
    if (b.xaxis.axis_label !== data.blend.axes.x) b.xaxis.axis_label = data.blend.axes.x;
    if (b.yaxis.axis_label !== data.blend.axes.y) b.yaxis.axis_label = data.blend.axes.y;
    setText(M.steps, data.steps + data.checks);  // widgets/page.py readout_html
  }

  function syncControls(M, s, relabel) {
    const v = s.inputs, c = M.controls;
    s.syncing = true;
    try {
      M.sliders.forEach((line, t) => line.forEach((slider, k) => {
        const x = v.X[t][k];
        const [low, high] = sliderRange(x);
        const change = {};
        if (slider.start !== low) change.start = low;
        if (slider.end !== high) change.end = high;
        if (slider.value !== x) change.value = x;
        if (relabel) change.title = shortLabel(v.tokens[t], __SLIDER_LABEL__) + "[" + k + "]";
        if (Object.keys(change).length) slider.setv(change);
      }));
      if (relabel) c.query.options = v.tokens.map((label, k) => [String(k), String(label)]);
      if (relabel && window.A11y) {  // static/a11y.js: the controls' names follow the tokens
        A11y.renameControls(c.query.document, v.tokens, v.X[0].length, v.W_Q[0].length);
      }
      if (c.query.value !== String(v.query)) c.query.value = String(v.query);
      setToggle(c.scaling, v.scaling);
      setToggle(c.causal, v.causal);
      setToggle(c.tied_qk, v.tied_qk);
      const n = NORMALISERS.indexOf(v.normaliser);
      if (c.normaliser.active !== n) c.normaliser.active = n;
      if (c.x_scale.value !== v.x_scale) c.x_scale.value = v.x_scale;
      const preset = v.preset || CUSTOM;
      if (c.preset.value !== preset) c.preset.value = preset;
      if (c.note) {
        const note = s.data.notes[v.preset];
        setText(c.note, note !== undefined ? note : (s.data.notes[""] || ""));
      }
    } finally {
      s.syncing = false;
    }
  }

  // HeadState.apply: compute once; refuse (and say why) if the core does.
  function apply(M, s, changes) {
    const next = Object.assign({}, s.inputs, changes);
    if (!("preset" in changes) && Object.keys(changes).some(k => k !== "query")) next.preset = "";
    let result;
    try {
      result = compute(next);
    } catch (err) {
      setMessage(M, s, err && err.message ? err.message : String(err));
      syncControls(M, s, false);
      return false;
    }
    const relabel = JSON.stringify(next.tokens) !== JSON.stringify(s.inputs.tokens);
    s.inputs = next;
    draw(M, result.data, next.tokens, relabel);
    syncControls(M, s, relabel);
    setMessage(M, s, "");
    return true;
  }

  function load(M, s, name) {
    const p = s.data.presets[name];
    if (p === undefined) {
      setMessage(M, s, "there is no preset called '" + name + "' in this page");
      syncControls(M, s, false);
      return false;
    }
    return apply(M, s, fromPreset(p));
  }

  // BokehJS runs CustomJS callbacks asynchronously, so the `syncing` flag
  // alone cannot catch the echoes of syncControls' own writes: a change that
  // asks for what the state already holds is ignored instead.
  function handle(kind, obj, M) {
    const s = stateOf(M);
    if (s.syncing) return;
    const v = s.inputs;
    try {
      if (kind === "x") {
        const t = obj.tags[0], k = obj.tags[1], value = obj.value;
        if (value === v.X[t][k]) return;
        if (typeof value !== "number" || !Number.isFinite(value)) {
          setMessage(M, s, v.tokens[t] + "[" + k + "] needs a finite number");
          syncControls(M, s, false);
          return;
        }
        const X = v.X.map(r => r.slice());
        X[t][k] = value;
        apply(M, s, {X: X});
      } else if (kind === "query") {
        const q = parseInt(obj.value, 10);
        if (q !== v.query) apply(M, s, {query: q});
      } else if (kind === "scaling" || kind === "causal" || kind === "tied_qk") {
        const on = isOn(obj.active);
        if (on !== v[kind]) apply(M, s, {[kind]: on});
      } else if (kind === "normaliser") {
        const n = NORMALISERS[obj.active];
        if (n !== v.normaliser) apply(M, s, {normaliser: n});
      } else if (kind === "x_scale") {
        const value = obj.value;
        if (value === v.x_scale) return;
        if (typeof value !== "number" || !Number.isFinite(value)) {
          setMessage(M, s, "Multiply X by needs a number; kept the last one.");
          syncControls(M, s, false);
        } else {
          apply(M, s, {x_scale: value});
        }
      } else if (kind === "preset") {
        if (obj.value !== CUSTOM && obj.value !== v.preset) load(M, s, obj.value);
      } else if (kind === "reset") {
        load(M, s, s.data.reset);
      }
    } catch (err) {  // a bug must not break the page: say so, keep the last state
      console.error(err);
      setMessage(M, s, "That change could not be applied (" + (err && err.name ? err.name : "Error") + ").");
    }
  }

  window.HeadExport = {handle: handle, states: states, escape: esc};
})();
"""

TEMPLATE = """{% extends "file.html.jinja" %}
{% from macros import embed %}
{% block preamble %}
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
{{ head_scripts }}
{% endblock %}
{% block postamble %}<style>{{ page_css }}</style>{% endblock %}
{% block contents %}
<main class="explorer head-export">
  {{ header }}
  {%- for name, label in areas %}
  <section class="area-{{ name }}" aria-label="{{ label }}">{{ embed(roots[name]) }}</section>
  {%- endfor %}
</main>
{% endblock %}
"""


def header_html() -> str:
    """The page's title and one-line description, as in the served page's template."""
    return f"<header><h1>{html.escape(TITLE)}</h1><p>{html.escape(DESCRIPTION)}</p></header>"


def page_css(fragment: bool = False) -> str:
    """static/page.css; a fragment leaves the host page's <body> alone."""
    css = PAGE_CSS.read_text() + A11Y_CSS.read_text()
    return re.sub(r"(?m)^body\s*\{[^}]*\}\s*$\n?", "", css) if fragment else css


def _script(text: str) -> str:
    """A <script> element holding `text`; a literal "</script" inside is split so it cannot close it."""
    return "<script>\n" + text.replace("</script", "<\\/script") + "\n</script>"


def preset_json(p: Preset) -> dict:
    data = asdict(p)
    data.pop("note", None)  # shown through `notes`, as HTML made by widgets.controls.preset_note
    return data


def _notes(presets: dict[str, Preset]) -> dict[str, str]:
    """The preset note panel's HTML per preset name ("" for your own edits), if the page has one."""
    note = getattr(controls_module, "preset_note", None)
    if note is None:
        return {}
    return {name: note(name) for name in [*presets, ""]}


def _shape(p: Preset) -> tuple[int, int, int]:
    return len(p.X), len(p.X[0]), len(p.W_Q[0])


def compatible_presets(start: Preset, presets: dict[str, Preset]) -> dict[str, Preset]:
    """The presets the page can load: the ones with the start preset's T, C and d."""
    return {name: p for name, p in presets.items() if _shape(p) == _shape(start)}


def build_page(preset: str | Preset = "chapter", presets: dict[str, Preset] | None = None) -> HeadPage:
    """The served app's page for one preset, wired with CustomJS for the browser."""
    presets = dict(PRESETS if presets is None else presets)
    start = preset if isinstance(preset, Preset) else presets[preset]
    presets.setdefault(start.name, start)
    state = HeadState()
    if not state.load(start):
        raise SystemExit(f"the preset {start.name!r} cannot be loaded: {state.message}")
    page = HeadPage.for_state(state)
    offered = compatible_presets(start, presets)
    _restrict_presets(page, start, offered, presets)
    data = {
        "presets": {name: preset_json(p) for name, p in offered.items()},
        "notes": _notes(offered),
        "reset": "chapter" if "chapter" in offered else start.name,
        "start": {
            "tokens": list(state.labels),
            "X": state.X.tolist(),
            "W_Q": state.W_Q.tolist(),
            "W_K": state.W_K.tolist(),
            "W_V": state.W_V.tolist(),
            "scaling": state.scaling,
            "causal": state.causal,
            "tied_qk": state.tied_qk,
            "normaliser": state.normaliser,
            "x_scale": state.x_scale,
            "query": state.query,
            "preset": state.preset,
        },
    }
    page.controls.preset.tags = [json.dumps(data)]
    _wire(page)
    return page


def _restrict_presets(page: HeadPage, start: Preset, offered: dict, presets: dict) -> None:
    c = page.controls
    c.preset.options = [(name, p.title) for name, p in offered.items()] + [(CUSTOM, "(your own edits)")]
    if "chapter" not in offered:
        c.reset.label = f"Reset to “{start.title}”"
    left_out = len(presets) - len(offered)
    if left_out:
        T, C, d = _shape(start)
        note = Div(
            text=f"This offline copy offers only the presets with {T} tokens, C = {C} and d = {d} "
            f"({left_out} other{'s' if left_out != 1 else ''} need{'' if left_out != 1 else 's'} the "
            "served explorer or another export).",
            name="export-preset-note",
            css_classes=["export-preset-note"],
            width=280,
            styles={"font-size": "12px", "color": "#555"},
        )
        children = list(c.layout.children)
        children.insert(children.index(c.preset) + 1, note)
        c.layout.children = children


def _models(page: HeadPage) -> dict:
    """Every model the browser's update writes, by the names HeadPage.update uses."""
    c = page.controls
    return {
        "plots": {
            name: {
                "blocks": m.names,
                "gap": m.GAP,
                "source": m.source,
                "outline": m.outline,
                "mapper": m.mapper,
                "ink": m.ink,
                "xaxis": m.figure.xaxis[0],
                "yaxis": m.figure.yaxis[0],
            }
            for name, m in page.plots.items()
        },
        "blend": {
            "values": page.blend.values,
            "hull": page.blend.hull,
            "output": page.blend.output,
            "links": page.blend.links,
            "x_range": page.blend.figure.x_range,
            "y_range": page.blend.figure.y_range,
            "xaxis": page.blend.figure.xaxis[0],
            "yaxis": page.blend.figure.yaxis[0],
        },
        "steps": page.steps,
        "controls": {
            "preset": c.preset,
            "query": c.query,
            "scaling": c.scaling,
            "causal": c.causal,
            "tied_qk": c.tied_qk,
            "normaliser": c.normaliser,
            "x_scale": c.x_scale,
            "message": c.message,
            "note": getattr(c, "note", None),
        },
        "sliders": c.tokens.sliders,
    }


def _callback(kind: str, models: dict) -> CustomJS:
    return CustomJS(args={"M": models}, code=f"window.HeadExport.handle({json.dumps(kind)}, cb_obj, M);")


def _wire(page: HeadPage) -> None:
    c, models = page.controls, _models(page)
    c.query.js_on_change("value", _callback("query", models))
    for name in ("scaling", "causal", "tied_qk"):
        getattr(c, name).js_on_change("active", _callback(name, models))
    c.normaliser.js_on_change("active", _callback("normaliser", models))
    c.x_scale.js_on_change("value", _callback("x_scale", models))
    c.preset.js_on_change("value", _callback("preset", models))
    c.reset.js_on_event("button_click", _callback("reset", models))
    x = _callback("x", models)
    for slider in c.tokens.flat:
        slider.js_on_change("value", x)


class BokehOnlyInline(Resources):
    """Bokeh's inline resources without other libraries' model files.

    Bokeh lists the `__javascript__` of every model class registered in the process, used or not;
    with Panel imported (a notebook, the test suite) that adds a link to one of Panel's files, which
    would break the file's promise of no requests. The page uses only Bokeh's own models.
    """

    def _collect_external_resources(self, resource_attr) -> list[str]:
        return []

    def clone(self, *, components=None) -> BokehOnlyInline:  # Bokeh's clone would return a plain Resources
        return BokehOnlyInline(
            mode="inline", components=components if components is not None else list(self.components)
        )


RESOURCES = BokehOnlyInline(mode="inline")


def head_scripts(attention_js: Path | None = None) -> str:
    """The <style> and <script> blocks that must come before the Bokeh document: the BokehJS patch, core port,
    glue, then static/a11y.js (names, figure tables, focus rings)."""
    path = attention_js or ATTENTION_JS
    if not path.exists():
        raise SystemExit(f"{path} is missing: the export needs the JavaScript port of the core")
    css = CSS + (EXPORT_CSS.read_text() if EXPORT_CSS.exists() else "")
    style = [f"<style>{css}</style>"] if css.strip() else []
    glue = (
        GLUE_JS.replace("__NORMALISERS__", json.dumps(list(NORMALISERS)))
        .replace("__SQUARE__", json.dumps(list(SQUARE)))
        .replace("__AXIS_LABEL__", str(AXIS_LABEL_CHARS))
        .replace("__SLIDER_LABEL__", str(SLIDER_LABEL_CHARS))
        .replace("__FLAT_UP_TO__", str(FLAT_UP_TO))
        .replace("__FITS_CELL__", str(LABEL_FITS_CELL))
        .replace("__SLANT__", str(SLANT))
        .replace("__CUSTOM__", json.dumps(CUSTOM))
    )
    return "\n".join(
        [
            *style,
            _script(BOKEH_PATCH_JS.read_text()),
            _script(path.read_text()),
            _script(glue),
            _script(A11Y_JS.read_text()),
        ]
    )


def render(
    preset: str | Preset = "chapter",
    *,
    fragment: bool = False,
    presets: dict[str, Preset] | None = None,
    attention_js: Path | None = None,
) -> str:
    """The export's HTML text: a whole page, or a fragment to paste into one."""
    page = build_page(preset, presets)
    scripts = head_scripts(attention_js)
    roots = {name: page.roots[name] for name, _ in AREAS}
    if fragment:
        script, divs = components(roots)
        bundle = bundle_for_objs_and_resources(list(roots.values()), RESOURCES)
        assert not bundle.js_files and not bundle.css_files, "inline resources must not link any file"
        bokeh_js = "\n".join(bundle)
        sections = "".join(
            f'<section class="area-{name}" aria-label="{label}">{divs[name]}</section>'
            for name, label in AREAS
        )
        return "\n".join(
            [
                "<!-- One attention head: paste anywhere in a page's <body>. -->",
                '<link rel="icon" href="data:,">',
                scripts,
                f"<style>{page_css(fragment=True)}</style>",
                bokeh_js,
                script,
                f'<div class="explorer head-export">{header_html()}{sections}</div>',
            ]
        )
    template = get_env().from_string(TEMPLATE)
    return file_html(
        list(roots.values()),
        resources=RESOURCES,
        title=TITLE,
        template=template,
        template_variables={
            "head_scripts": scripts,
            "page_css": page_css(),
            "header": header_html(),
            "areas": AREAS,
        },
    )


def export(out: Path | str, preset: str | Preset = "chapter", **kwargs) -> Path:
    out = Path(out)
    text = render(preset, **kwargs)
    out.write_text(text, encoding="utf-8")
    size = out.stat().st_size
    if size > MAX_BYTES:
        print(f"warning: {out} is {size} bytes, more than {MAX_BYTES}", file=sys.stderr)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the HTML file to write")
    parser.add_argument("--preset", default="chapter", choices=list(PRESETS), help="the preset to start from")
    parser.add_argument(
        "--fragment", action="store_true", help="write a <div> and <script> blocks to paste into a page"
    )
    args = parser.parse_args(argv)
    out = export(args.out, args.preset, fragment=args.fragment)
    print(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
