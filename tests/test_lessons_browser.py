"""The walk and the questions in Chromium, in both pages: the export (file://) and the served page.

A question opened by its link shows the head before the change and no answer; a prediction, or Reveal,
brings the head after it and the feedback with its numbers. A link opens the walk at a step; "Next step"
walks to the blend, by the keyboard alone; leaving gives the query back. In the served page a walk step and
an answer are drawn while the server is paused (the page draws the student's own presses). axe-core finds
nothing with the walk and a question open, nor with an answer on show. Expected numbers come from the core.
"""

from __future__ import annotations

import os
import signal

import pytest
from playwright.sync_api import expect

from core.lessons import feedback, pose
from core.presets import CHAPTER, EXERCISE_1
from tests.conftest import OTHER_BOKEH_VERSION, QUIET_SEAM_ERROR, serve_process
from tests.test_a11y_browser import axe_violations

READY = "() => window.HeadExplorerPage && HeadExplorerPage.pages.length === 1 && window.HeadLessonPage"
CHAPTER_ROW = [f"{w:.2f}" for w in CHAPTER.head().weights[3]]  # 0.13, 0.56, 0.14, 0.18
AFTER_ROW = [f"{w:.2f}" for w in EXERCISE_1.head().weights[3]]  # 0.10, 0.10, 0.40, 0.40
ROW = """(row) => {
  const s = Bokeh.documents[0].get_model_by_name('weights-cells');
  const text = Array.from(s.data instanceof Map ? s.data.get('text') : s.data.text);
  const n = Math.round(Math.sqrt(text.length));
  return text.slice(row * n, (row + 1) * n);
}"""
CHANNEL = "Bokeh.documents[0].get_model_by_name('head-channel')"
FOCUSED = """() => {
  let el = document.activeElement;
  while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
  return el ? (el.textContent || el.getAttribute('aria-label') || el.tagName).trim() : null;
}"""


@pytest.fixture(scope="module")
def export_url(built_export):
    return (built_export / "head.html").as_uri()  # the run's shared export (tests/conftest.py), opened only


@pytest.fixture(scope="module")
def served(tmp_path_factory):  # its own server, not the run's shared one: a test here pauses it
    log = tmp_path_factory.mktemp("lessons-served") / "panel.log"
    with serve_process(log=log) as (base, proc):
        yield f"{base}/main", proc
    assert "Traceback" not in log.read_text()


def open_page(page, url: str, link: str):
    """The page at `url` opened with the link parameters `link` (as #… in the export, ?… when served)."""
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{url}{'#' if url.startswith('file:') else '?'}{link}")
    page.wait_for_function(READY, timeout=60_000)
    page.errors = errors
    return page


def row_shows(page, row: int, want: list[str]) -> None:
    page.wait_for_function(f"(want) => JSON.stringify(({ROW})({row})) === JSON.stringify(want)", arg=want,
                           timeout=20_000)


def see(page, text: str) -> None:
    page.get_by_text(text, exact=False).first.wait_for(timeout=20_000)


