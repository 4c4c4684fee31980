"""The training lab in the static export: one <section> with the shipped runs inlined and static/lab.js.

`with_lab(page_html)` puts the section into an exported page (after the head's <main>, or at the end of a
fragment). static/lab.js draws the lab in plain DOM from the inlined JSON (no Bokeh models, no network),
from the same data and with the same code as the served page's lab (widgets/lab_view.py). In the export it
is drawn once the explorer above it has all its parts (static/explorer_page.js afterEmbed): drawn first,
it cost the explorer's start-up its own drawing and a share of every layout pass BokehJS forces.
"""

from __future__ import annotations

from pathlib import Path

from app.html_json import script_element
from app.packing import UNPACK_JS, pack
from widgets.lab_data import lab_json

ROOT = Path(__file__).resolve().parents[1]
LAB_JS = ROOT / "static" / "lab.js"
LAB_MOUNT_JS = ROOT / "static" / "lab_mount.js"
# "Train it yourself" (static/train.js, static/lab_train.js): packed like the runs, unpacked and run once the
# lab is drawn. It stands on static/rng.js, which the page loads for the explorers (app/export_explorers.py).
TRAINER_JS = tuple(ROOT / "static" / f for f in ("train.js", "lab_train.js"))
LAB_CSS = ROOT / "static" / "lab.css"
UNPACK_JS_PATH = ROOT / "static" / UNPACK_JS


def lab_section() -> str:
    """The lab's HTML: a section, its styles, the data and the code that draws it."""
    data = pack(lab_json())  # app/packing.py: a third of the size; unpacked when the lab is drawn
    trainer = pack("\n".join(f.read_text() for f in TRAINER_JS))  # unpacked and run once the lab is drawn
    return "\n".join(
        [
            f"<style>{LAB_CSS.read_text()}</style>",
            '<section id="training-lab" class="training-lab" aria-label="Training lab"></section>',
            f'<script type="application/gzip-base64" id="training-lab-data">{data}</script>',
            f'<script type="application/gzip-base64" id="training-lab-trainer">{trainer}</script>',
            script_element(UNPACK_JS_PATH.read_text()),
            script_element(LAB_JS.read_text()),
            script_element(LAB_MOUNT_JS.read_text()),  # drawn once the explorer above it is whole
        ]
    )


def with_lab(page_html: str) -> str:
    """`page_html` (a whole exported page or a fragment) with the training lab after the head."""
    section = lab_section()
    if "</main>" in page_html:
        head, tail = page_html.rsplit("</main>", 1)
        return head + "</main>\n" + section + tail
    return page_html + "\n" + section
