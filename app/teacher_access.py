"""The teacher's pages are the teacher's: Bokeh's `--auth-module` for the classroom server.

`python -m app.classroom` holds a secret key (kept between starts), hands it to every server process in
the environment (TEACHER_KEY_ENV) and prints the teacher's address with `?key=…`.  A request for the
teacher page or Panel's admin page (the page, its websocket, anything under those paths) is let through
only with that key, in the query or in the cookies set the first time the key was used; otherwise the
answer is 403 and nothing else.  Every other page (the students') needs no key.

The key must not stay on the projector: the first visit with it sets the cookies (HttpOnly, so no script
reads them; SameSite=Strict; one for /teacher, one for /admin, so they never travel with a student's
page) and answers with a redirect to the same address without the key.  Keys are compared in constant
time.  The launcher also keeps these cookies out of Bokeh's session token (`--exclude-cookies`), so the
teacher's own page holds no copy of the key either.

Bokeh calls `get_user` for each page and websocket of an app; Tornado asks `get_login_url` when it
returns None, and answering that with HTTPError(403) ends the request there: no redirect, no page.
Panel's own WSHandler refuses such a websocket with 403 before the handshake.
"""

from __future__ import annotations

import hmac
import os
from urllib.parse import urlencode

from tornado.web import Finish, HTTPError

TEACHER_KEY_ENV = "ATTN_TEACHER_KEY"
STUDENT_URL_ENV = "ATTN_STUDENT_URL"  # the address the launcher printed for the students (for the QR code)
COOKIE = "attn_teacher_key"
TEACHER_PATHS = ("/teacher", "/admin")  # the teacher page and Panel's admin page, each with its sub-paths
# one cookie per path, each sent only with requests under its own path
COOKIES = {"/teacher": COOKIE, "/admin": "attn_admin_key"}
STUDENT = "student"
TEACHER = "teacher"


def is_teachers(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in TEACHER_PATHS)


def cookie_for(path: str) -> str:
    """The name of the cookie that carries the key on `path` (one of the teacher's paths)."""
    return next(name for p, name in COOKIES.items() if path == p or path.startswith(p + "/"))


def key_matches(given: str | None, key: str | None) -> bool:
    """Whether `given` is the key, in time that does not depend on how much of it is right."""
    return bool(given) and bool(key) and hmac.compare_digest(given.encode(), key.encode())


def without_key(request) -> str:
    """The request's address (path and query) without the key."""
    args = request.query_arguments
    query = [(k, v.decode("utf-8", "replace")) for k, values in args.items() if k != "key" for v in values]
    return request.path + ("?" + urlencode(query) if query else "")


def get_user(request_handler):
    """Who is asking: STUDENT for the students' pages, TEACHER with the key, None (→ 403) otherwise.
    The first visit to a teacher's page with the key in its address sets the cookies and is redirected to
    the same page without the key."""
    request = request_handler.request
    path = request.path
    if not is_teachers(path):
        return STUDENT
    key = os.environ.get(TEACHER_KEY_ENV)
    given = request_handler.get_argument("key", None)
    if given is not None:
        if not key_matches(given, key):
            return None
        for cookie_path, name in COOKIES.items():  # the page's websocket and reloads then carry it
            request_handler.set_cookie(name, given, path=cookie_path, httponly=True, samesite="Strict")
        if path in TEACHER_PATHS and request.method == "GET":
            request_handler.redirect(without_key(request))
            raise Finish()
        return TEACHER
    if key_matches(request_handler.get_cookie(cookie_for(path)), key):
        return TEACHER
    return None


def get_login_url(request_handler):
    """Reached only when get_user said no: there is no login page, the answer is 403."""
    raise HTTPError(403)