def predict_then_reveal(page, artifacts, name: str) -> None:
    """exercise=exercise-1: the chapter's row for 'it' and a question, no answer; 'cat' is checked and called
    wrong, with 0.40 / 0.40; then the same question again, revealed without a prediction."""
    row_shows(page, 3, CHAPTER_ROW)
    see(page, "Which key will 'it' weigh most after the change?")
    assert page.get_by_text("You said").count() == 0 and page.get_by_text("The answer:").count() == 0
    assert page.get_by_text("splits its attention evenly").count() == 0  # the note waits for the answer
    page.screenshot(path=str(artifacts / f"lessons-{name}-question.png"))
    page.get_by_role("radio", name="cat", exact=True).check()
    page.get_by_role("button", name="Check my prediction").click()
    row_shows(page, 3, AFTER_ROW)
    said = feedback(pose("exercise-1"), 1)
    assert "0.40 / 0.40 between 'sat' and itself" in said
    see(page, said)
    see(page, "splits its attention evenly")  # the explanation, with the answer
    see(page, "0 of 1 prediction right on this page")
    page.screenshot(path=str(artifacts / f"lessons-{name}-answer.png"))
    page.get_by_role("combobox", name="Predict, then check").select_option(index=0)  # close it
    # and, once a served page's server has closed it too, ask it again (two picks within one round trip:
    # test_served_page_asks_afresh_a_question_closed_and_picked_within_one_round_trip)
    closed = f"() => !{CHANNEL} || !JSON.parse({CHANNEL}.state).question"
    page.wait_for_function(closed, timeout=20_000)
    page.get_by_role("combobox", name="Predict, then check").select_option(index=1)
    row_shows(page, 3, CHAPTER_ROW)
    page.get_by_role("button", name="Reveal without predicting").click()
    row_shows(page, 3, AFTER_ROW)
    see(page, feedback(pose("exercise-1"), None))
    see(page, "0 of 1 prediction right on this page")  # a reveal is not counted
    assert axe_violations(page) == []  # an answer on show
    assert page.errors == []


def walk_by_keyboard(page, artifacts, name: str) -> None:
    """walk=1 (and a question open): Step 1, "Previous step" off; Tab to "Next step", Enter five times: Step 6
    with the blend's numbers, said in the status line, "Next step" off and the focus on "Leave the walk"; no
    axe violation; back two steps; the step for 'The' on the way; leaving gives the query back."""
    see(page, "Step 1 of 6")
    see(page, "Where will it land after the change?")
    previous, next_step = (page.get_by_role("button", name=n) for n in ("Previous step", "Next step"))
    expect(previous).to_be_disabled()
    for _ in range(80):  # Tab from the top of the page, as a keyboard user does
        page.keyboard.press("Tab")
        if page.evaluate(FOCUSED) == "Next step":
            break
    else:
        pytest.fail("Tab never reached Next step")
    for step in range(2, 6):
        page.keyboard.press("Enter")
        see(page, f"Step {step} of 6")
        assert page.evaluate(FOCUSED) == "Next step", step  # the focus stays on the button
    expect(previous).to_be_enabled()
    page.keyboard.press("Enter")
    see(page, "Step 6 of 6")
    expect(next_step).to_be_disabled()  # the last step: the focus goes on to leaving the walk
    page.wait_for_function(f"() => ({FOCUSED})() === 'Leave the walk'", timeout=10_000)
    see(page, "The output of 'it' is every value times its weight, added up: [0.23, 0.68]")
    status = page.locator(".lesson-status")
    expect(status).to_contain_text("Step 6 of 6, blend.", timeout=10_000)
    page.screenshot(path=str(artifacts / f"lessons-{name}-walk6.png"))
    assert axe_violations(page) == []  # the walk and a question open, the blend lit
    previous.focus()
    for step in (5, 4):  # back to step 4: idle for 'it'
        page.keyboard.press("Enter")
        see(page, f"Step {step} of 6")
        assert page.evaluate(FOCUSED) == "Previous step", step
    expect(next_step).to_be_enabled()
    see(page, "No token comes after 'it'")
    page.get_by_role("button", name="Show this step for 'The'").focus()
    page.keyboard.press("Enter")
    see(page, "'cat', 'sat' and 'it' come after 'The'")
    page.get_by_role("button", name="Leave the walk").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("button", name="Walk through the six steps")).to_be_visible(timeout=10_000)
    expect(page.get_by_text("Step 4 of 6")).to_have_count(0, timeout=10_000)  # (the text may go a task later)
    # the focus goes to the walk's opening button once the layout shows it (a frame, then a task, later)
    page.wait_for_function(f"() => ({FOCUSED})() === 'Walk through the six steps'", timeout=10_000)
    row_shows(page, 3, CHAPTER_ROW)
    # 'it' again in the picker too: on the served page its value comes back from the server, after the figures
    picked = "() => Bokeh.documents[0].get_model_by_name('query').value === '3'"
    page.wait_for_function(picked, timeout=10_000)
    assert page.errors == []


