"""Serving helpers: the server-side tuning shared by `panel serve app/main.py` and the classroom
launcher, and the two small utilities every script that starts a server needs (a free port, and
waiting until the app answers)."""

from __future__ import annotations

import ctypes
import gc
import logging
import socket
import subprocess
import time
import urllib.request

from tornado.iostream import StreamClosedError
from tornado.websocket import WebSocketClosedError


def set_tcp_nodelay() -> None:
    """Send each websocket frame at once (TCP_NODELAY) on every Bokeh websocket.

    Bokeh writes every message as 3+ frames (header, metadata, content) and its
    WSHandler never disables Nagle's algorithm, so the 2nd frame of a reply waits
    for the client's delayed ACK: measured on loopback, move → new weights took
    ~55 ms instead of ~11 ms (bench/RESULTS-classroom.md).
    """
    from bokeh.server.views.ws import WSHandler

    if getattr(WSHandler.open, "_nodelay", False):
        return
    opened = WSHandler.open

    def open_with_nodelay(self, *args, **kwargs):
        self.set_nodelay(True)
        return opened(self, *args, **kwargs)

    open_with_nodelay._nodelay = True
    WSHandler.open = open_with_nodelay


class DropClosedSocketWrites(logging.Filter):
    """Panel writes a held batch of changes straight to each websocket; when a student's tab closes in
    the middle of that write, asyncio logs the unawaited write's error. The session is already gone and
    nothing is lost, so drop that one record rather than have it look like a failure in the server log."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, (WebSocketClosedError, StreamClosedError))


def tolerate_early_close() -> None:
    """Let a websocket close before its session exists without an uncaught exception.

    A laptop that closes its lid (or a tab closed) while the server is still building the session
    reaches Bokeh's `WSHandler.on_close` with a connection whose session is not attached yet;
    `connection.session` then fails an assertion and Tornado logs "Uncaught exception". There is
    nothing to clean up in that case beyond telling the application the client left.
    """
    from bokeh.server.views.ws import WSHandler

    if getattr(WSHandler.on_close, "_tolerant", False):
        return
    closed = WSHandler.on_close

    def on_close(self) -> None:
        connection = getattr(self, "connection", None)
        if connection is not None and getattr(connection, "_session", None) is None:
            self.application.client_lost(connection)
            return
        closed(self)

    on_close._tolerant = True
    WSHandler.on_close = on_close


def skip_document_validation() -> None:
    """Do not re-check every model of every new session's document for integrity problems.

    Bokeh walks the whole page (~320 models) on each session to look for mistakes such as columns of
    unequal length; that was a sixth of a session's start-up CPU. The page is the same for every
    session, and tests/test_state.py runs the same checks on it.
    """
    from bokeh.settings import settings

    settings.perform_document_validation.set_value(False)


def drop_messages_after_close() -> None:
    """Drop messages still queued from a websocket that has closed, instead of logging a traceback each.

    A client that vanishes mid-drag (laptop lid shut, tab killed) leaves slider moves that Tornado has
    already read but Bokeh has not yet handled. Once the connection is closed Bokeh detaches its
    session, and handling each left-over move then fails an assertion in `ServerConnection.session`
    (bokeh/server/connection.py), logged as "error handling message" with a traceback, one per move.
    Nobody is left to answer, so those moves are simply not handled.
    """
    from bokeh.server.views.ws import WSHandler

    if getattr(WSHandler._handle, "_drops_after_close", False):
        return
    handle = WSHandler._handle

    async def _handle(self, message):
        connection = self.connection
        if connection is not None and getattr(connection, "_session", None) is None:
            return None
        return await handle(self, message)

    _handle._drops_after_close = True
    WSHandler._handle = _handle


RELEASE_AFTER_S = 5.0  # after the last session closed in a burst (a class leaving), then once
_release_pending = None  # the timer of the next release, if one is due


def _return_freed_memory() -> None:
    global _release_pending
    _release_pending = None
    gc.collect()
    try:  # glibc keeps freed heap pages for reuse; malloc_trim hands them back to the system
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, musl): the pages stay with the process
        pass


def release_memory_when_sessions_close(session_context) -> None:
    """An on-session-destroyed callback: a few seconds after sessions stop closing, collect garbage
    and give the freed memory back to the operating system.

    Without it a server's resident memory stays at its peak after a class leaves (Python and glibc
    keep the freed pages). With it part of that goes back (392 → 266 MB after 100 sessions); the rest
    is reused by the next class (bench/memory_rounds.py).
    """
    global _release_pending
    from tornado.ioloop import IOLoop

    loop = IOLoop.current()
    if _release_pending is not None:
        loop.remove_timeout(_release_pending)
    _release_pending = loop.call_later(RELEASE_AFTER_S, _return_freed_memory)


def tune_server() -> None:
    """Idempotent: safe to call from every session's script run."""
    set_tcp_nodelay()
    skip_document_validation()
    drop_messages_after_close()
    tolerate_early_close()
    log = logging.getLogger("asyncio")
    if not any(isinstance(f, DropClosedSocketWrites) for f in log.filters):
        log.addFilter(DropClosedSocketWrites())


def free_port() -> int:
    """A loopback port nobody is listening on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_http(url: str, timeout: float = 90.0) -> None:
    """Poll until `url` answers 200; a first session on a busy machine can take many seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.25)
    raise RuntimeError(f"{url} did not answer within {timeout} s")


def stop_process(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """Ask a server to stop; kill it if it has not within `timeout` seconds."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
