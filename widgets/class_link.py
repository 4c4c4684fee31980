"""A student's end of the class: heads the teacher sends load into this page, with one click back.

When the teacher sends a head, the page loads it (every input, through the link codec of
widgets/url_state.py) and says so in a line above the explorer; "Back to my head" puts back exactly what
the student had before.  A student who opens the bare address after a send starts on the last head
sent; a link that carries its own head (a shared or reloaded link) keeps it.

The page holds its own copy of where it stands in the class (`published`: the send on show, the head to
go back to, whether the student went back), so that a page whose server process died comes back as it
was: static/rejoin.js opens a new session with the page's head and that copy in its address (CAME_BACK),
and this line picks up from it. A send made while the page was away reaches it then.

Below the line, the card of the question the teacher asked the class (widgets/class_question_view.py): a
latecomer gets the open question, and a page that comes back gets it with its own answer (kept in
`published` too).
"""

from __future__ import annotations

import html
import json
import time
from functools import partial

import panel as pn
import param
from bokeh.layouts import column, row
from bokeh.models import Button, Div
from panel.io.state import set_curdoc

from core.class_question import answer_index
from widgets.broadcast import CLOSED, ClassBus, Send, Student, class_bus
from widgets.class_question_view import QuestionCard
from widgets.controls import set_changed
from widgets.state import HeadState
from widgets.url_state import apply_params, encode

HEAD_PARAMS = frozenset(encode(HeadState()))  # every parameter of a link that describes the head
CAME_BACK = "class"  # the address parameter of a page that comes back: its `published` class state, as JSON
MAX_CAME_BACK = 60_000  # characters: three heads of 64 tokens


def load_head(state, params: dict) -> list[str]:
    """Put a whole head into `state` with one redraw of the views (one batch of watcher calls)."""
    with param.parameterized.batch_call_watchers(state):
        return apply_params(state, params)


def brings_a_head(args: dict) -> bool:
    """Whether the page's own URL carries a head (it then wins over the last head sent)."""
    return any(key in HEAD_PARAMS for key in args)


def sent_line(send: Send, back: bool) -> str:
    when = time.strftime("%H:%M", time.localtime(send.at))
    tail = " Your own head is one click away." if back else ""
    return f"<b>Your teacher sent this head</b> at {html.escape(when)}.{tail}"


BACK_LINE = "Back on your own head. The teacher's head comes back with the next send."


def head_params(value) -> dict | None:
    """A head's link parameters from a page's copy (checked as any input is), or None."""
    if not isinstance(value, dict) or not value or len(value) > 40:
        return None
    if not all(isinstance(k, str) and k in HEAD_PARAMS and isinstance(v, str) for k, v in value.items()):
        return None
    return dict(value)


def came_back(args: dict | None) -> dict | None:
    """The class state a page brought back in its address (ClassLink.published, TeacherDesk.published), or
    None: not a page coming back, or a copy that does not read (then the page starts as a new one would)."""
    value = (args or {}).get(CAME_BACK)
    if isinstance(value, (list, tuple)):
        value = value[-1] if value else None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str) or len(value) > MAX_CAME_BACK:
        return None
    try:
        data = json.loads(value)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def sent_head(send: Send) -> dict:
    """A send's head as a page that loads it holds it (encoded): what "still on the teacher's head" means."""
    state = HeadState()
    load_head(state, send.params)
    return encode(state)


