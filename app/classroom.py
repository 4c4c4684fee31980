"""Serve the explorer to a classroom: `python -m app.classroom [--port 5006] [--processes N] ...`.

It runs `panel serve app/main.py` with the flags a teacher needs and prints the
command and the address students should open:

* ``--allow-websocket-origin`` for localhost, 127.0.0.1 and this machine's
  hostname on the port, plus every ``--origin`` given (add the address
  students type if it is an IP address or a DNS alias: ``--origin 192.168.1.20:5006``);
* ``--index main`` so that ``/`` is the explorer itself, and ``--admin`` for
  Panel's live admin page at ``/admin`` (sessions, CPU, memory, log);
* ``--keep-alive`` pings so that idle classroom Wi-Fi and proxies keep the
  websocket open, ``--check-unused-sessions`` / ``--unused-session-lifetime`` so
  that closed tabs give their memory back but a laptop that slept for a while
  still finds its session, and a long ``--session-token-expiration`` so that the
  page's token is still accepted when that laptop reconnects;
* ``--global-loading-spinner`` while the page loads;
* ``--setup app/classroom.py``: in the server, this same file turns on
  TCP_NODELAY for every websocket (-40 ms per move, see ``set_tcp_nodelay``), sets
  ``pn.config.reconnect = True`` (the browser reconnects by itself after a
  dropped connection or a sleep) and the disconnect / ready notifications;
* ``--num-procs N`` for N worker processes on one machine (Bokeh forks after
  binding the port; sessions are sticky to a process because the websocket
  stays on the connection it was opened on).

``--return-memory`` starts the server with ``PYTHONMALLOC=malloc``: it then gives
a class's memory back to the system once the class has left (within 3 % of idle,
where by default it keeps 1–2.5 MB a student for the next class), at ~30 % more
memory per session and ~10 % more CPU per move (bench/RESULTS-classroom.md).

Nothing is passed through a shell: the argv list goes to ``os.execvpe``, so
Ctrl-C stops the server directly.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app" / "main.py"
SETUP = Path(__file__).resolve()

KEEP_ALIVE_MS = 20_000  # below the usual 60 s idle timeout of proxies and Wi-Fi NAT
CHECK_UNUSED_MS = 10_000
DEFAULT_LIFETIME_MIN = 20.0  # a closed or sleeping tab keeps its session this long
TOKEN_EXPIRATION_S = 6 * 3600  # a reconnect presents the page's original token; allow a school day
# Every Python object from the C allocator, which hands freed memory back (Python's pools keep it for reuse).
RETURN_MEMORY_ENV = {"PYTHONMALLOC": "malloc"}


def server_env(return_memory: bool, expect: int = 0) -> dict[str, str]:
    """The environment a server process starts with (`expect`: explorers each process builds ahead)."""
    from app.pool import EXPECT_ENV

    return {
        **os.environ,
        **(RETURN_MEMORY_ENV if return_memory else {}),
        **({EXPECT_ENV: str(expect)} if expect else {}),
    }


def default_origins(port: int, hostname: str | None = None) -> list[str]:
    """localhost, 127.0.0.1 and this machine's hostname (no DNS lookup) on PORT."""
    hostname = hostname if hostname is not None else socket.gethostname()
    names = ["localhost", "127.0.0.1"]
    if hostname and hostname not in names:
        names.append(hostname)
    return [f"{name}:{port}" for name in names]


def normalise_origin(origin: str, port: int) -> str:
    """HOST or HOST:PORT (a scheme is dropped) as Bokeh's --allow-websocket-origin wants it."""
    origin = origin.strip()
    for scheme in ("http://", "https://", "ws://", "wss://"):
        if origin.lower().startswith(scheme):
            origin = origin[len(scheme) :]
    origin = origin.rstrip("/")
    if not origin or "/" in origin or any(c.isspace() for c in origin):
        raise ValueError(f"not a HOST[:PORT] origin: {origin!r}")
    return origin if ":" in origin.rsplit("]", 1)[-1] else f"{origin}:{port}"


