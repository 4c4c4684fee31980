"""Latest move wins: a session's control changes, coalesced when they come faster than they are answered.

A slider that is dragged sends a value every frame. When the server answers each value sooner than the
next one arrives, every value is answered at once, in order, so a slow drag is followed step by step. When
values arrive faster (a busy server, a quick drag, a flood), they wait in the session's websocket; computing
each of them would put the page further and further behind. So a change that arrives while more input is
waiting is not applied where it arrives: it is remembered as its control's pending value, and applied on a
later turn of the server's event loop, which
Bokeh runs under the session's document lock after the messages already read have been handled. Any
newer value of the same control that arrives in between replaces it; the overtaken one is never
computed. Values of different controls are applied in the order of their latest arrival, so a preset
picked after a slider move still wins over it, and the other way round.

This is the session's half of "latest move wins". The page's half (static/bokeh_seam.js sendLatest) keeps one
change in flight per page, so a served page's values rarely pile up at all; the server's half (app/serving.py
`latest_patch_wins`) drops an overtaken change from a client without that script before Bokeh applies it
to the document. This half still merges what was applied in between (values read in separate turns).

Outside a served session (a notebook, a script, the tests' headless explorer) there is no loop turn to
wait for, and every change is applied at once.
"""

from __future__ import annotations

import select
import time
from collections.abc import Callable, Hashable

import panel as pn
from tornado.ioloop import IOLoop

# A pending value waits while more input for its session is waiting to be read, but at most this long, so
# a flood of values still updates its sender's page several times a second.
MAX_WAIT_S = 0.1


def input_waiting(doc) -> bool:
    """Whether the websocket of `doc`'s session has bytes read but not yet handled, or unread bytes waiting
    in the operating system: then a newer message is on its way to the callbacks.

    Reaches into Bokeh's session and Tornado's stream (private names, checked by
    tests/test_served_app.py's burst test); if they change, this answers False and values are simply
    applied in turn.
    """
    try:
        session = doc.session_context._session
        for connection in session._subscribed_connections:
            stream = connection._socket.ws_connection.stream
            if stream._read_buffer_size > 0:
                return True
            if select.select([stream.socket], [], [], 0)[0]:
                return True
    except (AttributeError, OSError, ValueError, TypeError):
        return False
    return False


def overwritable(value) -> bool:
    """Whether a control's newer value leaves this one nothing to say: a number (a slider's, a number box's),
    which a drag or typing passes through on the way to the next. A pick (a select's value, a checkbox's) is
    an action of its own: a question closed and picked again is asked afresh, a preset left and picked again
    undoes the edits, so every pick is applied, in order (static/bokeh_seam.js sendLatest holds the same
    rule)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


class LatestWins:
    """Pending control values of one session; `submit` from a control's callback, applied on a later tick."""

    def __init__(self, run: Callable[[Callable[[], object]], None] = lambda apply: apply()):
        self._run = run  # how to apply one change (the explorer passes its error guard)
        self._pending: dict[Hashable, Callable[[], object]] = {}  # by control, in order of latest arrival
        self._arrivals = 0
        self._scheduled = False
        self.applied = 0  # changes applied (for tests and benchmarks)
        self.dropped = 0  # changes overtaken by a newer value of the same control before they were applied

    def submit(self, key: Hashable, apply: Callable[[], object]) -> None:
        """The control `key` has a new value; `apply` applies it."""
        doc = pn.state.curdoc
        if doc is None or doc.session_context is None:  # not served: nothing to coalesce with
            self._apply(apply)
            return
        if not self._pending and not input_waiting(doc):  # nothing behind it: answer now, no turn's delay
            self._apply(apply)
            return
        if self._pending.pop(key, None) is not None:
            self.dropped += 1
        self._pending[key] = apply
        self._arrivals += 1
        if not self._scheduled:
            self._scheduled = True
            loop = IOLoop.current()
            since = time.monotonic()
            loop.add_callback(self._wait, loop, doc, self._arrivals, since)

    def _wait(self, loop, doc, seen: int, since: float) -> None:
        """A bare loop callback (no document lock, a few microseconds) while a burst is still being read."""
        more = self._arrivals != seen or input_waiting(doc)
        if more and time.monotonic() - since < MAX_WAIT_S:
            loop.add_callback(self._wait, loop, doc, self._arrivals, since)
        else:
            doc.add_next_tick_callback(self._flush)  # under the document lock, with this document as curdoc

    def _flush(self) -> None:
        self._scheduled = False
        pending, self._pending = self._pending, {}
        for apply in pending.values():
            self._apply(apply)

    def _apply(self, apply: Callable[[], object]) -> None:
        self.applied += 1
        self._run(apply)
