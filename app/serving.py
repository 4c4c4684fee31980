"""Serving helpers: the server-side tuning shared by `panel serve app/main.py` and the classroom
launcher, and the two small utilities every script that starts a server needs (a free port, and
waiting until the app answers)."""

from __future__ import annotations

import ctypes
import gc
import logging
import select
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


class RefusedChangeInWords(logging.Filter):
    """A page's change that does not fit its property (a malformed message: text where a choice's number
    goes) is refused by Bokeh, which answers that page with an error and serves on; say so in one line in
    the server's log instead of Bokeh's traceback, which reads as a crash."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, (ValueError, TypeError)) and str(record.msg).startswith("error handling message"):
            record.msg, record.args, record.exc_info, record.exc_text = (
                "refused a change from a page that does not fit its property (%s); the session goes on",
                (str(exc)[:300],),
                None,
                None,
            )
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


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


def _synced_refs_serializer():
    from bokeh.core.serialization import Serializer
    from bokeh.model import Model

    class Synced(Serializer):
        """Bokeh's Serializer for a PATCH-DOC message, asking the document whether a model is already in the
        browser when it meets one, instead of first collecting a reference to every such model."""

        def __init__(self, models) -> None:
            super().__init__()
            self._synced, self._new = models._models, models._new_models

        def has_ref(self, obj) -> bool:
            return self.get_ref(obj) is not None

        def get_ref(self, obj):  # called for every value encoded: a model is rare, so checked last
            ref = self._references.get(id(obj))
            if ref is None and isinstance(obj, Model) and self._synced.get(obj._id) is obj:
                if obj not in self._new:
                    ref = self._references[id(obj)] = obj.ref
            return ref

    return Synced


def refer_to_synced_models_lazily() -> None:
    """Do not walk every model of the document for each message the server sends or receives.

    Bokeh's PATCH-DOC message starts with a reference to each model the browser already has (a set, then a
    dict of ~340 references for the explorer's page), although a move's message names only the dozen models
    it changes; and each message from the browser starts with a dict of the document's models by id. Both
    are rebuilt on every message: 0.4–0.8 ms of a move's CPU, growing with the page. The outgoing message now
    asks the document about a model only when it meets one (nothing for the models it does not name: the
    same message, tests/test_message_refs.py compares it with Bokeh's own); the incoming one's dict is still
    built, but without a property call per model.
    """
    from bokeh.document import document
    from bokeh.protocol.messages.patch_doc import patch_doc

    if getattr(patch_doc.create, "_lazy_refs", False):
        return
    from bokeh.core.serialization import Deserializer
    from bokeh.document.json import PatchJson

    synced = _synced_refs_serializer()

    @classmethod
    def create(cls, events, **metadata):
        # bokeh/protocol/messages/patch_doc.py `create`, with the Serializer above
        header = cls.create_header()
        if not events:
            raise ValueError("PATCH-DOC message requires at least one event")
        docs = {event.document for event in events}
        if len(docs) != 1:
            raise ValueError("PATCH-DOC message configured with events for more than one document")
        [doc] = docs
        serializer = synced(doc.models)
        patch_json = PatchJson(events=serializer.encode(events))
        doc.models.flush_synced(lambda model: not serializer.has_ref(model))
        msg = cls(header, metadata, patch_json)
        msg.add_buffers(*serializer.buffers)
        return msg

    create.__func__._lazy_refs = True
    create.__func__._bokeh_create = patch_doc.create  # for the test that compares the two
    patch_doc.create = create

    class ModelsById(Deserializer):
        """Bokeh's Deserializer, its dict of the document's models by id built without a property call per
        model (only Document.apply_json_patch makes one, from `list(self.models)`)."""

        def __init__(self, references=None, *, setter=None):
            super().__init__(None, setter=setter)
            self._references = {model._id: model for model in references or []}

    document.Deserializer = ModelsById


# A change held back because more input was waiting is applied after this long at the latest.
OVERTAKEN_FLUSH_S = 0.02


def overwrite_key(message) -> frozenset | None:
    """What a PATCH-DOC from the browser overwrites: {(model id, property)} when every event in it only sets
    a property to a value a newer one overwrites (widgets/latest.py `overwritable`: a number), else None
    (never held back)."""
    from widgets.latest import overwritable  # here: this module is imported where Panel is not

    if getattr(message, "msgtype", None) != "PATCH-DOC":
        return None
    events = (message.content or {}).get("events") or []
    key = set()
    for event in events:
        new = event.get("new")
        if event.get("kind") != "ModelChanged" or "attr" not in event or not overwritable(new):
            return None
        key.add(((event.get("model") or {}).get("id"), event["attr"]))
    return frozenset(key) or None


def more_input_waiting(handler) -> bool:
    """Whether this websocket has bytes read but not handled yet, or unread bytes waiting in the system."""
    try:
        stream = handler.ws_connection.stream
        if stream._read_buffer_size > 0:
            return True
        return bool(select.select([stream.socket], [], [], 0)[0])
    except (AttributeError, OSError, ValueError, TypeError):
        return False


_last_input = float("-inf")  # time.monotonic() of the last message a browser sent this process


def seconds_since_input() -> float:
    """Seconds since any browser last sent this process a message (a move, a click, a document request):
    how long the students have left the server idle. Counted by the websocket handler `latest_patch_wins`
    installs."""
    return time.monotonic() - _last_input


def latest_patch_wins() -> None:
    """Drop a browser's property change that a newer change of the same properties, already waiting on the
    same websocket, overwrites: never parsed into the document, never computed, never answered.

    When a session's slider values arrive faster than the server handles them (a busy server, a quick drag,
    a burst), each still cost Bokeh ~2 ms to apply and answer before the app saw it (bench/RESULTS-class-
    load.md), so a class's queue grew even when the app itself skipped overtaken values (widgets/latest.py).
    Here a change is held back while more input from the same browser is waiting; the next message that
    arrives with nothing behind it applies what is held, in order, except what it overwrites itself. When
    the server keeps up, nothing is waiting and every change is handled at once, as before. Only messages
    that set properties to numbers are held back (overwrite_key: a pick, a button's event, a stream of data,
    a document request never are), and at most OVERTAKEN_FLUSH_S. A dropped message gets no OK reply:
    BokehJS ignores those replies, and the served page (static/bokeh_seam.js sendLatest) waits only for the
    answer to the newest patch it sent, which nothing newer overwrites. With that script a page never has two
    changes of one property waiting, so this half is for clients without it (a `server_document` embed, a
    page opened before an update).
    """
    import asyncio

    from bokeh.server.views.ws import WSHandler
    from tornado.ioloop import IOLoop

    if getattr(WSHandler._handle, "_latest_wins", False):
        return
    handle = WSHandler._handle

    async def apply_held(self, overwritten_by: frozenset | None = None) -> None:
        held = self.__dict__.get("_held", {})
        while held:
            key = next(iter(held))
            message = held.pop(key)
            if overwritten_by is not None and key <= overwritten_by:
                continue  # the message being handled sets all of these again
            work = await handle(self, message)
            if work:
                await self._schedule(work)

    async def _handle(self, message):
        global _last_input
        _last_input = time.monotonic()
        lock = self.__dict__.setdefault("_held_lock", asyncio.Lock())
        async with lock:
            key = overwrite_key(message)
            held = self.__dict__.setdefault("_held", {})
            if key is not None and more_input_waiting(self):
                for older in [k for k in held if k <= key]:
                    del held[older]  # overtaken before it was handled
                held[key] = message
                IOLoop.current().call_later(OVERTAKEN_FLUSH_S, lambda: asyncio.ensure_future(flush(self)))
                return None
            await apply_held(self, key)
            return await handle(self, message)

    async def flush(self) -> None:
        if not self.__dict__.get("_held"):
            return
        async with self.__dict__["_held_lock"]:
            try:
                await apply_held(self)
            except (WebSocketClosedError, StreamClosedError):  # the tab closed meanwhile: nobody to answer
                pass
            except Exception:  # as on_message does for a message that fails: log it, keep serving
                logging.getLogger(__name__).exception("applying a held-back change failed")

    _handle.__dict__.update(vars(handle))  # keep the marks of the wrappers inside (each is installed once)
    _handle._latest_wins = True
    WSHandler._handle = _handle


RELEASE_AFTER_S = 5.0  # after the last session closed in a burst (a class leaving), then once
_release_pending = None  # the timer of the next release, if one is due
_closed_since_release = 0  # sessions destroyed since the last release


def _return_freed_memory() -> None:
    global _release_pending, _closed_since_release
    _release_pending = None
    _closed_since_release = 0
    gc.unfreeze()  # what freeze_long_lived and app/pool.py kept from the collector may be garbage now
    gc.collect()
    try:  # glibc keeps freed heap pages for reuse; malloc_trim hands them back to the system
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, musl): the pages stay with the process
        pass
    freeze_long_lived()  # what is left (the imports, the open sessions) stays out of the passes again


def release_memory_when_sessions_close(session_context) -> None:
    """An on-session-destroyed callback: a few seconds after sessions stop closing, collect garbage
    and give the freed memory back to the operating system.

    Without it a server's resident memory stays at its peak after a class leaves (Python and glibc
    keep the freed pages). With it part of that goes back (392 → 266 MB after 100 sessions); the rest
    is reused by the next class (bench/memory_rounds.py).

    The release's full collection walks the sessions still open as well, ~7 ms each, and every student
    on the process waits for it (0.46 s with 60 open, 0.70 s with 100: bench/release_stall.py). So one student
    leaving mid-class does not start it: it waits until at least as many sessions have closed since the
    last release as are still open (a class, or half of one, has left), which also bounds what stays
    unreleased to the size of what is open.
    """
    global _release_pending, _closed_since_release
    from tornado.ioloop import IOLoop

    _closed_since_release += 1
    if _closed_since_release < sessions_open(session_context):
        return
    loop = IOLoop.current()
    if _release_pending is not None:
        loop.remove_timeout(_release_pending)
    _release_pending = loop.call_later(RELEASE_AFTER_S, _return_freed_memory)


def sessions_open(session_context) -> int:
    """The sessions the server still holds beside a destroyed one (Bokeh drops that one before it calls
    the on-session-destroyed callbacks); 0 outside a server."""
    try:
        return len(session_context.server_context.sessions)
    except AttributeError:
        return 0


_startup_frozen = False


def freeze_long_lived() -> None:
    """Leave every object alive now out of the garbage collector's full passes, until the sessions close.

    A full pass walks every tracked object: the imports' (Panel, Bokeh, numpy, the app: most of the
    process) and each open session's page. The allocations of slider moves start one every few dozen
    moves, and in the explorer's server it cost 3.5 ms a move on average (the same-shape floor's 1.4 ms),
    more than any part of the move itself (bench/RESULTS-latency.md). So the process freezes what it holds
    once its first page is built and again after each new session's page; `_return_freed_memory` thaws
    and collects everything when sessions have closed, then freezes what is left.
    """
    gc.freeze()


def _freeze_after_this_session_is_built() -> None:
    global _startup_frozen
    if not _startup_frozen:  # the imports: once per process
        _startup_frozen = True
        gc.collect()
        gc.freeze()
    try:
        from bokeh.io import curdoc

        doc = curdoc()
        if doc.session_context is not None:  # runs after the session's script has built its page
            doc.add_next_tick_callback(freeze_long_lived)
    except Exception:  # not served (a test, a notebook): nothing to freeze after
        pass


def tune_server() -> None:
    """Idempotent: safe to call from every session's script run."""
    _freeze_after_this_session_is_built()
    set_tcp_nodelay()
    skip_document_validation()
    drop_messages_after_close()
    latest_patch_wins()
    tolerate_early_close()
    refer_to_synced_models_lazily()
    log = logging.getLogger("asyncio")
    if not any(isinstance(f, DropClosedSocketWrites) for f in log.filters):
        log.addFilter(DropClosedSocketWrites())
    handler_log = logging.getLogger("bokeh.server.protocol_handler")
    if not any(isinstance(f, RefusedChangeInWords) for f in handler_log.filters):
        handler_log.addFilter(RefusedChangeInWords())


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
