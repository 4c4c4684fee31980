"""The training lab in the static export: one <section> with the shipped runs inlined and static/lab.js.

`with_lab(page_html)` puts the section into an exported page (after the head's <main>, or at the end of a
fragment). static/lab.js draws the lab in plain DOM from the inlined JSON (no Bokeh models, no network),
from the same data and with the same code as the served page's lab (widgets/lab_view.py). In the export it
is drawn once the explorer above it has all its parts (static/explorer_page.js afterEmbed): drawn first,
it cost the explorer's start-up its own drawing and a share of every layout pass BokehJS forces.
"""

from __future__ import annotations

from pathlib import Path

from app.packing import UNPACK_JS, pack
from widgets.lab_data import lab_json

ROOT = Path(__file__).resolve().parents[1]
LAB_JS = ROOT / "static" / "lab.js"
LAB_CSS = ROOT / "static" / "lab.css"
UNPACK_JS_PATH = ROOT / "static" / UNPACK_JS


def _script(text: str) -> str:
    return "<script>\n" + text.replace("</script", "<\\/script") + "\n</script>"


def lab_section() -> str:
    """The lab's HTML: a section, its styles, the data and the code that draws it."""
    data = pack(lab_json())  # app/packing.py: a third of the size; unpacked when the lab is drawn
    # drawn once the explorer above it is whole (static/explorer_page.js afterEmbed), not before it
    mount = (
        "(function () { const mount = () => Unpack.json("
        "document.getElementById('training-lab-data').textContent).then((data) => {"
        " window.TrainingLabPage = TrainingLab.fill(document.getElementById('training-lab'), data); })"
        ".catch((err) => console.error(err));"
        " const head = window.HeadExplorerPage;"
        " if (head && head.afterEmbed) head.afterEmbed(mount); else mount(); })();"
    )
    return "\n".join(
        [
            f"<style>{LAB_CSS.read_text()}</style>",
            '<section id="training-lab" class="training-lab" aria-label="Training lab"></section>',
            f'<script type="application/gzip-base64" id="training-lab-data">{data}</script>',
            _script(UNPACK_JS_PATH.read_text()),
            _script(LAB_JS.read_text()),
            _script(mount),
        ]
    )


def with_lab(page_html: str) -> str:
    """`page_html` (a whole exported page or a fragment) with the training lab after the head."""
    section = lab_section()
    if "</main>" in page_html:
        head, tail = page_html.rsplit("</main>", 1)
        return head + "</main>\n" + section + tail
    return page_html + "\n" + section
