"""The class bus: the teacher's sends reach every student, and every student's head reaches the class view.

One bus per server process.  With one process everything stays in it: a send is handed to each student
session directly.  With several (``--processes N``, or backends behind nginx), the processes meet on
Redis pub/sub: a send is published on SEND_CHANNEL (and kept under LAST_SEND_KEY for students who arrive
later); each process publishes a summary of its students on CLASS_CHANNEL when something changed (at
most every REPORT_EVERY seconds) and at least every HEARTBEAT seconds, and the teacher's process adds up
the latest summary of each.  Redis only ever carries these small messages: a student's page never waits
for it, so losing Redis costs sends and the class view, never a page.  The link comes back by itself
when Redis does.

A question the teacher asks the class (issue 24 item 3) travels the same way as a send: published on
QUESTION_CHANNEL and kept under LAST_QUESTION_KEY (latecomers, pages that come back); each state of it (open,
revealed, closed) is one message that replaces the one before. Students' answers never travel: each process
counts its own students' answers and only the counts go into its summary for the teacher; at the reveal the
teacher's process publishes the class's counts with the answer.

A head travels as the explorer's own URL parameters (widgets.url_state.encode / apply_params), so every
input the link carries (tokens, X, the W's, switches, query, ...) goes along.

No Panel or Bokeh here: a student joins with callbacks that run on its own session (`deliver`), and
everything runs on the server's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import socket
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from core.class_question import add_tallies, read_question, tally
from widgets.url_state import encode, resolve_query

log = logging.getLogger(__name__)

REDIS_URL_ENV = "ATTN_REDIS_URL"  # set by the launcher when the server runs as more than one process
SEND_CHANNEL = "attn:send"
CLASS_CHANNEL = "attn:class"
LAST_SEND_KEY = "attn:last-send"
QUESTION_CHANNEL = "attn:question"
LAST_QUESTION_KEY = "attn:last-question"
REPORT_EVERY = 0.2  # s: a process reports a change in its class at most this often ...
HEARTBEAT = 0.5  # s: ... and at least this often, so the teacher sees a student or process that went away
STALE_AFTER = 3.0  # s: a process not heard from for this long no longer counts
RETRY = 0.5  # s between attempts to reach Redis again
# s: a refused connection fails at once whatever this is; the timeout only bites when this process's own
# event loop is slow to get back to the connect (a busy server), and 0.5 s lost a teacher's send that way
CONNECT_TIMEOUT = 2.0


@dataclass(frozen=True)
class Send:
    """One head the teacher sent: its URL parameters, an id, and when."""

    params: dict
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    at: float = field(default_factory=time.time)

    def to_dict(self) -> dict:
        return {"id": self.id, "at": self.at, "params": self.params}

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data) -> Send:
        """A send from its dict; ValueError when it is not one (a page's copy is checked as input)."""
        if not isinstance(data, dict) or not isinstance(data.get("params"), dict):
            raise ValueError("not a send")
        params = data["params"]
        if len(params) > 40 or not all(isinstance(k, str) and isinstance(v, str) for k, v in params.items()):
            raise ValueError("not a head's parameters")
        at = float(data["at"])
        if not math.isfinite(at):
            raise ValueError("not a time")
        return cls(params=dict(params), id=str(data["id"])[:40], at=at)

    @classmethod
    def from_json(cls, text) -> Send:
        return cls.from_dict(json.loads(text))


OPEN, REVEALED, CLOSED = "open", "revealed", "closed"  # the states of a question the class is asked


def question_message(state: str, question: dict | None, counts: list[int] | None = None) -> dict:
    """One state of the class's question, as it travels: the question itself, and at the reveal the counts."""
    return {"state": state, "question": question, "counts": counts, "at": time.time()}


def read_question_message(data) -> dict:
    """A question message from Redis or a page's copy, checked; ValueError when it is not one."""
    if isinstance(data, (str, bytes)):
        data = json.loads(data)
    if not isinstance(data, dict) or data.get("state") not in (OPEN, REVEALED, CLOSED):
        raise ValueError("not a question message")
    try:
        at = float(data.get("at", 0))
    except (TypeError, ValueError):
        raise ValueError("not a question message's time") from None
    if data["state"] == CLOSED:
        return question_message(CLOSED, None) | {"at": at}
    question = read_question(data.get("question"))
    counts = data.get("counts")
    if data["state"] == REVEALED:
        n = len(question["choices"])
        if not isinstance(counts, list) or len(counts) != n:
            raise ValueError("not a question's counts")
        counts = add_tallies([counts], n)
    else:
        counts = None
    return {"state": data["state"], "question": question, "counts": counts, "at": at}


def top_key(state, query_label: str | None) -> str | None:
    """The key the row of `query_label` (or, without one, of the state's own query) weighs most."""
    labels = list(state.labels)
    q = state.query if query_label is None else resolve_query(query_label, labels)
    if q is None:
        return None
    return labels[int(np.argmax(state.head.weights[q]))]


class Student:
    """One student's session as the bus sees it.

    `deliver(send)` must apply the send on the student's session (the session schedules it under its own
    lock); `connected()` says whether the page is connected right now.
    """

    def __init__(self, state, deliver, connected=lambda: True):
        self.state = state
        self.deliver = deliver
        self.connected = connected
        self.on_head: dict | None = None  # the encoded head last sent, as this student received it
        self.went_back = False  # pressed "Back to my head" since the last send
        self.answer: tuple[str, int] | None = None  # (question id, choice) of the class's question
        self.on_question = None  # called with each question message (ClassLink sets it)
        self.bus: ClassBus | None = None
        self._info: tuple[bool, str | None] | None = None
        state.param.watch(self._changed, ["head", "query"])

    def _changed(self, *events) -> None:
        self._info = None
        if self.bus is not None:
            self.bus.dirty = True

    def received(self, head: dict | None = None) -> None:
        """Call once a send is on this student's page (`head`: the send as this page loaded it, encoded;
        by default the head on the page now)."""
        self.on_head = head if head is not None else encode(self.state)
        self.went_back = False
        self._changed()
        if head is None:
            self._info = (True, None)  # on it by definition: the class report need not encode every head

    def back(self) -> None:
        """Call when the student went back to their own head."""
        self.went_back = True
        self._changed()

    def answered(self, question_id: str, choice: int | None) -> None:
        """The student's answer to the class's question (None: no answer)."""
        self.answer = None if choice is None else (question_id, choice)
        if self.bus is not None:
            self.bus.dirty = True

    def info(self, query_label: str | None) -> tuple[bool, str | None]:
        """(still on the head last sent, the key the class's query row weighs most)."""
        if self._info is None:
            self._info = (self.on_head is not None and encode(self.state) == self.on_head, None)
        on_sent, _ = self._info
        return on_sent, top_key(self.state, query_label)


def summarise(students, send: Send | None, proc: str, question: dict | None = None) -> dict:
    """What one process tells the teacher about its students (of the class's question, only the counts)."""
    query_label = (send.params.get("query") or None) if send else None
    live = [s for s in students if s.connected()]
    on_sent, back, tops = 0, 0, Counter()
    for s in live:
        on, key = s.info(query_label)
        on_sent += bool(on and send is not None)
        back += bool(s.went_back and not on and send is not None)
        if key is not None:
            tops[key] += 1
    asked = question.get("question") if question else None
    answers = [s.answer[1] for s in live if asked and s.answer and s.answer[0] == asked["id"]]
    return {
        "question_id": asked["id"] if asked else None,
        "tally": tally(answers, len(asked["choices"])) if asked else None,
        "proc": proc,
        "students": len(live),
        "on_sent": on_sent,
        "back": back,
        "send_id": send.id if send else None,
        "top": dict(tops),
        "t": time.time(),
    }


def add_up(
    summaries: list[dict], send: Send | None, order: list[str] | None = None, question: dict | None = None
) -> dict:
    """The class at a glance from every process's summary (with the class's question: its counts)."""
    students = sum(s["students"] for s in summaries)
    current = [s for s in summaries if send is not None and s["send_id"] == send.id]
    on_sent = sum(s["on_sent"] for s in current)
    back = sum(s.get("back", 0) for s in current)
    tops: Counter = Counter()
    for s in summaries:
        tops.update(s["top"])
    order = list(order or [])
    asked = question.get("question") if question else None
    keys = [k for k in order if k in tops] + sorted(k for k in tops if k not in order)
    return {
        "students": students,
        "on_sent": on_sent if send else None,
        "back": back if send else None,
        "changed": students - on_sent - back if send else None,
        "top": {k: tops[k] for k in keys},
        "processes": len(summaries),
        "tally": add_tallies(
            [s.get("tally") for s in summaries if s.get("question_id") == asked["id"]], len(asked["choices"])
        )
        if asked
        else None,
    }


class ClassBus:
    """One server process's end of the bus."""

    def __init__(self, redis_url: str | None = None):
        self.redis_url = redis_url
        self.proc = f"{socket.gethostname()}:{os.getpid()}"
        self.students: dict[int, Student] = {}
        self.last_send: Send | None = None
        self.question: dict | None = None  # the class's question as last published (question_message)
        self.dirty = False
        self.summaries: dict[str, dict] = {}  # from every process, by Redis (its own included)
        self.link_up = redis_url is None  # one process: no link needed
        self.last_error = ""
        self._tasks: list[asyncio.Task] = []
        self._client = None
        self._listening = False  # subscribed on Redis right now
        if redis_url:
            self._fetch_last_send_now()

    @property
    def local(self) -> bool:
        return self.redis_url is None

    # -- students --------------------------------------------------------------

    def join(self, student: Student) -> None:
        student.bus = self
        self.students[id(student)] = student
        self.dirty = True
        self.start()

    def leave(self, student: Student) -> None:
        self.students.pop(id(student), None)
        self.dirty = True

    # -- sending ---------------------------------------------------------------

    def send(self, params: dict) -> Send:
        """Send a head to every student; in Redis mode the result comes back through `link_up`."""
        send = Send(params=dict(params))
        if self.local:
            self._receive(send)
        else:
            self._spawn(self._publish_send(send))
        return send

    def remember(self, send: Send) -> None:
        """A send the teacher's page brought back after its server process was started again: kept as the
        last one (for latecomers and the counts) when this process knows none, but not delivered again."""
        if self.last_send is not None:
            return
        self.last_send = send
        self.dirty = True
        if not self.local:
            self._spawn(self._write(lambda client: client.set(LAST_SEND_KEY, send.to_json(), nx=True)))

    # -- the class's question ----------------------------------------------------

    def publish_question(self, message: dict) -> None:
        """Open, reveal or close the class's question on every process (a question_message)."""
        if self.local:
            self._receive_question(message)
        else:
            text = json.dumps(message)

            async def publish(client):
                await client.set(LAST_QUESTION_KEY, text)
                await client.publish(QUESTION_CHANNEL, text)

            self._spawn(self._write(publish))

    def remember_question(self, message: dict) -> None:
        """A question the teacher's page brought back after its process was started again (see `remember`)."""
        if self.question is None:
            self.question = message
            self.dirty = True
            if not self.local:
                text = json.dumps(message)
                self._spawn(self._write(lambda client: client.set(LAST_QUESTION_KEY, text, nx=True)))

    def _receive_question(self, message: dict) -> None:
        old = self.question
        if old is not None and old["at"] == message["at"] and old["state"] == message["state"]:
            return
        self.question = message
        self.dirty = True
        for student in list(self.students.values()):
            if student.on_question is not None:
                student.on_question(message)

    def _receive(self, send: Send) -> None:
        if self.last_send is not None and self.last_send.id == send.id:
            return
        self.last_send = send
        self.dirty = True
        for student in list(self.students.values()):
            student.deliver(send)

    # -- the class at a glance ---------------------------------------------------

    def local_summary(self) -> dict:
        self.dirty = False
        return summarise(self.students.values(), self.last_send, self.proc, self.question)

    def class_view(self, order: list[str] | None = None) -> dict:
        if self.local:
            parts = [self.local_summary()]
        else:
            now = time.time()
            parts = [s for s in self.summaries.values() if now - s["received"] <= STALE_AFTER]
        view = add_up(parts, self.last_send, order, self.question)
        view["link_up"] = self.link_up
        return view

    # -- Redis -----------------------------------------------------------------

    def _fetch_last_send_now(self) -> None:
        """A process that starts mid-class learns the last send before its first student's page is made."""
        import redis

        try:
            text = redis.Redis.from_url(self.redis_url, socket_timeout=0.3, socket_connect_timeout=0.3).get(
                LAST_SEND_KEY
            )
            if text:
                self.last_send = Send.from_json(text)
            text = redis.Redis.from_url(self.redis_url, socket_timeout=0.3, socket_connect_timeout=0.3).get(
                LAST_QUESTION_KEY
            )
            if text:
                self.question = read_question_message(text)
        except (redis.RedisError, OSError, ValueError, KeyError) as exc:
            self.last_error = str(exc)

    def start(self) -> None:
        """Join the other processes on Redis (from the first student or teacher's page of this process on)."""
        if self.local or self._tasks:
            return
        self._tasks = [self._spawn(self._listen()), self._spawn(self._report())]

    def _spawn(self, coroutine) -> asyncio.Task:
        task = asyncio.get_event_loop().create_task(coroutine)
        task.add_done_callback(_log_failure)
        return task

    def _redis(self):
        import redis.asyncio

        if self._client is None:
            self._client = redis.asyncio.Redis.from_url(
                self.redis_url, socket_connect_timeout=CONNECT_TIMEOUT, socket_timeout=5.0
            )
        return self._client

    def _down(self, exc: Exception) -> None:
        if self.link_up:
            log.warning("class bus: lost Redis (%s); students keep working, sends wait for it", exc)
        self.link_up = False
        self.last_error = str(exc) or type(exc).__name__

    async def _publish_send(self, send: Send) -> None:
        text = send.to_json()

        async def publish(client):
            await client.set(LAST_SEND_KEY, text)
            await client.publish(SEND_CHANNEL, text)

        await self._write(publish)

    async def _write(self, action) -> bool:
        """Run `action(client)`; a connection Redis dropped when it restarted gets one fresh try."""
        import redis

        for attempt in (1, 2):
            try:
                await action(self._redis())
            except (redis.RedisError, OSError) as exc:
                self._client = None
                if attempt == 2 or not self._listening:
                    self._down(exc)
                    return False
            else:
                self.link_up = self._listening
                return True
        return False

    async def _report(self) -> None:
        last = 0.0
        while True:
            await asyncio.sleep(REPORT_EVERY)
            if not (self.dirty or time.monotonic() - last >= HEARTBEAT):
                continue
            summary = json.dumps(self.local_summary())
            if await self._write(lambda client, s=summary: client.publish(CLASS_CHANNEL, s)):
                last = time.monotonic()

    async def _listen(self) -> None:
        import redis
        import redis.asyncio

        while True:
            client = redis.asyncio.Redis.from_url(self.redis_url, socket_connect_timeout=CONNECT_TIMEOUT)
            try:
                pubsub = client.pubsub()
                await pubsub.subscribe(SEND_CHANNEL, CLASS_CHANNEL, QUESTION_CHANNEL)
                await self._after_reconnect(client)
                self.link_up = self._listening = True
                async for message in pubsub.listen():
                    if message.get("type") == "message":
                        self._on_message(message["channel"], message["data"])
            except (redis.RedisError, OSError) as exc:
                self._listening = False
                self._down(exc)
            finally:
                with contextlib.suppress(Exception):  # closing a client whose server is gone may fail
                    await client.aclose()
            await asyncio.sleep(RETRY)

    async def _after_reconnect(self, client) -> None:
        """Catch up on a send made while this process was cut off; give a restarted Redis the last send."""
        text = await client.get(LAST_SEND_KEY)
        if text:
            self._receive(Send.from_json(text))
        elif self.last_send is not None:
            await client.set(LAST_SEND_KEY, self.last_send.to_json(), nx=True)
        text = await client.get(LAST_QUESTION_KEY)
        if text:
            try:
                self._receive_question(read_question_message(text))
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("class bus: ignored a malformed question kept in Redis (%s)", exc)
        elif self.question is not None:
            await client.set(LAST_QUESTION_KEY, json.dumps(self.question), nx=True)
        self.dirty = True

    def _on_message(self, channel, data) -> None:
        channel = channel.decode() if isinstance(channel, bytes) else channel
        try:
            if channel == SEND_CHANNEL:
                self._receive(Send.from_json(data))
            elif channel == QUESTION_CHANNEL:
                self._receive_question(read_question_message(data))
            elif channel == CLASS_CHANNEL:
                summary = json.loads(data)
                summary["received"] = time.time()
                self.summaries[summary["proc"]] = summary
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("class bus: ignored a malformed message on %s (%s)", channel, exc)


def _log_failure(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("class bus: a task stopped: %r", task.exception())


_bus: ClassBus | None = None
_bus_pid: int | None = None


def class_bus() -> ClassBus:
    """This process's bus (made on first use: Bokeh's --num-procs forks before any session)."""
    global _bus, _bus_pid
    if _bus is None or _bus_pid != os.getpid():
        _bus, _bus_pid = ClassBus(os.environ.get(REDIS_URL_ENV) or None), os.getpid()
    return _bus
