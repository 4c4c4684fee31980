"""The teacher's pages are the teacher's: Bokeh's `--auth-module` for the classroom server.

`python -m app.classroom` makes a secret key at start, hands it to every server process in the
environment (TEACHER_KEY_ENV) and prints the teacher's address with `?key=…`.  A request for the teacher
page or Panel's admin page (the page, its websocket, anything under those paths) is let through only
with that key, in the query or in the cookie set the first time the key was used; otherwise the answer
is 403 and nothing else.  Every other page (the students') needs no key.

Bokeh calls `get_user` for each page and websocket of an app; Tornado asks `get_login_url` when it
returns None, and answering that with HTTPError(403) ends the request there: no redirect, no page.
Panel's own WSHandler refuses such a websocket with 403 before the handshake.
"""

from __future__ import annotations

import hmac
import os

from tornado.web import HTTPError

TEACHER_KEY_ENV = "ATTN_TEACHER_KEY"
STUDENT_URL_ENV = "ATTN_STUDENT_URL"  # the address the launcher printed for the students (for the QR code)
COOKIE = "attn_teacher_key"
TEACHER_PATHS = ("/teacher", "/admin")  # the teacher page and Panel's admin page, each with its sub-paths
STUDENT = "student"
TEACHER = "teacher"


def is_teachers(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in TEACHER_PATHS)


def key_matches(given: str | None, key: str | None) -> bool:
    return bool(given) and bool(key) and hmac.compare_digest(given.encode(), key.encode())


def get_user(request_handler):
    """Who is asking: STUDENT for the students' pages, TEACHER with the key, None (→ 403) otherwise."""
    path = request_handler.request.path
    if not is_teachers(path):
        return STUDENT
    key = os.environ.get(TEACHER_KEY_ENV)
    given = request_handler.get_argument("key", None)
    if key_matches(given, key):
        if request_handler.get_cookie(COOKIE) != given:  # the page's websocket and reloads then carry it
            request_handler.set_cookie(COOKIE, given, path="/", httponly=True, samesite="Strict")
        return TEACHER
    if key_matches(request_handler.get_cookie(COOKIE), key):
        return TEACHER
    return None


def get_login_url(request_handler):
    """Reached only when get_user said no: there is no login page, the answer is 403."""
    raise HTTPError(403)