def build_argv(
    port: int = 5006,
    address: str = "0.0.0.0",
    origins: list[str] | tuple[str, ...] = (),
    processes: int = 1,
    *,
    hostname: str | None = None,
    session_lifetime_min: float = DEFAULT_LIFETIME_MIN,
    admin: bool = True,
    python: str = sys.executable,
    app: Path = APP,
) -> list[str]:
    """The `panel serve` command line, as a list (it is never run through a shell)."""
    if not 1 <= processes <= 64:
        raise ValueError("processes must be between 1 and 64")
    allowed: list[str] = []
    for origin in [*default_origins(port, hostname), *(normalise_origin(o, port) for o in origins)]:
        if origin not in allowed:
            allowed.append(origin)
    argv = [python, "-m", "panel", "serve", str(app), "--port", str(port), "--address", address]
    for origin in allowed:
        argv += ["--allow-websocket-origin", origin]
    argv += [
        "--index",
        app.stem,
        "--keep-alive",
        str(KEEP_ALIVE_MS),
        "--check-unused-sessions",
        str(CHECK_UNUSED_MS),
        "--unused-session-lifetime",
        str(int(session_lifetime_min * 60_000)),
        "--session-token-expiration",
        str(TOKEN_EXPIRATION_S),
        "--global-loading-spinner",
        "--setup",
        str(SETUP),
        "--num-procs",
        str(processes),
    ]
    if admin:
        argv += ["--admin"]
    return argv


def student_url(port: int, hostname: str | None = None) -> str:
    return f"http://{hostname or socket.gethostname()}:{port}/"


def parse_args(args=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m app.classroom", description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, default=5006)
    p.add_argument("--address", default="0.0.0.0", help="interface to listen on (0.0.0.0 = every one)")
    p.add_argument(
        "--origin",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="another address students use to reach this machine (an IP, a DNS alias, a proxy); repeatable",
    )
    p.add_argument("--processes", type=int, default=1, help="worker processes (about 1 per core)")
    p.add_argument(
        "--session-lifetime",
        type=float,
        default=DEFAULT_LIFETIME_MIN,
        metavar="MINUTES",
        help="how long a disconnected session (closed tab, sleeping laptop) is kept",
    )
    p.add_argument("--no-admin", action="store_true", help="leave out the /admin page")
    p.add_argument(
        "--return-memory",
        action="store_true",
        help="give a class's memory back to the system after it leaves (~30%% more memory a session, "
        "~10%% more CPU a move)",
    )
    p.add_argument(
        "--expect",
        type=int,
        default=0,
        metavar="N",
        help="students expected: each process builds N pages ahead while idle, so a class arriving at once "
        "is not kept waiting (~2 MB of memory each)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the command and exit")
    return p.parse_args(args)


def main(args=None) -> None:
    ns = parse_args(args)
    try:
        argv = build_argv(
            ns.port,
            ns.address,
            ns.origin,
            ns.processes,
            session_lifetime_min=ns.session_lifetime,
            admin=not ns.no_admin,
        )
    except ValueError as exc:
        sys.exit(f"app.classroom: {exc}")
    prefix = [f"{k}={v}" for k, v in RETURN_MEMORY_ENV.items()] if ns.return_memory else []
    print("Running:", " ".join(prefix + argv), flush=True)
    print(f"Students open: {student_url(ns.port)}", flush=True)
    if not ns.no_admin:
        print(f"Teacher's admin page: http://localhost:{ns.port}/admin", flush=True)
    print("Students reaching this machine by an IP address need --origin IP:PORT.", flush=True)
    if ns.dry_run:
        return
    os.chdir(ROOT)
    os.execvpe(argv[0], argv, server_env(ns.return_memory, ns.expect))


def configure_server() -> None:
    """Run by `panel serve --setup` in each server process, before any session."""
    import panel as pn

    sys.path.insert(0, str(ROOT))  # --setup runs this file by path
    from app.serving import tune_server

    tune_server()
    pn.config.reconnect = True  # the browser reconnects by itself after a drop or a sleep
    pn.config.disconnect_notification = "Lost the connection to the server; reconnecting…"
    pn.config.ready_notification = ""
    from app.pool import pool

    if pool() is not None:  # --expect N: start building pages ahead as soon as the server runs
        pool().start()


if __name__ == "panel_setup_module":  # the name `panel serve --setup` runs this file under
    configure_server()
elif __name__ == "__main__":
    main()
