"""Train it yourself, in Chromium, in both pages: the lab's Train button trains in a Web Worker (built from a
Blob of static/train.js's own source: the export stays one offline file), the explorer above still repaints
while it trains, Stop stops it, the page prints the command line's last line, and a saved run reopens with
the same numbers (dropped on the lab, or opened).

Served, the lab is in a Panel JSComponent's shadow root (Playwright's CSS locators reach into it); the
served page trains in the student's browser too, so the server sees no message while it trains.
"""

from __future__ import annotations

import json
import re

import pytest

from core.lab.runs import RUNS, final_line, train
from tests.conftest import CONSOLE_PROBLEMS
from tests.test_a11y_browser import axe_violations

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

# Moves the explorer's slider for "it", component 0, and resolves once the weights heatmap's source has
# changed (the explorer repainted its numbers).
MOVE_AND_WAIT = """async () => {
  const doc = Bokeh.documents[0];
  const slider = doc.get_model_by_name("x-3-0"), source = doc.get_model_by_name("weights-cells");
  const cells = () => (source.data instanceof Map ? source.data.get("value") : source.data.value);
  const values = () => JSON.stringify(Array.from(cells()));
  const before = values();
  const changed = new Promise((done) => source.change.connect(() => done()));
  slider.value = slider.value < slider.end - 0.5 ? slider.value + 0.4 : slider.value - 0.4;
  await changed;
  await new Promise((r) => requestAnimationFrame(() => r()));
  return values() !== before;
}"""
# Drops a file holding `text` on the lab, as a reader dropping a saved run.
DROP = """(el, text) => {
  const data = new DataTransfer();
  data.items.add(new File([text], "run.json", { type: "application/json" }));
  el.dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
}"""


@pytest.fixture(scope="module")
def numpy_line() -> str:
    return final_line(train(RUNS["previous-token"], seed=0, record=False))


@pytest.fixture(scope="module")
def exported(export_copy):
    return (export_copy / "head.html").as_uri()


def status(panel) -> str:
    return panel.locator(".lab-train-status").inner_text()


def wait_status(page, panel, test: str, *args) -> None:
    """Wait until `test` (a JavaScript function of the status element and `args`) holds."""
    handle = panel.locator(".lab-train-status").element_handle()
    page.wait_for_function(f"([el, ...args]) => ({test})(el, ...args)", arg=[handle, *args])


