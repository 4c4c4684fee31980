"""The training lab in the static export: one <section> with the shipped runs inlined and static/lab.js.

`with_lab(page_html)` puts the section into an exported page (after the head's <main>, or at the end of a
fragment). The lab draws itself in plain DOM from the inlined JSON (no Bokeh models, no network); the
claim and findings text is made here by the same Python as the served lab (widgets/lab_data.describe).
"""

from __future__ import annotations

import json
from pathlib import Path

from widgets.lab_data import describe, load_lab

ROOT = Path(__file__).resolve().parents[1]
LAB_JS = ROOT / "static" / "lab.js"

CSS = """
.training-lab { max-width: 1400px; margin: 2em auto; font-family: system-ui, sans-serif; font-size: 14px; }
.training-lab .lab-controls { display: flex; gap: 2em; align-items: center; flex-wrap: wrap; margin: 0.5em 0; }
.training-lab .lab-row { display: flex; gap: 2em; flex-wrap: wrap; align-items: flex-start; }
.training-lab h4 { margin: 0.8em 0 0.3em; }
.training-lab table.lab-heatmap { border-collapse: collapse; font-size: 11px; }
.training-lab table.lab-heatmap td { width: 38px; height: 28px; text-align: center; border: 1px solid #fff; }
.training-lab table.lab-heatmap th { font-weight: normal; color: #555; padding: 0 4px; }
.training-lab table.lab-heatmap tr.query-row td { border-top: 3px solid #f28e2b; border-bottom: 3px solid #f28e2b; }
.training-lab .lab-steps { max-width: 620px; overflow-x: auto; }
.training-lab .lab-steps table.steps td, .training-lab .lab-steps table.steps th { vertical-align: top;
  padding: 2px 6px; font-family: ui-monospace, monospace; font-size: 12px; text-align: left; }
.training-lab .lab-steps .vec { white-space: nowrap; }
.training-lab .checks { list-style: none; padding-left: 0; }
.training-lab .checks .ok { color: #2a7a2a; }
.training-lab .checks .warn { color: #a15c00; }
"""

INTRO = (
    "<h2>Training lab</h2><p>Tiny attention-only transformers trained in numpy (<code>python -m core.train</code>) "
    "on tasks where one of the chapter's claims should show. Pick a run, slide through its snapshots to watch "
    "the head's pattern form on a probe sequence, and compare its loss with the full head's. Tokens are shown "
    "as letters.</p>"
)


def lab_payload() -> dict:
    lab = load_lab()
    runs, index = lab["runs"], lab["index"]
    return {
        "order": [n for n in index["runs"] if n != "wide-scaled"] + ["wide-scaled"],
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
            f"<style>{CSS}</style>",
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
