"""The second browser for layout: the exported page in Debian's Firefox ESR (puppeteer-core over WebDriver
BiDi, tests/firefox_driver.js), opened on a phone and widened to a tablet and a desktop, as the Chromium
tests do (tests/test_book_column.py): nothing past the right edge, no sideways scroll, no title or name cut,
the weights, the blend and a slider side by side or stacked without overlapping, and the widths the view
data reckons text with (widgets/figure_text.py CHAR_WIDTHS) never narrower than Firefox draws them (it draws
Bokeh's "helvetica" in a wider face than Chromium). A move made there reaches the steps panel."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.node_batch import NODE
from tests.test_book_column import CUT_TEXT, DESKTOP_HEIGHT, NO_SIDE_SCROLL, PHONE_HEIGHT, WIDTHS
from widgets.figure_text import CHAR_WIDTHS

ROOT = Path(__file__).resolve().parents[1]
FIREFOX = shutil.which("firefox-esr") or shutil.which("firefox")
PUPPETEER = ROOT / "tests" / "node" / "node_modules" / "puppeteer-core"
pytestmark = pytest.mark.skipif(
    not (FIREFOX and NODE and PUPPETEER.exists()), reason="needs firefox-esr, node, puppeteer-core: setup.sh"
)

BOX = (
    "(name) => { const r = Bokeh.index.get_one(Bokeh.documents[0].get_model_by_name(name)).el"
    ".getBoundingClientRect(); return {x: r.x, y: r.y + window.scrollY, w: r.width, h: r.height}; }"
)
CHECKS = {
    "no_side_scroll": NO_SIDE_SCROLL,
    "right_edge": "() => Math.max(...[...document.querySelectorAll('section')]"
    ".map((s) => s.getBoundingClientRect().right))",
    "cut": CUT_TEXT,
    "boxes": f"() => Object.fromEntries(['weights', 'blend', 'steps', 'x-3-0'].map((n) => [n, ({BOX})(n)]))",
    # 1000 px per em, as CHAR_WIDTHS counts (the printable ASCII characters, from the space)
    "char_widths": "() => { const c = document.createElement('canvas').getContext('2d');"
    " c.font = '1000px helvetica'; const out = [];"
    " for (let k = 32; k < 127; k++) out.push(c.measureText(String.fromCharCode(k)).width); return out; }",
}
READY = (
    "() => window.Bokeh && Bokeh.documents.length > 0 && window.HeadExplorerPage"
    " && HeadExplorerPage.pages.length > 0 && HeadExplorerPage.pages[0].complete"
    " && Bokeh.documents[0].get_model_by_name('steps').text.includes('0.13, 0.56, 0.14, 0.18')"
)
MOVE = "() => { Bokeh.documents[0].get_model_by_name('x-3-0').value = 0.45; }"
MOVED = "() => Bokeh.documents[0].get_model_by_name('steps').text.includes('0.45')"


def overlap(a: dict, b: dict) -> bool:
    return a["x"] < b["x"] + b["w"] - 1 and b["x"] < a["x"] + a["w"] - 1 and a["y"] < b["y"] + b["h"] - 1 \
        and b["y"] < a["y"] + a["h"] - 1


@pytest.fixture(scope="module")
def firefox_run(export_copy, artifacts):
    page = export_copy / "head.html"
    job = {
        "url": page.as_uri(),
        "widths": [[w, PHONE_HEIGHT if w < 500 else DESKTOP_HEIGHT] for w in WIDTHS],
        "checks": CHECKS,
        "ready": READY,
        "move": MOVE,
        "moved": MOVED,
        "shots": str(artifacts),
    }
    done = subprocess.run([NODE, str(ROOT / "tests" / "firefox_driver.js")], input=json.dumps(job),
                          capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_the_export_fits_every_width_in_firefox(firefox_run):
    for at in firefox_run["widths"]:
        width, got = at["width"], at["checks"]
        assert got["no_side_scroll"], width
        assert got["right_edge"] <= width + 1, (width, got["right_edge"])
        assert got["cut"]["titles"] >= 5 and got["cut"]["cut"] == [], (width, got["cut"])
        boxes = got["boxes"]
        for name, box in boxes.items():
            assert box["x"] >= -1 and box["x"] + box["w"] <= width + 1, (width, name, box)
        figures = [boxes[n] for n in ("weights", "blend", "steps")]
        assert not any(overlap(a, b) for k, a in enumerate(figures) for b in figures[k + 1:]), (width, boxes)


def test_the_view_data_reckons_text_no_narrower_than_firefox_draws_it(firefox_run):
    measured = firefox_run["widths"][0]["checks"]["char_widths"]
    narrower = [(chr(32 + k), w, CHAR_WIDTHS[k]) for k, w in enumerate(measured) if w > CHAR_WIDTHS[k] + 1]
    assert narrower == [], narrower


def test_a_move_in_firefox_reaches_the_steps_and_nothing_complains(firefox_run):
    assert firefox_run["moved"]
    assert firefox_run["errors"] == [], firefox_run["errors"]
