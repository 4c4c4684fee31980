"""The training lab in the static export: one <section> with the shipped runs inlined and static/lab.js.

`with_lab(page_html)` puts the section into an exported page (after the head's <main>, or at the end of a
fragment). The lab draws itself in plain DOM from the inlined JSON (no Bokeh models, no network); the
claim and findings text is made here by the same Python as the served lab (widgets/lab_data.describe).
"""

from __future__ import annotations

import json
from pathlib import Path

from widgets.lab_data import LAB_INTRO, describe, load_lab

ROOT = Path(__file__).resolve().parents[1]
LAB_JS = ROOT / "static" / "lab.js"
LAB_CSS = ROOT / "static" / "lab.css"

INTRO = "<h2>Training lab</h2>" + LAB_INTRO


def lab_payload() -> dict:
    lab = load_lab()
    runs, index = lab["runs"], lab["index"]
    return {
        "order": index["runs"],
        "runs": runs,
        "described": {n: describe(r, index) for n, r in runs.items()},
    }


def _script(text: str) -> str:
    return "<script>\n" + text.replace("</script", "<\\/script") + "\n</script>"


def lab_section() -> str:
    """The lab's HTML: a section, its styles, the data and the code that draws it."""
    data = json.dumps(lab_payload(), separators=(",", ":"), ensure_ascii=False).replace("</", "<\\/")
    mount = (
        "(function () { const box = document.getElementById('training-lab');"
        " window.TrainingLabPage = TrainingLab.mount(box.querySelector('.lab-body'),"
        " JSON.parse(document.getElementById('training-lab-data').textContent)); })();"
    )
    return "\n".join(
        [
            f"<style>{LAB_CSS.read_text()}</style>",
            f'<section id="training-lab" class="training-lab" aria-label="Training lab">{INTRO}'
            '<div class="lab-body"></div></section>',
            f'<script type="application/json" id="training-lab-data">{data}</script>',
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
