"""Pages built ahead, while the server is idle, for a class that arrives all at once.

Building a student's explorer (its HeadState and its ~300 Bokeh models) and the Panel objects of its page
(the template, the panes around the explorer's parts, the further explorers' tabs) is much of what a new
session costs the server; 100 students opening the page within seconds would queue behind each other's
builds. With `python -m app.classroom --expect N`, each server process builds N of them ahead, one per
turn of its event loop, and hands one to each arriving session, which then only adds the classroom line,
the URL's settings and its document (the Bokeh models of Panel's panes, which belong to a document). The
pool is topped up again, one page at a time, once no session has started and no browser has sent anything
for a few seconds (the class has left, or is listening). Without
--expect (or with plain `panel serve app/main.py`) nothing is built ahead.

The models of a pooled page belong to no document until a session takes it; a taken page is never given
to another session.
"""

from __future__ import annotations

import gc
import logging
import os
import time
from typing import NamedTuple

from app.serving import freeze_long_lived, seconds_since_input

EXPECT_ENV = "EXPLORER_EXPECT"  # how many explorers a server process keeps ready (set by app.classroom)
QUIET_S = 10.0  # no session started and no input for this long: the class has arrived or left, top up
GAP_S = 0.02  # between two builds, so requests that come in meanwhile are answered

log = logging.getLogger(__name__)


class ReadyPage(NamedTuple):
    """A student's explorer and its page (app/served_page.py explorer_page), built ahead."""

    explorer: object
    page: object


def ready_page() -> ReadyPage:
    from app.served_page import explorer_page
    from widgets.explorer import HeadExplorer

    explorer = HeadExplorer(editor_on_open=True)
    return ReadyPage(explorer, explorer_page(explorer))


class ExplorerPool:
    def __init__(self, size: int, make):
        self.size = size
        self._make = make  # () -> a new explorer
        self._ready: list = []
        self._last_take = 0.0
        self._filling = False
        self.built = 0  # built ahead so far
        self.taken = 0  # handed to sessions
        self.missed = 0  # sessions that found the pool empty and built their own

    def __len__(self) -> int:
        return len(self._ready)

    def take(self):
        """A ready page (or a new one when none is ready), and a refill later."""
        self._last_take = time.monotonic()
        if self._ready:
            self.taken += 1
            explorer = self._ready.pop()
        else:
            self.missed += 1
            explorer = self._make()
        self.start()
        return explorer

    def fill_one(self) -> bool:
        """Build one page if the pool is short; False when it is full."""
        if len(self._ready) >= self.size:
            return False
        self._ready.append(self._make())
        self.built += 1
        return True

    def start(self) -> None:
        """Top the pool up on the running event loop, one build per turn, while no session is starting."""
        if self._filling or len(self._ready) >= self.size:
            return
        from tornado.ioloop import IOLoop

        self._filling = True
        loop = IOLoop.current()
        built_before = self.built

        def step() -> None:
            # A build holds the event loop ~0.1-0.2 s: while students are arriving or working, every one of
            # them would wait behind it, so the pool fills only while no session starts and no browser sends
            # anything (a class that has left, or a quiet moment).
            quiet = min(time.monotonic() - self._last_take, seconds_since_input())
            if quiet < QUIET_S:  # a class is arriving or at work: its sessions come first
                loop.call_later(QUIET_S - quiet, step)
                return
            gc.unfreeze()  # (see below) the pages handed out are the sessions' now, collected as usual
            try:
                more = self.fill_one()
            except Exception:  # a build that fails must not stop the server; sessions build their own
                log.exception("building a page ahead failed")
                more = False
            if more and len(self._ready) < self.size:
                loop.call_later(GAP_S, step)
            else:  # full now (not a turn later, when a session may already have taken a page)
                self._filling = False
                # The garbage collector's full passes walk every object in the process, the pool's ~3 MB a
                # page too: with 60 pages ready, one pass in an arrival cost 1.3 s (bench/profile_arrival.py).
                # Frozen, they are left out of its passes until the class has arrived (the next refill) or
                # left (app/serving.py releases memory then).
                freeze_long_lived()
                if self.built > built_before:
                    print(f"Pages built ahead: {len(self._ready)} ready in process {os.getpid()}", flush=True)

        loop.add_callback(step)


_pool: ExplorerPool | None = None


def expected() -> int:
    try:
        return max(0, int(os.environ.get(EXPECT_ENV, "0")))
    except ValueError:
        return 0


def pool() -> ExplorerPool | None:
    """This process's pool, made on first use when EXPLORER_EXPECT asks for one."""
    global _pool
    if _pool is None and expected() > 0:
        _pool = ExplorerPool(expected(), ready_page)
    return _pool


def build_ahead_now() -> None:
    """Fill this process's pool at once, before it serves (app/zygote.py: every server process forked from
    it then starts with its pages built, a server process started again after a crash too)."""
    p = pool()
    if p is not None:
        while p.fill_one():
            pass


def page_for_session(session_args: dict) -> ReadyPage:
    """The explorer and page for a new session: from the pool when there is one (with the link's settings
    applied), else built now (page None: serve_page builds it). Either way its head editor is built when
    the student first opens it (HeadExplorer.editor_on_open)."""
    from widgets.explorer import HeadExplorer
    from widgets.url_state import apply_params

    p = pool()
    if p is None:
        return ReadyPage(HeadExplorer(sync_url=True, editor_on_open=True), None)
    ready = p.take()
    ready.explorer.sync_url = True
    if session_args:
        apply_params(ready.explorer.state, session_args)
    return ready


def explorer_for_session(session_args: dict):
    """The explorer of page_for_session."""
    return page_for_session(session_args).explorer
