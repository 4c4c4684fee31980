"""The training lab tab in Chromium: served (Bokeh models, Python callbacks) and exported (static/lab.js)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

# The weights cells of the lab's heatmap, as text (value column), found by the model's name.
CELLS = """() => {
  for (const doc of Bokeh.documents) {
    const s = doc.get_model_by_name("lab-weights-cells");
    if (s) {
      const v = s.data instanceof Map ? s.data.get("value") : s.data.value;
      return Array.from(v).join(",");
    }
  }
  return null;
}"""
SET = """([name, value]) => {
  for (const doc of Bokeh.documents) {
    const m = doc.get_model_by_name(name);
    if (m) { m.value = value; return true; }
  }
  return false;
}"""


def test_served_lab_switches_runs_and_snapshots(page, artifacts, tmp_path):
    from tests.conftest import serve

    log = tmp_path / "panel.log"
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.set_viewport_size({"width": 1440, "height": 1000})
    with serve("app/main.py", log=log) as base:
        page.goto(f"{base}/main")
        page.locator(".bk-tab", has_text="Training lab").click()
        page.wait_for_function(f"() => ({CELLS})() !== null", timeout=30000)
        page.wait_for_timeout(500)
        first = page.evaluate(CELLS)
        page.screenshot(path=str(artifacts / "lab-served.png"), full_page=True)

        assert page.evaluate(SET, ["lab-snapshot", 0])
        page.wait_for_function(f"(before) => ({CELLS})() !== before", arg=first, timeout=15000)
        at_start = page.evaluate(CELLS)
        assert at_start != first

        assert page.evaluate(SET, ["lab-run", "induction"])
        page.wait_for_function(f"(before) => ({CELLS})() !== before", arg=at_start, timeout=15000)
        page.wait_for_timeout(500)
        page.screenshot(path=str(artifacts / "lab-served-induction.png"), full_page=True)
        text = page.locator("p.claim").first.inner_text()
        assert "induction" in text.lower() or "followed" in text.lower()
    assert errors == []
    assert "Traceback" not in log.read_text()


def test_exported_lab_switches_runs_and_snapshots(page, artifacts, tmp_path):
    from app.export import export

    out = export(tmp_path / "explorer.html")
    errors, requests = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url) if not r.url.startswith("file:") else None)
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(out.as_uri())
    lab = page.locator("#training-lab")
    lab.wait_for()
    weights = lab.locator('table[data-name="weights"]')
    before = weights.inner_text()
    lab.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "lab-export.png"), full_page=True)

    slider = lab.locator("input.lab-snapshot")
    slider.fill("0")  # a range input takes fill() as a value and fires input
    assert lab.locator(".lab-body").get_attribute("data-snapshot") == "0"
    at_start = weights.inner_text()
    assert at_start != before

    lab.locator("select.lab-run").select_option("induction")
    assert lab.locator(".lab-body").get_attribute("data-run") == "induction"
    assert weights.inner_text() != at_start
    assert lab.locator('table[data-name="layer0"]').is_visible()
    assert "followed" in lab.locator("p.claim").inner_text()
    lab.locator("select.lab-run").select_option("no-scale")
    assert not lab.locator('table[data-name="W_Q"]').is_visible()
    page.screenshot(path=str(artifacts / "lab-export-no-scale.png"), full_page=True)
    assert errors == []
    assert requests == []
