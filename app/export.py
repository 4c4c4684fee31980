"""The explorer as one self-contained HTML file: no server, no network.

    python -m app.export OUT.html [--preset NAME] [--fragment]

Builds the same Bokeh page as the served app (widgets.page.HeadPage and widgets.editor.HeadEditor, from a
HeadState loaded with the preset), inlines BokehJS and the scripts of static/ as they are: bokeh_seam.js
(the one seam to BokehJS's internals), attention.js (the port of the core and of widgets/viewdata.py),
lessons.js (the port of core/lessons.py: the walk and the questions), explorer.js (the port of
HeadState's logic, links and downloads, as pure functions), lesson_page.js (the lesson panel's binding),
explorer_page.js (the binding that writes view data into the Bokeh models) and a11y.js. The page is made
by the page's own script, not by Bokeh's embed script: Bokeh's JSON of the document, written as JSON
(`embed_scripts`), the roots in LATER (the lesson's panel, the control panel, the editor, the lower
figures, the further explorers) kept apart, and one JSON configuration: where each root goes, and the
binding's (ExportPage.config: the switches table, limits, every preset, the questions, the start state,
view constants and the ids of the models the binding drives).
static/export_embed.js, right after the roots, hands it to `HeadExplorerPage.embed`, which makes the first
part, binds it, and reads the later roots and makes their views only once the rest is interactive and
painted (or, where static/bokeh_seam.js is off, makes the whole page with Bokeh's embed_items).

The page is laid out like the served one (app/main.py): a header, then the Bokeh document's roots
(controls, top, readout, bottom, editor; see HeadPage.roots) placed by static/page.css's grid areas.
Separate roots keep a change of the steps text from re-laying out the whole page.  Further parts (the
other explorers) are appended through EXTRA_PARTS.

`--fragment` writes one block to paste into any page: the same page, in a frame of its own that fits
its column and its content (app/fragment.py), so it works beside the page's own scripts, another BokehJS
included.
"""

from __future__ import annotations

import argparse
import html
import re
import sys
from collections.abc import Callable
from pathlib import Path

from bokeh.core.templates import get_env
from bokeh.document import Document
from bokeh.embed.bundle import bundle_for_objs_and_resources
from bokeh.embed.elements import html_page_for_render_items
from bokeh.embed.util import standalone_docs_json_and_render_items
from bokeh.layouts import column
from bokeh.model import Model
from bokeh.models import Button, Div
from bokeh.resources import Resources

from app.fragment import fragment_html
from app.html_json import json_script, script_element
from core.presets import PRESETS, Preset
from widgets.a11y import FIGURES_SCRIPT, figures_declared
from widgets.editor import FLUID, WEIGHTS, HeadEditor
from widgets.logic_config import logic_config
from widgets.page import VIEW, HeadPage, ref
from widgets.state import HeadState
from widgets.style import text_panel, wrapping_row

ROOT = Path(__file__).resolve().parents[1]
PYFORMAT_JS = ROOT / "static" / "pyformat.js"
ATTENTION_JS = ROOT / "static" / "attention.js"
LESSONS_JS = ROOT / "static" / "lessons.js"
EXPLORER_JS = ROOT / "static" / "explorer.js"
LESSON_PAGE_JS = ROOT / "static" / "lesson_page.js"
EXPLORER_PAGE_JS = ROOT / "static" / "explorer_page.js"
BOKEH_SEAM_JS = ROOT / "static" / "bokeh_seam.js"
EXPORT_EMBED_JS = ROOT / "static" / "export_embed.js"
A11Y_JS = ROOT / "static" / "a11y.js"
A11Y_CSS = ROOT / "static" / "a11y.css"
PAGE_CSS = ROOT / "static" / "page.css"
MAX_BYTES = 2_500_000

TITLE = "One attention head"
DESCRIPTION = (
    "Drag a token's vector, pick the query token, and watch how it divides its attention among the "
    "tokens and where its output lands. Every number is computed in your browser from the chapter's "
    "formulas."
)
# The page's grid areas (static/page.css), each with its label and the Bokeh document roots it holds, as
# in the served page (app/served_page.py): the editor sits below the figures, further parts in "more".
AREAS = (
    ("controls", "Controls", ("controls",)),
    ("top", "Weights and the blend", ("top",)),
    ("readout", "The steps", ("lesson", "readout")),
    ("bottom", "Scores and projections, editing the head", ("bottom", "editor-area")),
)
MORE = ("more", "Going further")
# The document roots BokehJS reads and makes views of only once the rest is interactive and painted
# (static/explorer_page.js embed), in this order: the lesson's panel above the steps (its place is kept,
# static/page.css), the control panel left of the figures (preset, query,
# switches: a fifth of the first part's start-up, and not what a first move needs), the editor, the
# figures below the weights and the blend, then the further explorers' root (one Div at the foot of the
# explorer, so nothing above it moves when it comes; the tabs' documents are made when opened,
# app/export_explorers.py). First come the weights, the blend and the token sliders, and the steps.
LATER = ("lesson", "controls", "editor-area", "bottom", "more")
# The ids of the <script type="application/json"> elements embed_scripts writes: the configuration
# static/export_embed.js hands to HeadExplorerPage.embed, the document's first roots, the roots in LATER.
EMBED_CONFIG, EMBED_DOCUMENT, EMBED_LATER = "head-embed", "head-document", "head-document-later"


