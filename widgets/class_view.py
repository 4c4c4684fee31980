"""The class at a glance, for the teacher: who is connected, who is on the head last sent, and where each
student's query row puts its largest weight.  Redrawn in place twice a second from the class bus."""

from __future__ import annotations

import panel as pn
from bokeh.models import AdaptiveTicker, ColumnDataSource, Div, FactorRange
from bokeh.plotting import figure

from widgets.broadcast import ClassBus
from widgets.matrix_plot import titled
from widgets.style import fluid_figure

REFRESH_MS = 250  # with the processes' reports (widgets/broadcast.py HEARTBEAT), a change shows within 1 s


def counts_html(view: dict) -> str:
    n = view["students"]
    parts = [f"<b>{n}</b> student{'s' if n != 1 else ''} connected"]
    if view["on_sent"] is None:
        parts.append("no head sent yet")
    else:
        parts.append(f"<b>{view['on_sent']}</b> on the head you sent")
        parts.append(f"<b>{view['changed']}</b> changed it")
        if view.get("back"):
            parts.append(f"<b>{view['back']}</b> went back to their own")
    return " · ".join(parts)


def link_html(bus: ClassBus, view: dict) -> str:
    """The link between the server processes, in words (the client's own error goes to the server's log)."""
    if bus.local:
        return "One server process: the class is all here."
    if view["link_up"]:
        return f"Link between the server processes: up ({view['processes']} reporting)."
    return (
        '<span class="alert"><b>The link between the server processes is down</b>: Redis, which carries it, '
        "is not answering, and the launcher is starting it again. Students keep working; sends and this "
        "view come back as soon as it does.</span>"
    )


CHART_TITLE = "Each student's top key"


def chart_title(query_label: str | None) -> str:
    """The chart's subtitle (two short lines fit a phone where one long one was cut)."""
    row = f"the row of '{query_label}'" if query_label else "each query row"
    return f"where {row} puts its largest weight"


class ClassView(pn.viewable.Viewer):
    """Counts, the link's state, and a bar chart of top keys, kept current by a periodic callback."""

    def __init__(self, bus: ClassBus, order=lambda: [], also=(), **params):
        super().__init__(**params)
        self.bus = bus
        self.also = list(also)  # more of the teacher's page kept current from the same view (the question)
        bus.start()  # a teacher's page on a process without students yet (one started again) hears the class
        self.order = order  # the teacher's token labels: the bars keep the head's order
        self.counts = Div(text="", name="class-counts", styles={"font-size": "17px"})
        self.link = Div(text="", name="class-link-state")
        self.source = ColumnDataSource({"key": [], "students": []}, name="class-top-keys")
        self.chart = figure(
            x_range=FactorRange(),
            **fluid_figure(460, 230),
            toolbar_location=None,
            tools="",
            name="class-chart",
        )
        titled(self.chart, CHART_TITLE, chart_title(None))
        self.subtitle = next(t for t in self.chart.above if t.text == chart_title(None))
        self.chart.vbar(x="key", top="students", width=0.7, source=self.source, color="#3b6ea8")
        self.chart.y_range.start = 0
        self.chart.yaxis.axis_label = "students"
        self.chart.xaxis.axis_label = "key"
        self.chart.yaxis.ticker = AdaptiveTicker(min_interval=1)  # whole students
        self.chart.xgrid.grid_line_color = None
        self.shown: dict = {}
        self.refresh()
        doc = pn.state.curdoc
        if doc is not None and doc.session_context is not None:
            # From the moment the page says it is ready: Panel drops the changes made in a hold before then
            # (the page is sent the whole document when it connects), and one made after the page pulled the
            # document but before it was ready would never reach it; the next refresh writes the same text.
            pn.state.onload(lambda: self._keep_current(doc))

    def _keep_current(self, doc) -> None:
        self.refresh()
        # Bokeh's own periodic callback (runs under the document's lock, ends with the session);
        # Panel's one tracks a busy state that fails for a session whose page never connected
        doc.add_periodic_callback(self.refresh, REFRESH_MS)

    def refresh(self) -> None:
        view = self.bus.class_view(list(self.order()))
        send = self.bus.last_send
        query_label = send.params.get("query") if send else None
        with pn.io.hold():
            self.counts.text = counts_html(view)
            self.link.text = link_html(self.bus, view)
            title = chart_title(query_label)
            if self.subtitle.text != title:
                self.subtitle.text = title
            keys = list(view["top"])
            if keys != list(self.chart.x_range.factors):
                self.chart.x_range.factors = keys
            data = {"key": keys, "students": [view["top"][k] for k in keys]}
            if data != self.source.data:
                self.source.data = data
            for refresh in self.also:
                refresh(view)
        self.shown = view

    def __panel__(self):
        return pn.Column(pn.pane.Bokeh(self.counts), pn.pane.Bokeh(self.chart), pn.pane.Bokeh(self.link))