class ClassLink(pn.viewable.Viewer):
    """The line about the teacher's last send and the way back; joins the class bus for its session.

    `explorer` (the page's HeadExplorer, when there is one) shows a custom head the teacher sent as
    "Your teacher's head" in its preset box."""

    def __init__(
        self, state, bus: ClassBus | None = None, session_args: dict | None = None, explorer=None, **params
    ):
        super().__init__(**params)
        self.state = state
        self.bus = bus or class_bus()
        self.explorer = explorer
        self.doc = pn.state.curdoc
        self.before: dict | None = None  # the student's own head, kept while a sent one is on show
        self.shown: Send | None = None  # the send on show
        self.seen: str | None = None  # the id of the last send this page has met (shown, or passed over)
        # Plain Bokeh models, as the explorer's controls are: a Panel HTML pane re-walks every model of
        # the page on each change of its text (DocumentModelManager.recompute, ~320 models), which was
        # 60 % of the CPU a send cost (py-spy, bench/bench_class.py).
        self.line = Div(text="", name="class-line", margin=(8, 10), styles={"font-size": "16px"})
        self.back = Button(label="Back to my head", button_type="primary", visible=False, name="class-back")
        self.back.on_click(lambda event: self.go_back())
        self.view = row(
            self.line,
            self.back,
            visible=False,
            styles={"background": "#eaf2fb", "border": "1px solid #9cbbe0", "border-radius": "4px"},
            margin=(8, 0, 0, 0),
        )
        self.student = Student(state, self._deliver, self._connected)
        self.student.on_question = self._deliver_question
        self.card = QuestionCard(answered=self._answered)
        self._receiving = False
        state.param.watch(self._student_changed, ["head", "query"])
        last = self.bus.last_send
        resumed = came_back(session_args)
        if resumed is not None:
            self._resume(resumed)
            if last is not None and last.id != self.seen and self._newer(last):
                self._load(last, keep_own=True)  # sent while this page was away
        elif last is not None and not brings_a_head(session_args or {}):
            self._load(last, keep_own=False)
        self.seen = last.id if last is not None and self.seen is None else self.seen
        self._show_question(self.bus.question, self._answer_kept(resumed))
        self._publish()
        self.bus.join(self.student)
        if self.doc is not None and getattr(self.doc, "session_context", None) is not None:
            # counted from the moment the page is ready, not at the next report (widgets/broadcast.py)
            pn.state.onload(lambda: setattr(self.bus, "dirty", True))
        if self.doc is not None and hasattr(self.doc, "on_session_destroyed"):
            self.doc.on_session_destroyed(lambda context: self.bus.leave(self.student))

    def _newer(self, send: Send) -> bool:
        return self.shown is None or send.at >= self.shown.at

    def _resume(self, data: dict) -> None:
        """Pick up from the class state the page brought back: the send on show, the way back, or back."""
        self.seen = str(data["seen"])[:40] if isinstance(data.get("seen"), str) else None
        try:
            self.shown = Send.from_dict(data["send"]) if data.get("send") else None
        except (ValueError, KeyError, TypeError):
            self.shown = None
        if self.shown is None:
            return
        self.before = head_params(data.get("own"))
        self.student.received(sent_head(self.shown))
        if data.get("back") is True and self.before is None:
            self.student.back()
            self.line.text = BACK_LINE
            self.view.visible = True
        else:
            self._show(self.shown, back=self.before is not None)
            self._mark_teachers_head(self.student.info(None)[0])

    # -- the class's question ------------------------------------------------------------------------------

    def _answer_kept(self, data: dict | None) -> int | None:
        """The student's answer to the open question, as the page brought it back (checked), or None."""
        kept, asked = (data or {}).get("answer"), self.bus.question
        if not isinstance(kept, dict) or asked is None or asked["state"] == CLOSED:
            return None
        if kept.get("id") != asked["question"]["id"]:
            return None
        try:
            return answer_index(asked["question"], kept.get("choice"))
        except ValueError:
            return None

    def _deliver_question(self, message: dict) -> None:
        """Called by the bus on the server's loop: show the question inside this session's document lock."""
        self._in_session(self._question_arrived, message)

    def _question_arrived(self, message: dict) -> None:
        with set_curdoc(self.doc), pn.io.hold():
            self._show_question(message)
            self._publish()

    def _show_question(self, message: dict | None, own: int | None = None) -> None:
        self.card.show(message, own)
        if message is not None and message["state"] != CLOSED and self.card.own is not None:
            self.student.answered(message["question"]["id"], self.card.own)

    def _answered(self, question_id: str, choice: int | None) -> None:
        self.student.answered(question_id, choice)
        self._publish()

    def _connected(self) -> bool:
        context = getattr(self.doc, "session_context", None)
        session = getattr(context, "_session", None)
        return session is None or session.connection_count > 0

    def _deliver(self, send: Send) -> None:
        """Called by the bus on the server's loop: apply the send inside this session's document lock."""
        self._in_session(self.receive, send)

    def _in_session(self, apply, message) -> None:
        """`apply(message)` on this session's next tick (under its document's lock), or now without one."""
        if self.doc is not None and getattr(self.doc, "session_context", None) is not None:
            self.doc.add_next_tick_callback(partial(apply, message))
        else:
            apply(message)

    def receive(self, send: Send) -> None:
        if send.id == self.seen:  # one this page has (a process started again may hear it after its pages)
            return
        # The bus calls from its own asyncio task, whose context still names the document of the session
        # that started it as Panel's current one: without this, pn.io.hold() held that other document
        # and this page's changes went out one PATCH-DOC message each (py-spy, bench/bench_class.py).
        with set_curdoc(self.doc), pn.io.hold():
            self._load(send, keep_own=True)

    def _load(self, send: Send, keep_own: bool) -> None:
        if keep_own and self.before is None:  # a second send keeps the head the student had before the first
            self.before = encode(self.state)
        self._receiving = True
        try:
            load_head(self.state, send.params)
        finally:
            self._receiving = False
        self.student.received()
        self.shown = send
        self.seen = send.id
        self._show(send, back=self.before is not None)
        self._mark_teachers_head(True)
        self._publish()

    def go_back(self) -> None:
        if self.before is None:
            return
        self._receiving = True
        try:
            load_head(self.state, self.before)
        finally:
            self._receiving = False
        self.before = None
        self.student.back()
        self._mark_teachers_head(False)
        with pn.io.hold():
            self.back.visible = False
            self.line.text = BACK_LINE
            self._publish()

    def _student_changed(self, *events) -> None:
        """The student changed the head the teacher sent: it is their own now."""
        if not self._receiving and self._teachers_head:
            self._mark_teachers_head(False)

    _teachers_head = False

    def _mark_teachers_head(self, on: bool) -> None:
        self._teachers_head = on
        if self.explorer is not None:
            self.explorer.show_teachers_head(on)

    def published(self) -> dict:
        """Where this page stands in the class, as the page keeps it (static/rejoin.js sends it back)."""
        return {
            "send": self.shown.to_dict() if self.shown is not None else None,
            "own": self.before,
            "back": self.student.went_back,
            "seen": self.seen,
            "answer": {"id": self.card.question_id, "choice": self.card.own}
            if self.card.own is not None
            else None,
        }

    def _publish(self) -> None:
        """The page's copy of `published`, on its channel (widgets/channel.py `classroom`)."""
        if self.explorer is not None:
            set_changed(self.explorer.channel, classroom=json.dumps(self.published()))

    def _show(self, send: Send, back: bool) -> None:
        with pn.io.hold():
            set_changed(self.line, text=sent_line(send, back))
            set_changed(self.back, visible=back)
            set_changed(self.view, visible=True)

    def __panel__(self):
        return pn.pane.Bokeh(column(self.view, self.card.layout, sizing_mode="stretch_width"))
