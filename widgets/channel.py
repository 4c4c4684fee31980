"""What a served page and its server tell each other besides the figures: one declared model.

`HeadChannel` is a Bokeh `DataModel`: BokehJS makes its class from this declaration, so it has no
JavaScript of its own. Each served explorer has one (`HeadExplorer.channel`), a root of its own in the
session's document (app/served_page.py `serve_page`). Everything that travels between the page's own
JavaScript and the server, other than the Bokeh models the page shows, is a property here, written down
once with what it means; a new message is a new property, not a `tags` entry or a hidden field.

* `state`, server → page: the head the server holds, as JSON (`HeadState.as_data()`: tokens, X, the
  weights, the query, every switch, the preset, the message). Published with every change except a drag of
  a token slider (the slider itself holds that value, and a page reads it there). The page's `follow`
  (static/explorer_page.js) draws a student's own moves on top of it.
* `presses`, server → page: how many presses of the lesson's buttons (widgets/lesson_view.py: the walk's,
  Check, Reveal, Next question…) the server has applied. The page draws a press at once, on top of the
  server's state, until this count says the server has it; it changes in the same message as `state`.
* `classroom`, server → page: where the page stands in the class, as JSON, kept by the page so that it can
  come back as it was should its server process die (static/rejoin.js sends it back in the address of a
  new session: widgets/class_link.py CAME_BACK). On a student's page `ClassLink.published` (the teacher's
  send on show, the head to go back to, whether the student went back, the last send met); on the
  teacher's, `TeacherDesk.published` (the last send). "{}" on a page outside a class.
* `drawn_by`, page ↔ server: who draws a student's own moves (a token slider, the query, a switch).
  "server" until the page's `follow` is set up, which makes it "page"; the page puts it back to "server"
  should its drawing fail. While it is "page", the server applies a drag to its state but sends nothing of
  the figures for it (widgets/explorer.py), and the page draws every move; while it is "server", the page
  draws nothing and the server's answers draw every move. Setting it to "server" from the page is also how
  a test or benchmark sees the server's answers alone.
"""

from __future__ import annotations

from bokeh.core.properties import JSON, Enum, Int
from bokeh.model import DataModel

SERVER, PAGE = "server", "page"  # the values of `drawn_by`


class HeadChannel(DataModel):
    """The served page's channel to its server (see the module's docstring for each property)."""

    state = JSON(default="{}", help="the server's head, as JSON (HeadState.as_data)")
    drawn_by = Enum(SERVER, PAGE, default=SERVER, help="who draws a student's own moves")
    presses = Int(default=0, help="the lesson's button presses the server has applied")
    classroom = JSON(default="{}", help="where the page stands in the class, as JSON (static/rejoin.js)")

    def __init__(self, **kwargs):
        kwargs.setdefault("name", "head-channel")
        super().__init__(**kwargs)