def train_it_yourself(page, lab, artifacts, name: str, numpy_line, tmp_path, sent=None, axe=None) -> None:
    """Everything a student does with the Train button, in the lab `lab` (a locator); `sent`, if given,
    collects the frames the page sends its server: training sends none; `axe`, if given, is the lab's CSS
    selector for axe-core, run on the panel with a finished run in it."""
    panel = lab.locator("details.lab-train")
    panel.wait_for(timeout=30_000)
    panel.locator("summary").click()
    # input the trainer cannot use is refused, in words
    panel.locator("input.lab-train-seed").fill("seven")
    panel.locator("button.lab-train-go").click()
    assert status(panel) == "Not trained: the seed must be a whole number from 0 to 4294967295."
    panel.locator("input.lab-train-seed").fill("0")
    panel.locator('input[data-switch="temperature"]').fill("9")
    panel.locator("button.lab-train-go").click()
    assert status(panel) == "Not trained: temperature is 9; expected a number from 0.05 to 5."
    panel.locator('input[data-switch="temperature"]').fill("1.0")

    # a long run: the explorer above repaints while it trains, and Stop stops it
    panel.locator("select.lab-train-task").select_option("triggers")
    panel.locator("button.lab-train-go").click()
    assert status(panel) == "Training triggers at seed 0, 3000 steps…"
    steps = panel.locator(".lab-train-progress")
    wait_progress = "([el, was]) => el.textContent !== was && / step [1-9]\\d* of 3000/.test(el.textContent)"
    page.wait_for_function(wait_progress, arg=[steps.element_handle(), ""])
    assert page.evaluate(MOVE_AND_WAIT)
    page.wait_for_function(wait_progress, arg=[steps.element_handle(), steps.inner_text()])  # still training
    panel.screenshot(path=str(artifacts / f"train-{name}-live.png"))
    panel.locator("button.lab-train-stop").click()
    panel.locator("button.lab-train-go:not([disabled])").wait_for(timeout=30_000)
    stopped = status(panel)
    at = int(re.match(r"Stopped: (\d+) of 3000 steps", stopped).group(1))
    assert 0 < at < 3000 and "triggers: loss " in stopped
    page.wait_for_timeout(300)
    assert status(panel) == stopped  # nothing more came
    assert f"{at} steps." in panel.locator(".lab-train-result").inner_text()

    # the previous-token run: the same last line as the command line, and the head it should learn
    panel.locator("select.lab-train-task").select_option("previous-token")
    quiet = len(sent or [])
    panel.locator("button.lab-train-go").click()
    panel.locator("button.lab-train-go:not([disabled])").wait_for(timeout=60_000)
    assert len(sent or []) == quiet  # trained in the browser: nothing for the server to do
    assert status(panel).startswith("Done: 200 steps in ") and status(panel).endswith(numpy_line)
    assert float(re.search(r"previous-token score ([\d.]+)", status(panel)).group(1)) >= 0.9
    result = panel.locator(".lab-train-result").inner_text()
    assert "The claim held in your run." in result and numpy_line in result
    assert "python -m core.train previous-token --seed 0" in result
    weights = panel.locator('table[data-name="your weights"]').inner_text()
    panel.screenshot(path=str(artifacts / f"train-{name}-done.png"))
    if axe:
        assert axe_violations(page, axe) == []

    # saved, in the lab's format, and reopened with the same numbers: dropped on the lab, then opened
    with page.expect_download() as download:
        panel.locator("button.lab-train-save").click()
    saved = json.loads(open(download.value.path()).read())
    assert saved["from"] == "previous-token" and saved["line"] == numpy_line
    assert {"name", "task", "shape", "switches", "steps", "seeds"} <= saved.keys()
    assert len(saved["seeds"]) == 1
    text = json.dumps(saved)
    panel.locator("select.lab-train-task").select_option("triggers")  # something else on show first
    lab.locator(".lab-body").evaluate(DROP, text)
    wait_status(page, panel, "(el) => el.textContent.startsWith('Opened')")
    assert status(panel) == f"Opened run.json: {numpy_line}"
    assert panel.locator(".lab-train-result").inner_text() == result
    assert panel.locator('table[data-name="your weights"]').inner_text() == weights
    lab.locator(".lab-body").evaluate(DROP, json.dumps({"name": "not a run"}))
    wait_status(page, panel, "(el) => el.textContent.startsWith('Not opened')")
    assert "not a run saved by the lab" in status(panel)
    path = tmp_path / f"{name}-run.json"
    path.write_text(text)
    panel.locator("input.lab-train-open").set_input_files(str(path))
    wait_status(page, panel, "(el) => el.textContent.startsWith('Opened')")
    assert panel.locator(".lab-train-result").inner_text() == result
    # each run joins the lab's picker, and is drawn there like a shipped run
    yours = [t for t in lab.locator("select.lab-run option").all_inner_texts() if t.startswith("yours: ")]
    assert yours[-1] == "yours: previous-token, seed 0" and len(yours) == 4
    lab.locator("select.lab-run").select_option(label=yours[-1])
    assert lab.locator(".lab-body").get_attribute("data-seed") == "0"
    assert numpy_line in lab.locator(".lab-text").inner_text()


def watch(page) -> list:
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type in CONSOLE_PROBLEMS else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


def test_served_page_trains_in_the_students_browser(page, served_app, artifacts, numpy_line, tmp_path):
    errors, sent = watch(page), []
    page.on("websocket", lambda ws: ws.on("framesent", lambda f: sent.append(f)))
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(served_app)
    page.get_by_role("tab", name="Training lab").click()
    lab = page.locator(".area-more section.training-lab")
    train_it_yourself(page, lab, artifacts, "served", numpy_line, tmp_path, sent)
    assert errors == []


def test_exported_file_trains_offline(page, exported, artifacts, numpy_line, tmp_path):
    errors, requests = watch(page), []
    local = ("file:", "blob:")  # blob: the worker's own source, made in the page
    page.on("request", lambda r: requests.append(r.url) if not r.url.startswith(local) else None)
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(exported)
    lab = page.locator("#training-lab")
    train_it_yourself(page, lab, artifacts, "export", numpy_line, tmp_path, axe="#training-lab")
    assert errors == []
    assert requests == []


def test_a_page_that_cannot_start_a_worker_trains_in_the_page(page, exported):
    """Where a browser would not start a Web Worker, the same chunked loop runs in the page, and says so."""
    errors = watch(page)
    page.add_init_script("delete window.Worker;")
    page.goto(exported)
    panel = page.locator("#training-lab details.lab-train")
    panel.wait_for(timeout=30_000)
    panel.locator("summary").click()
    panel.locator("input.lab-train-steps").fill("20")
    # every text the status shows, kept: 20 steps can be done before a read after the click
    panel.locator(".lab-train-status").evaluate(
        "(el) => { window.__said = []; new MutationObserver(() => window.__said.push(el.textContent))"
        ".observe(el, {childList: true, characterData: true, subtree: true}); }"
    )
    panel.locator("button.lab-train-go").click()
    panel.locator("button.lab-train-go:not([disabled])").wait_for(timeout=60_000)
    said = page.evaluate("() => window.__said")
    assert any("in the page: this browser would not start a background worker" in text for text in said), said
    assert status(panel).endswith(final_line(train(RUNS["previous-token"], seed=0, steps=20, record=False)))
    assert errors == []
