"""The training lab tab in Chromium, served and exported: the same static/lab.js in both pages.

Served, the lab lives in a Panel JSComponent's shadow root (Playwright's CSS locators reach into it); a
run switch or a snapshot move is drawn in the browser, so no message goes to the server for it.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

# Widths at which the steps' lines must not be cut: a phone, a tablet, a desktop.
WIDTHS = (390, 760, 1400)
# The steps panel: how far its text reaches past its box (0 when nothing is cut or needs a sideways scroll).
STEPS_OVERFLOW = "el => el.scrollWidth - el.clientWidth"
PAGE_OVERFLOW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
CELL_WIDTH = "el => el.getBoundingClientRect().width"
HEIGHT = "el => el.getBoundingClientRect().height"
# How far the lab's box reaches below the last thing it shows.
EMPTY_BELOW = """el => el.getBoundingClientRect().bottom
  - Math.max(...Array.from(el.children, (child) => child.getBoundingClientRect().bottom))"""


def exercise_lab(page, lab, artifacts, name: str, sent: list | None = None, widths=WIDTHS) -> None:
    """Switch runs and snapshots in the lab `lab` (a locator), checking what it draws; `sent`, if given,
    collects the frames the page sends its server: a switch or a move must send none."""
    weights = lab.locator('table[data-name="weights"]')
    weights.wait_for(timeout=30_000)
    body = lab.locator(".lab-body")
    # every heatmap is a table: token labels head its columns and its rows
    header = weights.locator("tr").first.locator("th").all_inner_texts()
    assert header[0] == "query \\ key" and len(header) == 13 and all(len(t) == 1 for t in header[1:])
    assert weights.locator("tr.query-row th").inner_text().startswith(header[-1])  # the last query
    before = weights.inner_text()
    quiet = len(sent or [])

    slider = lab.locator("input.lab-snapshot")
    slider.fill("0")  # a range input takes fill() as a value and fires input
    assert body.get_attribute("data-snapshot") == "0"
    at_start = weights.inner_text()
    assert at_start != before
    assert slider.get_attribute("aria-valuetext").startswith("step 0,")

    lab.locator("select.lab-run").select_option("triggers")
    assert body.get_attribute("data-run") == "triggers"
    assert weights.inner_text() != at_start
    assert lab.locator('table[data-name="layer0"]').is_visible()
    assert "formed" in lab.locator("ul.verdicts").inner_text()
    # another seed: its own trained head, curves and note; only the trained head ships for it
    trained = weights.inner_text()
    curve = lab.locator('polyline[data-line="train"]').get_attribute("points")
    lab.locator("select.lab-seed").select_option(label="1")
    assert body.get_attribute("data-seed") == "1"
    assert weights.inner_text() != trained
    assert lab.locator('polyline[data-line="train"]').get_attribute("points") != curve
    note = lab.locator("p.seed-note").inner_text()
    assert note.startswith("Drawn: seed 1 (the trained head only") and "the pair formed" in note
    assert slider.is_disabled() and slider.get_attribute("aria-valuetext").startswith("step 3000,")
    lab.locator("select.lab-run").select_option("positional-lookup")  # the seed stays as picked
    assert body.get_attribute("data-seed") == "1"
    assert "followed" in lab.locator("p.claim").inner_text()
    lab.locator("select.lab-seed").select_option(label="0")
    assert not slider.is_disabled()
    page.wait_for_timeout(300)
    assert len(sent or []) == quiet, (sent or [])[quiet:]  # no round trip
    for width in widths:
        page.set_viewport_size({"width": width, "height": 1000})
        steps = lab.locator(".lab-steps")
        steps.scroll_into_view_if_needed()
        page.wait_for_timeout(100)
        assert steps.evaluate(STEPS_OVERFLOW) <= 1, width
        assert page.evaluate(PAGE_OVERFLOW) <= 0, width  # wide tables scroll in their own box, not the page
        assert weights.locator("td").first.evaluate(CELL_WIDTH) >= 39, width  # not squeezed under its number
        steps.screenshot(path=str(artifacts / f"lab-{name}-steps-{width}.png"))
    page.set_viewport_size({"width": 1440, "height": 1000})
    # issue 26: the lab is as tall as its run (no room kept for others, no blank band below a short run),
    # and a switch to a shorter run with the page scrolled to its end does not move the run picker
    assert body.evaluate("el => el.style.minHeight") == ""
    select = lab.locator("select.lab-run")
    select.select_option("positional-lookup")
    page.evaluate("() => window.scrollTo(0, document.documentElement.scrollHeight)")
    page.wait_for_timeout(100)
    top = select.evaluate("el => el.getBoundingClientRect().top")
    select.select_option("no-scale")
    page.wait_for_timeout(100)
    assert abs(select.evaluate("el => el.getBoundingClientRect().top") - top) <= 1  # no jump
    assert not lab.locator('table[data-name="W_Q"]').is_visible()
    page.evaluate("() => window.scrollTo(0, 0)")  # the kept room out of sight: the lab follows its run
    page.wait_for_function("el => el.style.minHeight === ''", arg=body.element_handle())
    assert body.evaluate(EMPTY_BELOW) <= 2
    page.screenshot(path=str(artifacts / f"lab-{name}-no-scale.png"), full_page=True)


def test_served_lab_switches_runs_and_snapshots_in_the_browser(page, artifacts, served_app):
    from tests.conftest import CONSOLE_PROBLEMS

    errors, sent = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type in CONSOLE_PROBLEMS else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("websocket", lambda ws: ws.on("framesent", lambda f: sent.append(f)))
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(served_app)
    page.get_by_role("tab", name="Training lab").click()
    lab = page.locator(".area-more section.training-lab")
    lab.locator('table[data-name="weights"]').wait_for(timeout=30_000)
    page.wait_for_timeout(300)
    page.screenshot(path=str(artifacts / "lab-served.png"), full_page=True)
    exercise_lab(page, lab, artifacts, "served", sent)
    assert errors == []  # (and no Traceback in the server's log: tests/conftest.py served_app)


def test_exported_lab_switches_runs_and_snapshots(page, artifacts, export_copy):
    from tests.conftest import CONSOLE_PROBLEMS

    out = export_copy / "head.html"
    errors, requests = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type in CONSOLE_PROBLEMS else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url) if not r.url.startswith("file:") else None)
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(out.as_uri())
    lab = page.locator("#training-lab")
    lab.wait_for()
    lab.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "lab-export.png"), full_page=True)
    exercise_lab(page, lab, artifacts, "export", widths=(390,))  # the same lab.js and lab.css as served
    assert errors == []
    assert requests == []
