"""Explorers built ahead for a class (app/pool.py): handed out once each, with the link's settings."""

from __future__ import annotations

import numpy as np
import panel as pn

from app import pool as pool_module
from app.pool import ExplorerPool, explorer_for_session, page_for_session, ready_page
from core.presets import PRESETS
from widgets.explorer import HeadExplorer


def test_a_pool_hands_each_explorer_out_once_and_builds_when_empty():
    made = []

    def make():
        made.append(object())
        return made[-1]

    p = ExplorerPool(2, make)
    assert p.fill_one() and p.fill_one() and not p.fill_one()  # full at 2
    first, second = p.take(), p.take()
    assert first is not second and {id(first), id(second)} == {id(m) for m in made}
    third = p.take()  # empty: a session builds its own
    assert third is made[-1] and (p.taken, p.missed, p.built) == (2, 1, 2)


def test_a_pooled_explorer_takes_the_links_settings(monkeypatch):
    p = ExplorerPool(1, ready_page)
    p.fill_one()
    monkeypatch.setattr(pool_module, "_pool", p)
    explorer = explorer_for_session({"preset": [b"tired"], "query": [b"0"]})
    assert explorer.sync_url and len(p) == 0
    tired = PRESETS["tired"]
    assert explorer.state.labels == tuple(tired.tokens) and explorer.state.query == 0
    # the figures were updated in place to the new head (more tokens than the pooled chapter page)
    weights = explorer.page.plots["weights"].source.data["value"]
    assert len(weights) == len(tired.tokens) ** 2
    np.testing.assert_allclose(
        np.nan_to_num(np.asarray(weights, dtype=float)),
        np.nan_to_num(np.where(explorer.state.head.future, np.nan, explorer.state.head.weights)).ravel(),
        atol=1e-12,
    )


def test_a_pooled_page_becomes_the_sessions_document_with_its_classroom_line(monkeypatch):
    from bokeh.document import Document
    from panel.io.state import set_curdoc

    from app.served_page import with_classroom

    p = ExplorerPool(1, ready_page)
    p.fill_one()
    monkeypatch.setattr(pool_module, "_pool", p)
    doc = Document()
    with set_curdoc(doc):
        explorer, page = page_for_session({})
        line = pn.pane.Markdown("the classroom line")
        with_classroom(page, line).server_doc(doc)  # as serve_page does in a session
    names = {m.name for m in doc.models}
    assert {"weights-cells", "x-3-0"} <= names  # the explorer and its sliders
    assert any("the classroom line" in str(getattr(m, "text", "")) for m in doc.models)
    assert len(p) == 0 and p.taken == 1
    # the head editor (a fifth of the page's models) is built when the student first opens its card
    assert explorer.editor is None and not {"labels", "W_Q-0-0"} & names
    (card,) = page.select(pn.Card)
    with set_curdoc(doc):
        card.collapsed = False
    names = {m.name for m in doc.models}
    assert {"labels", "W_Q-0-0", "W_V-2-1"} <= names and explorer.editor.labels.value == "The, cat, sat, it"


def test_without_expect_every_session_builds_its_own(monkeypatch):
    monkeypatch.setattr(pool_module, "_pool", None)
    monkeypatch.delenv(pool_module.EXPECT_ENV, raising=False)
    explorer = explorer_for_session({})
    assert isinstance(explorer, HeadExplorer) and explorer.sync_url


def test_the_launcher_passes_expect_to_each_server_process():
    from app.classroom import parse_args, server_env

    assert parse_args(["--expect", "30"]).expect == 30
    assert server_env(False, 30)[pool_module.EXPECT_ENV] == "30"
    assert server_env(False).get(pool_module.EXPECT_ENV) != "30"


def test_a_full_pool_is_kept_out_of_the_collectors_passes_until_the_class_leaves():
    """app/pool.py freezes the garbage collector's view once its pages are built (a full pass over a pool
    of pages cost seconds during an arrival); releasing a closed class's memory collects what the freeze
    kept (here a cycle dropped after the freeze, as a closed session's page is)."""
    import asyncio
    import gc
    import weakref
    from concurrent.futures import ThreadPoolExecutor

    from app import serving

    made = []

    async def fill():
        p = ExplorerPool(2, lambda: made.append([object()]) or made[-1])
        p.start()
        for _ in range(200):
            await asyncio.sleep(0.01)
            if not p._filling:
                break
        return p

    class Page:
        pass

    closed = Page()
    closed.itself = closed  # a cycle: only a full pass frees it
    gone = weakref.ref(closed)
    try:
        # a thread of its own: after the browser tests, Playwright's event loop runs in this one
        with ThreadPoolExecutor(1) as pool:
            p = pool.submit(asyncio.run, fill()).result()
        assert len(p) == 2 and gc.get_freeze_count() > 0
        del closed
        gc.collect()
        assert gone() is not None  # frozen: left out of the passes
        serving._return_freed_memory()  # a class has left
        assert gone() is None
    finally:
        gc.unfreeze()


def test_the_pool_waits_while_students_are_at_work(monkeypatch):
    """A build holds the server's loop for every student on it: the pool fills only once no session has
    started and no browser has sent anything for QUIET_S (app/serving.py counts the input)."""
    import asyncio
    import gc
    import time
    from concurrent.futures import ThreadPoolExecutor

    from app import serving

    monkeypatch.setattr(pool_module, "QUIET_S", 0.2)
    made = []

    async def fill_while(busy_for: float):
        p = ExplorerPool(1, lambda: made.append(object()) or made[-1])
        t0 = asyncio.get_running_loop().time()
        while asyncio.get_running_loop().time() - t0 < busy_for:
            monkeypatch.setattr(serving, "_last_input", time.monotonic())  # a student's move
            p.start()
            await asyncio.sleep(0.02)
            assert len(p) == 0, "built while a student was moving"
        for _ in range(100):  # then the class goes quiet
            await asyncio.sleep(0.02)
            if len(p):
                return p
        return p

    try:
        with ThreadPoolExecutor(1) as pool:  # a thread of its own, as above
            p = pool.submit(asyncio.run, fill_while(0.6)).result()
    finally:
        gc.unfreeze()  # the full pool froze the collector's view
    assert len(p) == 1 and p.built == 1
