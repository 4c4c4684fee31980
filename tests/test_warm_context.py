"""The worker's warm browser context (tests/conftest.py WarmContext): what a test leaves in it, the next test
does not find. The tests run in the order written: each odd one leaves something, the next one looks."""

from __future__ import annotations

PAGE = "http://warm.test/"  # answered by a route of the test's own: nothing leaves the machine
left: dict = {}


def open_blank(context):
    context.route(PAGE, lambda r: r.fulfill(body="<p>warm</p>", content_type="text/html"))
    page = context.new_page()
    page.goto(PAGE)
    return page


def test_a_test_leaves_storage_a_cookie_a_route_and_pages(context):
    page = open_blank(context)
    page.evaluate("() => { localStorage.setItem('left', 'behind'); document.cookie = 'left=behind'; }")
    context.new_page()
    context.grant_permissions(["clipboard-read"])
    left["context"], left["pages"] = context, len(context.pages)
    assert left["pages"] == 3


def test_the_next_finds_none_of_them_in_the_same_context(context):
    assert context is left["context"]
    assert len(context.pages) == 1  # the blank page the context keeps
    assert context.storage_state() == {"cookies": [], "origins": []}
    page = open_blank(context)
    assert page.evaluate("() => [localStorage.getItem('left'), document.cookie]") == [None, ""]
    state = page.evaluate("() => navigator.permissions.query({name: 'clipboard-read'}).then((p) => p.state)")
    assert state != "granted"


def test_a_test_adds_an_init_script(context):
    context.add_init_script("window.leftBehind = true;")
    left["context"] = context
    assert open_blank(context).evaluate("() => window.leftBehind") is True


def test_the_next_gets_a_new_context_without_it(context):
    assert context is not left["context"] and left["context"].is_closed()
    assert open_blank(context).evaluate("() => window.leftBehind") is None
