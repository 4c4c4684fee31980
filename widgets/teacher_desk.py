"""The teacher's desk above the explorer: the students' address as a QR code, "send this head to every
student", and the class at a glance.

Like a student's page (widgets/class_link.py), the teacher's page keeps its own copy of where the class
stands (`published`: the last send), so that it comes back as it was should its server process die: the
send is kept for latecomers and the counts even by a server process started afresh.
"""

from __future__ import annotations

import html
import json
import time

import panel as pn
from bokeh.models import Div

from widgets import qr_code as qr
from widgets.broadcast import ClassBus, Send, class_bus, read_question_message
from widgets.class_link import came_back
from widgets.class_question_view import QuestionDesk
from widgets.class_view import ClassView
from widgets.style import FIGURE_MIN_WIDTH
from widgets.url_state import encode

CONFIRM_MS = 1500  # a send through Redis comes back to this process well within this


class TeacherDesk(pn.viewable.Viewer):
    def __init__(
        self, state, student_url: str, bus: ClassBus | None = None, session_args=None, channel=None, **params
    ):
        super().__init__(**params)
        self.state = state
        self.channel = channel  # the page's channel (widgets/channel.py): where it keeps the class's state
        self.bus = bus or class_bus()
        resumed = came_back(session_args)
        if resumed is not None and resumed.get("last"):
            try:
                self.bus.remember(Send.from_dict(resumed["last"]))
            except (ValueError, KeyError, TypeError):
                pass  # a copy that does not read: the class goes on without it
        if resumed is not None and resumed.get("question"):
            try:
                self.bus.remember_question(read_question_message(resumed["question"]))
            except (ValueError, KeyError, TypeError):
                pass
        self.student_url = student_url
        self.send_button = pn.widgets.Button(
            label="Send this head to every student", color="primary", height=44, width=300
        )
        self.send_button.on_click(lambda event: self.send())
        self.status = Div(text="", name="send-status")  # Bokeh's: see widgets/class_link.py
        last = self.bus.last_send
        if last is not None:
            self.status.text = f"Last sent at {time.strftime('%H:%M:%S', time.localtime(last.at))}."
        self._publish()
        self.question_desk = QuestionDesk(self.bus, state)  # issue 24 item 3: the class answers a question
        self.class_view = ClassView(
            self.bus, order=lambda: self.state.labels, also=[self.question_desk.refresh, self._keep_question]
        )
        self.qr = pn.pane.HTML(
            f'<figure class="students-address">{qr.svg(student_url, scale=9)}'
            f"<figcaption>Students open <b>{html.escape(student_url)}</b></figcaption></figure>",
            name="students-qr",
            stylesheets=["figure { margin: 0 0 8px; } svg { max-width: 100%; height: auto; }"],  # a phone
        )

    def send(self) -> None:
        if not self.bus.link_up:
            self.status.text = (
                '<span class="alert">Not sent: the link between the server processes is down. '
                "Try again once it is back.</span>"
            )
            return
        sent = self.bus.send(encode(self.state))
        doc = pn.state.curdoc
        if self.bus.local or doc is None or doc.session_context is None:
            self._confirm(sent)
        else:  # through Redis: the send is confirmed when it comes back to this process
            self.status.text = "Sending…"
            doc.add_timeout_callback(lambda: self._confirm(sent), CONFIRM_MS)

    def published(self) -> dict:
        """Where the class stands, as the teacher's page keeps it (static/rejoin.js sends it back)."""
        last = self.bus.last_send
        return {"last": last.to_dict() if last is not None else None, "question": self.bus.question}

    def _publish(self) -> None:
        if self.channel is not None:
            self.channel.classroom = json.dumps(self.published())

    def _keep_question(self, view) -> None:
        """The page's copy of the class's question follows the bus (a question asked, revealed, closed)."""
        if self.channel is not None and self._kept_question is not self.bus.question:
            self._kept_question = self.bus.question
            self._publish()

    _kept_question = None

    def _confirm(self, sent) -> None:
        if self.bus.last_send is not None and self.bus.last_send.id == sent.id:
            when = time.strftime("%H:%M:%S", time.localtime(sent.at))
            self.status.text = f"Sent at {when} to every connected student; the counts say who has it."
            self._publish()
        else:
            self.status.text = (
                '<span class="alert">Not sent: the link between the server processes went down. '
                "Try again once it is back.</span>"
            )

    def __panel__(self):
        return pn.Row(
            self.qr,
            pn.Column(
                pn.pane.Markdown(
                    "### The class\nSet up a head below, then send it: every student's page loads it, "
                    "with a button back to their own."
                ),
                self.send_button,
                pn.pane.Bokeh(self.status),
                self.class_view,
                # under the class view, not a column of its own: Panel adds up a row's children's least
                # widths, and two columns of 280 made the page wider than a phone
                pn.pane.Bokeh(self.question_desk.layout),
                sizing_mode="stretch_width",
                min_width=FIGURE_MIN_WIDTH,
                max_width=620,
            ),
            css_classes=["teacher-desk"],
            sizing_mode="stretch_width",
            styles={"flex-wrap": "wrap", "gap": "0 18px"},  # the class under the code on a narrow page
        )
