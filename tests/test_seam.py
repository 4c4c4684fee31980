"""static/bokeh_seam.js, the one seam between the pages and BokehJS's internals.

In Node (a stand-in window): it installs only on the BokehJS it was written for, says so once as an error
otherwise, answers the pages' questions with "no" then, and arrives in time however BokehJS comes. In
Chromium: every patch is in force in the export and in the served page, the patches whose effect no other
test checks do what they say, and both pages work on a BokehJS of another version (the whole suite does
so with `--stock-bokeh`). Also: no other product file reaches into BokehJS (bench/count_seam.py counts).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from bench.count_seam import private_names
from tests.conftest import CONSOLE_PROBLEMS, OTHER_BOKEH_VERSION, SERVER_DRAWS
from tests.node_batch import NODE
from widgets.state import HeadState

ROOT = Path(__file__).resolve().parents[1]
SEAM = ROOT / "static" / "bokeh_seam.js"
WRITTEN_FOR = re.search(r'const WRITTEN_FOR = "([^"]+)"', SEAM.read_text()).group(1)
# The patches as the file's header lists them ("// 1. styleSheets: ..."), in order.
DOCUMENTED = re.findall(r"^// \d+\. (\w+)", SEAM.read_text(), re.M)
INSTALLED = "bokeh-seam-installed"


def test_the_seam_was_written_for_the_pinned_bokeh():
    pinned = re.search(r"^bokeh==(\S+)", (ROOT / "requirements.txt").read_text(), re.M).group(1)
    assert WRITTEN_FOR == pinned


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_the_guard_and_the_loader_in_node():
    proc = subprocess.run([NODE, str(ROOT / "tests" / "seam_driver.js"), str(SEAM)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    other = out["other"]
    assert other["on"] is False and other["patches"] == 0 and other["marks"] == []
    assert len(other["errors"]) == 1 and other["errorsAfterAnotherInstall"] == 1  # once, whatever is asked
    assert f"written for BokehJS {WRITTEN_FOR}, but this page has BokehJS 0.0.1: nothing installed" in (
        other["errors"][0]
    )
    assert other["documentFromJson"] is None and other["ndarray"] is None and other["writeDivText"] is False
    assert other["definedOnce"] is True
    same = out["same"]  # a stand-in without what it patches: each piece says so, as an error
    assert same["on"] is True and list(same["patches"]) == DOCUMENTED
    assert not any(same["patches"].values()) and len(same["errors"]) == len(DOCUMENTED)
    assert all(e.startswith("bokeh_seam.js: ") for e in same["errors"])
    assert out["loading"] == {"before": 0, "after": [INSTALLED]}  # at DOMContentLoaded, not before
    assert out["notebook"] == [INSTALLED]  # found by looking again


def test_no_other_product_file_reaches_into_bokehjs():
    """Every private BokehJS name the product uses is in static/bokeh_seam.js (bench/count_seam.py)."""
    found = private_names(ROOT)
    outside = {path: names for path, names in found.items() if path != "static/bokeh_seam.js"}
    assert outside == {}, outside
    assert found["static/bokeh_seam.js"]  # (the counting finds the seam's own)


# -- in Chromium --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def exported(export_copy):
    return (export_copy / "head.html").as_uri()


def open_export(page, url, *scripts):
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type in CONSOLE_PROBLEMS else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    for script in scripts:
        page.add_init_script(script)
    page.goto(url)
    page.wait_for_function("() => window.HeadExplorerPage && HeadExplorerPage.pages.length"
                           " && HeadExplorerPage.pages[0].complete", timeout=60_000)
    return problems


def weights_row3(page) -> list[float]:
    return page.evaluate("""() => {
      const s = Bokeh.documents[0].get_model_by_name('weights-cells');
      const v = Array.from(s.data instanceof Map ? s.data.get('value') : s.data.value);
      return v.slice(12, 16);
    }""")


def moved_weights(x30: float) -> np.ndarray:
    state = HeadState()
    state.set_x(3, 0, x30)
    return state.head.weights[3]


@pytest.mark.seam
def test_every_patch_is_in_force_in_the_export(exported, page):
    problems = open_export(page, exported)
    got = page.evaluate("() => ({on: BokehSeam.on, patches: BokehSeam.patches, version: Bokeh.version})")
    assert got["on"] is True and got["version"] == WRITTEN_FOR
    assert got["patches"] == dict.fromkeys(DOCUMENTED, True)
    assert problems == []


# The patches whose effect no other test sees (the others: tests/test_paint.py, test_export_offscreen.py,
# test_export.py and test_served_app.py).
EFFECTS = """async () => {
  const frames = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const doc = Bokeh.documents[0];
  const views = [...Bokeh.index.all_views()];
  const weights = views.find((v) => v.model === doc.get_model_by_name('weights'));
  // colorBarImages: a new range of the same palette keeps the colour bar's picture
  const bar = views.find((v) => v.model.type === 'ColorBar' && v.parent === weights);
  const image = bar._image;
  bar.color_mapper.high = bar.color_mapper.high + 0.5;
  await frames();
  const keptImage = bar._image === image;
  bar.color_mapper.high = bar.color_mapper.high - 0.5;
  // tickLabelExtents: a move leaves the axis's measured labels as they were
  const axis = views.find((v) => v.model.type === 'LinearAxis' && v.parent === weights);
  const extents = axis._tick_label_extents();
  doc.get_model_by_name('x-3-0').value = 0.45;
  await frames();
  const keptExtents = axis._tick_label_extents() === extents;
  // baseFontSize: asked twice in one task, the figure's element is read once
  const read = window.getComputedStyle;
  let reads = 0;
  window.getComputedStyle = function (...args) { reads += 1; return read.apply(this, args); };
  await frames();
  reads = 0;
  weights.base_font_size;
  weights.base_font_size;
  window.getComputedStyle = read;
  return {keptImage, keptExtents, fontReads: reads};
}"""


@pytest.mark.seam
def test_patches_without_a_test_of_their_own_do_what_they_say(exported, page):
    problems = open_export(page, exported)
    got = page.evaluate(EFFECTS)
    assert got == {"keptImage": True, "keptExtents": True, "fontReads": 1}, got
    assert problems == []


EMPTY_RECTS = """async (link) => {
  const page = HeadExplorerPage.pages[0];
  page.dispatch({do: 'link', params: link});
  const frames = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  await frames();
  const rect = CanvasRenderingContext2D.prototype.rect;
  let rects = 0;
  CanvasRenderingContext2D.prototype.rect = function (...args) { rects += 1; return rect.apply(this, args); };
  page.dispatch({do: 'x', token: 13, component: 0, value: 0.5});
  await frames();
  CanvasRenderingContext2D.prototype.rect = rect;
  const cells = Bokeh.documents[0].get_model_by_name('weights-cells');
  return {rects, cells: (cells.data instanceof Map ? cells.data.get('x') : cells.data.x).length};
}"""


@pytest.mark.seam
def test_empty_cells_trace_no_paths(exported, page):
    """emptyRects: with 16 tokens the weights are a picture and their cells draw nothing; a move then
    traces far fewer rectangles than there are cells (16 × 16 in the weights alone, more below)."""
    open_export(page, exported)
    tokens = [f"t{k}" for k in range(16)]
    X = ";".join(",".join(f"{(k * 7 + c * 3) % 10 / 10 - 0.5:.1f}" for c in range(3)) for k in range(16))
    got = page.evaluate(EMPTY_RECTS, {"preset": "custom", "tokens": ",".join(tokens), "X": X})
    assert got["cells"] == 16 * 16 and got["rects"] < got["cells"], got


@pytest.mark.seam  # (it checks the seam's own error, which --stock-bokeh keeps out of the console)
def test_the_export_works_on_another_bokeh(exported, page):
    """A BokehJS of another version: the seam says so once, installs nothing, and the page works (a move
    shows the core's weights, the page is whole). The suite's --stock-bokeh run checks every behaviour."""
    problems = open_export(page, exported, OTHER_BOKEH_VERSION)
    got = page.evaluate("() => ({on: BokehSeam.on, patches: BokehSeam.patches})")
    assert got == {"on": False, "patches": {}}
    assert problems == [
        f"bokeh_seam.js: written for BokehJS {WRITTEN_FOR}, but this page has BokehJS {WRITTEN_FOR}-other: "
        "nothing installed, the page runs on BokehJS as it is (slower, not wrong)"
    ]
    page.evaluate("() => { Bokeh.documents[0].get_model_by_name('x-3-0').value = 0.45; }")
    page.wait_for_function("w => Math.abs(HeadExplorerPage.pages[0].state.X[3][0] - 0.45) < 1e-12", arg=None)
    np.testing.assert_allclose(weights_row3(page), moved_weights(0.45), rtol=0, atol=1e-9)
    assert page.evaluate("() => Bokeh.documents[0].get_model_by_name('steps').text.includes('0.45')")


@pytest.fixture
def served(served_app):
    return served_app


@pytest.mark.seam
def test_every_patch_is_in_force_in_the_served_page(served, page):
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type in CONSOLE_PROBLEMS else None)
    page.goto(served)
    page.wait_for_function("() => window.HeadExplorerPage && HeadExplorerPage.pages.length", timeout=60_000)
    assert page.evaluate("() => BokehSeam.patches") == dict.fromkeys(DOCUMENTED, True)
    assert problems == []


@pytest.mark.seam
def test_the_served_page_works_on_another_bokeh(served, page):
    """The same for the served page: its own drawing of a move and the server's answers both work."""
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type in CONSOLE_PROBLEMS else None)
    page.add_init_script(OTHER_BOKEH_VERSION)
    page.goto(served)
    page.wait_for_function("() => window.HeadExplorerPage && HeadExplorerPage.pages.length", timeout=60_000)
    assert page.evaluate("() => BokehSeam.on") is False and len(problems) == 1, problems
    for x, who in ((0.45, "page"), (0.55, "server")):
        if who == "server":
            page.evaluate(SERVER_DRAWS)
        page.evaluate("x => { Bokeh.documents[0].get_model_by_name('x-3-0').value = x; }", x)
        page.wait_for_function(
            "w => { const s = Bokeh.documents[0].get_model_by_name('weights-cells');"
            " const v = s.data instanceof Map ? s.data.get('value') : s.data.value;"
            " return Math.abs(v[13] - w) < 1e-9; }",
            arg=float(moved_weights(x)[1]),
            timeout=20_000,
        )
    assert len(problems) == 1, problems
