"""The served page loads in Chromium and shows the chapter's numbers for "it"."""

from tests.conftest import CONSOLE_PROBLEMS


def test_page_shows_the_chapters_numbers(served_app, page, artifacts):
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type in CONSOLE_PROBLEMS else None)
    page.goto(served_app)
    page.wait_for_selector("text=weights = [0.13, 0.56, 0.14, 0.18]", timeout=20000)
    page.wait_for_selector("text== [0.23, 0.68]")
    page.screenshot(path=str(artifacts / "served-initial.png"), full_page=True)
    assert errors == []