def test_export_asks_before_it_answers(page, export_url, artifacts):
    predict_then_reveal(open_page(page, export_url, "exercise=exercise-1"), artifacts, "export")


def test_export_walks_the_six_steps_by_keyboard(page, export_url, artifacts):
    walk_by_keyboard(open_page(page, export_url, "walk=1&exercise=top-1"), artifacts, "export")


def test_served_page_asks_before_it_answers(page, served, artifacts):
    predict_then_reveal(open_page(page, served[0], "exercise=exercise-1"), artifacts, "served")


def test_served_page_walks_the_six_steps_by_keyboard(page, served, artifacts):
    walk_by_keyboard(open_page(page, served[0], "walk=1&exercise=top-1"), artifacts, "served")


def test_served_page_draws_a_walk_step_and_an_answer_while_the_server_is_paused(page, served):
    url, proc = served
    open_page(page, url, "walk=2&exercise=no-mask")
    see(page, "Step 2 of 6")
    page.wait_for_function(f"() => {CHANNEL}.drawn_by === 'page'")  # the page's own binding has taken over
    applied = page.evaluate(f"() => {CHANNEL}.presses")
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        page.get_by_role("button", name="Next step").click()
        see(page, "Step 3 of 6")
        page.get_by_role("radio", name="sat", exact=True).check()
        page.get_by_role("button", name="Check my prediction").click()
        see(page, "Right: 'The' now weighs 'sat' most, 0.58")
        row_shows(page, 0, ["0.14", "0.14", "0.58", "0.14"])  # the mask is off: 'The' reads later tokens
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    # the server applies both presses; its answers, with the same numbers, change nothing on screen
    page.wait_for_function(f"(n) => {CHANNEL}.presses >= n", arg=applied + 2, timeout=20_000)
    see(page, "Step 3 of 6")
    see(page, "1 of 1 prediction right on this page")
    row_shows(page, 0, ["0.14", "0.14", "0.58", "0.14"])
    assert page.errors == []


# The question picker set to "none" and back to the question in one go: two picks sent before the server
# has answered either.
PICK_AGAIN_AT_ONCE = """() => {
  const ask = Bokeh.documents[0].get_model_by_name('ask');
  const question = ask.value;
  ask.value = '';
  ask.value = question;
}"""


@pytest.mark.parametrize("bokeh", ["shipped", "another"])
def test_served_page_asks_afresh_a_question_closed_and_picked_within_one_round_trip(page, served, bokeh):
    """Both picks count, as in the export: the answered question is asked afresh. On its own BokehJS the page
    holds its changes back while one is unanswered (static/bokeh_seam.js sendLatest); on another it sends
    each at once, and the server must apply the first rather than drop it as overtaken (app/serving.py
    latest_patch_wins, widgets/latest.py): only a number is overtaken by a newer one, never a pick."""
    if bokeh == "another":
        page.add_init_script(OTHER_BOKEH_VERSION + QUIET_SEAM_ERROR)
    open_page(page, served[0], "exercise=exercise-1")
    page.get_by_role("radio", name="cat", exact=True).check()
    page.get_by_role("button", name="Check my prediction").click()
    row_shows(page, 3, AFTER_ROW)
    answered = f"() => JSON.parse({CHANNEL}.state).revealed === true"
    page.wait_for_function(answered, timeout=20_000)  # the server has the answer too
    page.evaluate(PICK_AGAIN_AT_ONCE)
    row_shows(page, 3, CHAPTER_ROW)
    asked = (
        f"() => {{ const s = JSON.parse({CHANNEL}.state);"
        " return s.question === 'exercise-1' && !s.revealed; }"
    )
    page.wait_for_function(asked, timeout=20_000)
    page.wait_for_timeout(300)  # and nothing comes after to take it back
    row_shows(page, 3, CHAPTER_ROW)
    expect(page.get_by_text("You said")).to_have_count(0)
    assert page.errors == []
