"""A student's end of the class: heads the teacher sends load into this page, with one click back.

When the teacher sends a head, the page loads it (every input, through the link codec of
widgets/url_state.py) and says so in a line above the explorer; "Back to my head" puts back exactly what
the student had before.  A student who opens the bare address after a send starts on the last head
sent; a link that carries its own head (a shared or reloaded link) keeps it.
"""

from __future__ import annotations

import html
import time
from functools import partial

import panel as pn
import param
from bokeh.layouts import row
from bokeh.models import Button, Div
from panel.io.state import set_curdoc

from widgets.broadcast import ClassBus, Send, Student, class_bus
from widgets.controls import set_changed
from widgets.state import HeadState
from widgets.url_state import apply_params, encode

HEAD_PARAMS = frozenset(encode(HeadState()))  # every parameter of a link that describes the head


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


class ClassLink(pn.viewable.Viewer):
    """The line about the teacher's last send and the way back; joins the class bus for its session."""

    def __init__(self, state, bus: ClassBus | None = None, session_args: dict | None = None, **params):
        super().__init__(**params)
        self.state = state
        self.bus = bus or class_bus()
        self.doc = pn.state.curdoc
        self.before: dict | None = None  # the student's own head, kept while a sent one is on show
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
        last = self.bus.last_send
        if last is not None and not brings_a_head(session_args or {}):
            load_head(state, last.params)
            self.student.received()
            self._show(last, back=False)
        self.bus.join(self.student)
        if self.doc is not None and hasattr(self.doc, "on_session_destroyed"):
            self.doc.on_session_destroyed(lambda context: self.bus.leave(self.student))

    def _connected(self) -> bool:
        context = getattr(self.doc, "session_context", None)
        session = getattr(context, "_session", None)
        return session is None or session.connection_count > 0

    def _deliver(self, send: Send) -> None:
        """Called by the bus on the server's loop: apply the send inside this session's document lock."""
        if self.doc is not None and getattr(self.doc, "session_context", None) is not None:
            self.doc.add_next_tick_callback(partial(self.receive, send))
        else:
            self.receive(send)

    def receive(self, send: Send) -> None:
        # The bus calls from its own asyncio task, whose context still names the document of the session
        # that started it as Panel's current one: without this, pn.io.hold() held that other document
        # and this page's changes went out one PATCH-DOC message each (py-spy, bench/bench_class.py).
        with set_curdoc(self.doc), pn.io.hold():
            if self.before is None:  # a second send keeps the head the student had before the first
                self.before = encode(self.state)
            load_head(self.state, send.params)
            self.student.received()
            self._show(send, back=True)

    def go_back(self) -> None:
        if self.before is None:
            return
        load_head(self.state, self.before)
        self.before = None
        self.student._changed()
        with pn.io.hold():
            self.back.visible = False
            self.line.text = "Back on your own head. The teacher's head comes back with the next send."

    def _show(self, send: Send, back: bool) -> None:
        with pn.io.hold():
            set_changed(self.line, text=sent_line(send, back))
            set_changed(self.back, visible=back)
            set_changed(self.view, visible=True)

    def __panel__(self):
        return pn.pane.Bokeh(self.view)