# The embed script closes <main>, so the training lab (inserted after </main>, app/export_lab.py) is
# parsed and drawn after the head's first views are made: with the lab's DOM already in the page, every
# layout pass BokehJS forces at start-up had it to lay out too.
TEMPLATE = """{% extends "file.html.jinja" %}
{% from macros import embed %}
{% block preamble %}
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
{% endblock %}
{% block postamble %}<style>{{ page_css }}</style>
{{ head_scripts }}
{% endblock %}
{% block inner_body %}
<main class="explorer head-export">
  {{ header }}
  {%- for name, label, names in areas %}
  <section class="area-{{ name }}" aria-label="{{ label }}">
    {%- for root in names %}{{ embed(roots[root]) }}{% endfor -%}
  </section>
  {%- endfor %}
  {{ embed(roots["a11y-names"]) }}
  {{ embed_scripts | indent(2) }}
{{ after_scripts }}
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


def _models(page: HeadPage, editor: HeadEditor, downloads: dict) -> dict:
    """Every model the browser writes or listens to, by id (static/explorer_page.js resolves them)."""
    c = page.controls
    figures = page.figure_models()
    return {
        "plots": figures["plots"],
        "blend": figures["blend"],
        "steps": figures["steps"],
        "lesson": figures["lesson"],
        "controls": {
            "preset": ref(c.preset),
            "note": ref(c.note),
            "query": ref(c.query),
            "reset": ref(c.reset),
            "message": ref(c.message),
            "tokens": figures["tokens"],
            "switches": {name: ref(w) for name, w in c.switches.items()},
        },
        "editor": {
            "area": ref(editor.layout),
            "labels": ref(editor.labels),
            "add": ref(editor.add),
            "remove": ref(editor.remove),
            "C": ref(editor.C),
            "d": ref(editor.d),
            "grids": {name: ref(g.layout) for name, g in editor.grids.items()},
            "dim_x": ref(editor.dim_x),
            "dim_y": ref(editor.dim_y),
            "dims_note": ref(editor.dims_note),
            "message": ref(editor.message),
        },
        "downloads": {kind: ref(button) for kind, button in downloads.items()},
    }


class ExportPage:
    """The served page's Bokeh models for one start state, plus the editor and the download buttons,
    and the JSON configuration that static/explorer_page.js binds them with."""

    def __init__(self, preset: str | Preset = "chapter", *, link: bool = True):
        start = preset if isinstance(preset, Preset) else PRESETS[preset]
        state = HeadState()
        if not state.load(start):
            raise SystemExit(f"the preset {start.name!r} cannot be loaded: {state.message}")
        self.state = state
        self.page = page = HeadPage.for_state(state)
        self.editor = editor = HeadEditor(
            state.labels,
            {n: getattr(state, n) for n in WEIGHTS},
            C=state.head.C,
            d=state.head.d,
            dims=state.dims,
        )
        self.downloads = {
            kind: Button(label=f"Download every matrix ({kind.upper()})", name=f"download-{kind}", width=240)
            for kind in ("json", "csv")
        }
        self.roots = dict(page.roots)
        # Fluid like the editor inside it (widgets/editor.py FLUID): the download row wraps on a phone.
        self.roots["editor"] = column(
            wrapping_row(
                *self.downloads.values(),
                Div(text="Each figure saves itself as a PNG from its toolbar.", width=300),
                name="downloads",
            ),
            text_panel("<h3>Edit the head</h3>", **FLUID),
            editor.layout,
            name="editor-area",
            sizing_mode="stretch_width",
        )
        # Further parts ("Going further"), after the editor: each adds a root and the scripts it needs.
        self.extra_scripts: list[str] = []
        for build in EXTRA_PARTS:
            root, scripts = build()
            self.roots[root.name] = root
            self.extra_scripts.append(scripts)
        self.extra_roots = tuple(self.roots)[len(self.roots) - len(EXTRA_PARTS) :]
        self.config = {
            **logic_config(state, notes=True),
            "view": VIEW,
            "models": _models(page, editor, self.downloads),
            "link": link,
        }

    def areas(self) -> list[tuple[str, str, tuple[str, ...]]]:
        """The page's grid areas in order with the roots each holds: the head's, then "more" for the rest."""
        return [*AREAS, (*MORE, self.extra_roots)] if self.extra_roots else list(AREAS)

    def document(self) -> Document:
        """A Bokeh document with the page's roots: the first part's, then those in LATER, in that order."""
        doc = Document()
        # The roots made later go last, in LATER's order: Bokeh writes each model out in full where the
        # document first reaches it, so the first roots then hold every model they use (embed_scripts).
        # (The controls' names for static/a11y.js come first: a model of their own, widgets/a11y.py.)
        later = {root.name: root for root in self.roots.values() if root.name in LATER}
        first = [self.page.a11y, *(r for r in self.roots.values() if r.name not in later)]
        for root in first + [later[n] for n in LATER]:
            doc.add_root(root)
        return doc


def _explorer_tabs() -> tuple[Model, str]:
    from app.export_explorers import explorer_tabs  # the "Why ÷√d" and "Long-context cost" tabs

    tabs = explorer_tabs()
    return tabs.root, tabs.scripts


# Further parts of the page, after the editor, in this order: each build() returns a Bokeh root (with
# its own JS callbacks) and the <script> elements it needs (its programs and their data).
EXTRA_PARTS: list[Callable[[], tuple[Model, str]]] = [_explorer_tabs]


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


def head_scripts() -> str:
    """The <script> blocks that come after BokehJS and before the Bokeh document: the seam to BokehJS's
    internals (installed at once: BokehJS is there), the page's number formatter, the core's port, the
    lesson's and the explorer's logic, their bindings, static/a11y.js (control names, the figures' tables,
    focus rings; before the binding's first change of shape, which renames the controls) and which figures
    get tables."""
    logic = PYFORMAT_JS, ATTENTION_JS, LESSONS_JS, EXPLORER_JS
    paths = BOKEH_SEAM_JS, *logic, LESSON_PAGE_JS, EXPLORER_PAGE_JS, A11Y_JS
    figures = json_script(figures_declared(), id=FIGURES_SCRIPT)
    return "\n".join([figures, *map(script_element, _read(*paths))])


def after_scripts(extra: list[str] | tuple[str, ...] = ()) -> str:
    """The further parts' <script> elements (`extra`), after the page's embed: that runs where its script
    is, so these are parsed after the first part is made; their controls call them only once clicked."""
    return "\n".join(extra)


def _read(*paths: Path) -> list[str]:
    for path in paths:
        if not path.exists():
            raise SystemExit(f"{path} is missing: the export needs it")
    return [path.read_text() for path in paths]


def render(preset: str | Preset = "chapter", *, fragment: bool = False) -> str:
    """The export's HTML text: a whole page, or a fragment to paste into one."""
    if fragment:  # the whole page in a frame of its own (app/fragment.py)
        return fragment_html(render(preset))
    page = ExportPage(preset)
    doc = page.document()
    docs_json, render_items = standalone_docs_json_and_render_items(doc)
    (doc_json,), (item,) = docs_json.values(), render_items
    page_html = html_page_for_render_items(
        bundle_for_objs_and_resources([doc], RESOURCES),
        {},  # the document goes in embed_scripts: the template writes no plot_script
        render_items,
        title=TITLE,
        template=get_env().from_string(TEMPLATE),
        template_variables={
            "head_scripts": head_scripts(),
            "embed_scripts": embed_scripts(doc_json, item.to_json(), page.config),
            "after_scripts": after_scripts(page.extra_scripts),
            "page_css": page_css(),
            "header": header_html(),
            "areas": page.areas(),
        },
    )
    return with_lab(page_html)


def embed_scripts(doc_json: dict, render_item: dict, bind: dict, later: tuple[str, ...] = LATER) -> str:
    """What makes the page, after its roots' elements: the document's first roots and the roots named in
    `later` as JSON of their own (BokehJS reads those only once the rest is interactive: each model read
    costs start-up time), the configuration (where each root goes, which JSON holds what, the binding's
    configuration `bind`), and static/export_embed.js, which hands it to HeadExplorerPage.embed."""
    waiting = [root for root in doc_json["roots"] if root["attributes"].get("name") in later]
    first = [root for root in doc_json["roots"] if root not in waiting]
    if [root["attributes"]["name"] for root in waiting] != list(later):
        raise SystemExit(f"app/export.py embed_scripts: the document's last roots are not {later}")
    _check_defined_before_use(first, *waiting)
    config = {"document": EMBED_DOCUMENT, "later": EMBED_LATER, "render_item": render_item, "bind": bind}
    return "\n".join(
        [
            json_script({**doc_json, "roots": first}, id=EMBED_DOCUMENT),
            json_script(waiting, id=EMBED_LATER),
            json_script(config, id=EMBED_CONFIG),
            *map(script_element, _read(EXPORT_EMBED_JS)),
        ]
    )


def _check_defined_before_use(*parts) -> None:
    """Each part of a document's JSON, read in this order, refers only to models written out in full in
    it or before it (BokehJS reads a later root against the models it already has)."""
    known: set[str] = set()

    def walk(node) -> None:
        if isinstance(node, dict):
            if set(node) == {"id"}:
                if node["id"] not in known:
                    raise SystemExit(f"app/export.py: model {node['id']} is used before it is defined")
                return
            if node.get("type") == "object" and "id" in node:
                known.add(node["id"])
            for value in node.values():
                walk(value)
        elif isinstance(node, (list, tuple)):  # (a map's entries are pairs)
            for value in node:
                walk(value)

    for part in parts:
        walk(part)


def with_lab(page_html: str) -> str:
    """The page with the training lab after the head (app/export_lab.py: its data and script)."""
    from app.export_lab import with_lab as add

    return add(page_html)


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
