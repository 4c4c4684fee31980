"""The served explorer: `panel serve app/main.py` opens it at /main, one session per browser tab."""

import sys
from pathlib import Path

# `panel serve` runs this file by path; make the repo's packages importable wherever it is started from.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import panel as pn  # noqa: E402

from app.bokeh_defaults import cache_stable_defaults  # noqa: E402
from app.catch_up import session_started  # noqa: E402
from app.pool import page_for_session  # noqa: E402
from app.served_page import serve_page  # noqa: E402
from app.serving import release_memory_when_sessions_close, tune_server  # noqa: E402
from widgets.class_link import ClassLink  # noqa: E402

tune_server()
session_started()  # (a process started again after a crash goes back to its priority once these stop)
cache_stable_defaults()  # once per process: serialising a page and walking its models read every default
pn.extension()
pn.state.on_session_destroyed(release_memory_when_sessions_close)
args = dict(pn.state.session_args)
explorer, page = page_for_session(args)  # built ahead when the launcher was told --expect
link = ClassLink(explorer.state, session_args=args, explorer=explorer)  # the teacher's sends reach this page
serve_page(explorer, classroom=link, page=page)
