"""Students and a teacher over the Bokeh protocol, for the class answering a question together (issue 24
item 3): tests/test_class_ask.py and bench/bench_ask.py drive a class of them, where tens of Chromium pages
would take the server's cores.

A student (AskStudent) follows its page's question card (widgets/class_question_view.py QuestionCard: the
question's text, the choices' RadioGroup, the status under it) and answers by setting the RadioGroup's
`active`, as the browser's radio buttons do. The teacher (AskTeacher) opens /teacher with the key's cookie,
picks a question (the Select's `value`), presses Ask / Reveal / Close (Bokeh's button_click event, as a
browser sends it) and follows the counts (the chart's ColumnDataSource and the line above it). Each records
when (time.time()) it first saw what, for the benchmark.
"""

from __future__ import annotations

import asyncio
import re
import time

from bench.load_test import Wire, decode_numbers, entries
from bench.rejoiner import ClassWire

CARD = ("class-question", "class-answer", "class-answer-status", "class-question-card")
DESK = ("class-ask-pick", "class-ask", "class-reveal", "class-close", "class-answers", "class-answered")


class Waits:
    """`until(predicate, timeout)`: wait for what the page shows, woken by each message that changes it."""

    changed: asyncio.Event
    closed: bool

    async def until(self, predicate, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not predicate():
            left = deadline - time.monotonic()
            if left <= 0 or self.closed:
                return False
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), left)
            except TimeoutError:
                return predicate()
        return True


class AskStudent(Waits, ClassWire):
    NAMES = (*ClassWire.NAMES, *CARD)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seen: dict[str, float] = {}  # "question", "reveal": when first seen (cleared between questions)
        self.changed = asyncio.Event()

    def attr(self, name: str, attr: str, default=None):
        return self.attrs.get(name, {}).get(attr, default)

    @property
    def question(self) -> str:
        return self.attr("class-question", "text", "") or ""

    @property
    def status(self) -> str:
        return self.attr("class-answer-status", "text", "") or ""

    @property
    def shown(self) -> bool:
        return bool(self.attr("class-question-card", "visible", False))

    @property
    def revealed(self) -> bool:
        return self.shown and "lesson-feedback" in self.status

    def _dispatch(self, header, content, buffers) -> None:
        super()._dispatch(header, content, buffers)
        if header.get("msgtype") != "PATCH-DOC":
            return
        ours = {self.ids.get(n): n for n in CARD if n in self.ids}
        now = time.time()
        touched = False
        for ev in content.get("events", []):
            name = ours.get((ev.get("model") or {}).get("id"))
            if name is not None and ev.get("kind") == "ModelChanged":
                self.attrs[name][ev.get("attr")] = ev.get("new")
                touched = True
        if touched:
            if self.shown and self.question:
                self.seen.setdefault("question", now)
            if self.revealed:
                self.seen.setdefault("reveal", now)
            self.changed.set()

    async def answer(self, choice) -> None:
        """Pick `choice` (an index; anything else is a malformed answer the server must refuse)."""
        await self.set("class-answer", "active", choice)


class AskTeacher(Waits, Wire):
    NAMES = (*Wire.NAMES, *DESK)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.counts: list[int] = []
        self.answered_line = ""
        self.changed = asyncio.Event()
        self.t_counts = 0.0  # when the counts last changed

    def _dispatch(self, header, content, buffers) -> None:
        super()._dispatch(header, content, buffers)
        if header.get("msgtype") != "PATCH-DOC":
            return
        source, line = self.ids.get("class-answers"), self.ids.get("class-answered")
        for ev in content.get("events", []):
            mid, kind = (ev.get("model") or {}).get("id"), ev.get("kind")
            if mid == source and (
                kind == "ColumnDataChanged" or (kind == "ModelChanged" and ev.get("attr") == "data")
            ):
                data = entries(ev.get("data", ev.get("new")))
                if "students" in data:
                    self.counts = [int(v) for v in decode_numbers(data["students"], buffers)]
                    self.t_counts = time.time()
                    self.changed.set()
            elif mid == line and kind == "ModelChanged" and ev.get("attr") == "text":
                self.answered_line = ev.get("new") or ""
                self.changed.set()

    @property
    def answered(self) -> int | None:
        found = re.search(r"<b>(\d+)</b> of (\d+) students answered", self.answered_line)
        return int(found.group(1)) if found else None

    async def pick(self, name: str) -> None:
        await self.set("class-ask-pick", "value", name)

    async def press(self, button: str) -> None:
        """Press one of the desk's buttons (class-ask, class-reveal, class-close) as a browser does."""
        event = {
            "type": "event",
            "name": "button_click",
            "values": {"type": "map", "entries": [["model", {"id": self.ids[button]}]]},
        }
        await self.send(
            "PATCH-DOC", {"events": [{"kind": "MessageSent", "msg_type": "bokeh_event", "msg_data": event}]}
        )
