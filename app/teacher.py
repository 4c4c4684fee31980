"""The teacher's page, served at /teacher by `python -m app.classroom` (only with the teacher's key:
app/teacher_access.py): the same explorer, plus the students' address as a QR code, "send this head to
every student" and the class at a glance."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import panel as pn  # noqa: E402

from app.served_page import serve_page  # noqa: E402
from app.serving import tune_server  # noqa: E402
from app.teacher_access import STUDENT_URL_ENV  # noqa: E402
from widgets.class_link import came_back  # noqa: E402
from widgets.explorer import HeadExplorer  # noqa: E402
from widgets.teacher_desk import TeacherDesk  # noqa: E402
from widgets.url_state import apply_params  # noqa: E402


def student_url() -> str:
    url = os.environ.get(STUDENT_URL_ENV)
    if url:
        return url
    request = pn.state.curdoc.session_context.request
    return f"http://{request.headers.get('Host', 'localhost')}/"


tune_server()
pn.extension()
args = dict(pn.state.session_args)
explorer = HeadExplorer()
if came_back(args) is not None:  # a teacher's page whose server process died comes back with its own head
    apply_params(explorer.state, args)
desk = TeacherDesk(explorer.state, student_url(), session_args=args, channel=explorer.channel)
serve_page(explorer, title="One attention head: the teacher's page", classroom=desk)
