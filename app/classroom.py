"""Serve the explorer to a classroom: `python -m app.classroom [--port 5006] [--processes N] ...`.

It runs `panel serve app/main.py` with the flags a teacher needs and prints the
command and the address students should open:

* ``--allow-websocket-origin`` for localhost, 127.0.0.1, this machine's
  hostname and every address of its network interfaces (app/addresses.py) on
  the port, plus every ``--origin`` given (a DNS alias, a proxy's name);
* ``--index main`` so that ``/`` is the explorer itself; ``/teacher``, the
  teacher's page (app/teacher.py: send a head to the class, the class at a
  glance, the students' address as a QR code), and ``--admin`` for Panel's live
  admin page at ``/admin`` (sessions, CPU, memory, log), both only with the key
  made at start (``--auth-module app/teacher_access.py``);
* ``--keep-alive`` pings so that idle classroom Wi-Fi and proxies keep the
  websocket open, ``--check-unused-sessions`` / ``--unused-session-lifetime`` so
  that closed tabs give their memory back but a laptop that slept for a while
  still finds its session, and a long ``--session-token-expiration`` so that the
  page's token is still accepted when that laptop reconnects;
* ``--global-loading-spinner`` while the page loads;
* ``--setup app/classroom.py``: in the server, this same file turns on
  TCP_NODELAY for every websocket (-40 ms per move, see ``set_tcp_nodelay``) and
  leaves reconnecting to the page (static/rejoin.js: after a dropped connection, a
  sleep or a server process that died, it opens a new session with its own state);
* one server process per core by default (``--processes N`` to choose; at most
  AUTO_MAX_PROCESSES when chosen for you).  With more than one, the launcher runs
  each `panel serve` on a loopback port behind nginx on the students' port
  (app/run_cluster.py): a page's websocket must reach the process that built its
  session (Bokeh's own ``--num-procs`` lets the kernel pick a process for each
  connection, and half the websockets then built their session a second time),
  and nginx's cookie keeps them together.  It also starts a private redis-server on
  loopback, through which the teacher's sends and the class view reach every process
  (widgets/broadcast.py).  Without nginx or redis-server (setup.sh installs
  both) it serves from one process.  Whatever stops is started again
  (app/supervise.py); Ctrl-C stops everything together.

``--return-memory`` starts the server with ``PYTHONMALLOC=malloc``: it then gives
a class's memory back to the system once the class has left (within 3 % of idle,
where by default it keeps 1–2.5 MB a student for the next class), at ~30 % more
memory per session and ~10 % more CPU per move (bench/RESULTS-classroom.md).

Nothing is passed through a shell: the argv list goes to a child process the
launcher looks after, and Ctrl-C (or SIGTERM) stops it.
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import socket
import subprocess
import sys
from pathlib import Path

from app import addresses as addr
from widgets import qr_code as qr

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app" / "main.py"
TEACHER_APP = ROOT / "app" / "teacher.py"  # issue 15: the teacher's page and its key
TEACHER_ACCESS = ROOT / "app" / "teacher_access.py"
SETUP = Path(__file__).resolve()

AUTO_MAX_PROCESSES = 4  # one process per core, up to this many, unless --processes says otherwise
KEEP_ALIVE_MS = 20_000  # below the usual 60 s idle timeout of proxies and Wi-Fi NAT
CHECK_UNUSED_MS = 10_000
DEFAULT_LIFETIME_MIN = 20.0  # a closed or sleeping tab keeps its session this long
TOKEN_EXPIRATION_S = 6 * 3600  # a reconnect presents the page's original token; allow a school day
# Every Python object from the C allocator, which hands freed memory back (Python's pools keep it for reuse).
RETURN_MEMORY_ENV = {"PYTHONMALLOC": "malloc"}


def server_env(return_memory: bool, expect: int = 0, **classroom) -> dict[str, str]:
    """The environment a server process starts with; `classroom` adds the teacher's key, the students'
    address, the Redis link (teacher_key=, student_url=, redis_url=) and the allowed origins (origins=, a
    list; see origin_env); `expect`: the explorers each process builds ahead (app/pool.py)."""
    from app.pool import EXPECT_ENV
    from app.teacher_access import STUDENT_URL_ENV, TEACHER_KEY_ENV
    from widgets.broadcast import REDIS_URL_ENV

    names = {"teacher_key": TEACHER_KEY_ENV, "student_url": STUDENT_URL_ENV, "redis_url": REDIS_URL_ENV}
    extra = {names[k]: v for k, v in classroom.items() if v and k in names}
    origins = origin_env(classroom.get("origins") or [])  # type: ignore[arg-type]
    ahead = {EXPECT_ENV: str(expect)} if expect else {}
    return {**os.environ, **(RETURN_MEMORY_ENV if return_memory else {}), **ahead, **extra, **origins}


def default_origins(port: int, hostname: str | None = None, addresses: list[str] | None = None) -> list[str]:
    """localhost, 127.0.0.1, this machine's hostname (no DNS lookup) and its own addresses on PORT.

    `addresses` replaces the look-up of this machine's addresses (app/addresses.py; tests pass a list)."""
    hostname = hostname if hostname is not None else socket.gethostname()
    names = ["localhost", "127.0.0.1"]
    if hostname and hostname not in names:
        names.append(hostname)
    for address in addr.own_addresses(addresses):
        if addr.host_for_url(address) not in names:
            names.append(addr.host_for_url(address))
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


def allowed_origins(port: int, origins=(), hostname: str | None = None, addresses=None) -> list[str]:
    """Every websocket origin the server accepts: the defaults, then each --origin, without repeats."""
    allowed: list[str] = []
    extra = [normalise_origin(o, port) for o in origins]
    for origin in [*default_origins(port, hostname, addresses), *extra]:
        if origin not in allowed:
            allowed.append(origin)
    return allowed


def origin_env(allowed: list[str]) -> dict[str, str]:
    """Bokeh 3.9's --allow-websocket-origin rejects a bracketed IPv6 host ("Invalid host value"), but its
    BOKEH_ALLOW_WS_ORIGIN setting is compared as given; when an IPv6 origin is allowed, that setting carries
    the whole list (it replaces the flags' list in Bokeh's check)."""
    if not any(o.startswith("[") for o in allowed):
        return {}
    return {"BOKEH_ALLOW_WS_ORIGIN": ",".join(allowed)}


def build_argv(
    port: int = 5006,
    address: str = "0.0.0.0",
    origins: list[str] | tuple[str, ...] = (),
    processes: int = 1,
    *,
    hostname: str | None = None,
    addresses: list[str] | None = None,
    session_lifetime_min: float = DEFAULT_LIFETIME_MIN,
    admin: bool = True,
    teacher: bool = True,
    python: str = sys.executable,
    app: Path = APP,
) -> list[str]:
    """The `panel serve` command line, as a list (it is never run through a shell)."""
    if not 1 <= processes <= 64:
        raise ValueError("processes must be between 1 and 64")
    argv = [python, "-m", "panel", "serve", str(app), *([str(TEACHER_APP)] if teacher else [])]
    argv += ["--port", str(port), "--address", address]
    for origin in allowed_origins(port, origins, hostname, addresses):
        if not origin.startswith("["):  # Bokeh's flag refuses IPv6; origin_env carries those
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
    if admin or teacher:  # their pages answer only with the teacher's key, which no session token holds
        from app.teacher_access import COOKIES

        argv += ["--auth-module", str(TEACHER_ACCESS), "--exclude-cookies", *COOKIES.values()]
        argv += ["--exclude-headers", "Cookie"]  # (Bokeh rebuilds it from the cookies it keeps)
    return argv


def student_url(
    port: int, hostname: str | None = None, addresses: list[str] | None = None, listen: str = "0.0.0.0"
) -> str:
    """The address to give the students: by this machine's first IP address the server answers on, else by
    host name (localhost when it answers on loopback only)."""
    own = addr.own_addresses(addresses)
    return addr.student_urls(port, own, hostname or socket.gethostname(), listen)[0]


def announce(
    port: int,
    key: str,
    admin: bool,
    addresses: list[str] | None = None,
    colour=False,
    listen: str = "0.0.0.0",
    key_kept: bool = False,
) -> str:
    """What the launcher prints for the teacher: the addresses students can reach (by IP first) with a QR
    code of the first, only those the server answers on, and the teacher's own pages with the key."""
    urls = addr.student_urls(port, addr.own_addresses(addresses), socket.gethostname(), listen)
    lines = [f"Students open: {urls[0]}"]
    lines += [f"          or: {u}" for u in urls[1:]]
    if addr.loopback(listen):
        lines.append(
            f"Listening on {listen} only: students on other machines cannot reach it "
            "(start with --address 0.0.0.0 to serve the class)."
        )
    lines += [qr.terminal_text(urls[0], colour=colour), ""]
    host = f"http://{addr.own_page_host(listen)}:{port}"
    kept = " (kept from the last start; --new-key makes a new one)" if key_kept else ""
    lines.append(f"Teacher's page (keep the key to yourself{kept}): {host}/teacher?key={key}")
    if admin:
        lines.append(f"Teacher's admin page: {host}/admin?key={key}")
    lines.append("Once opened, the key is kept in a cookie and leaves the address bar.")
    return "\n".join(lines)


KEY_FILE = "teacher-key"
STATE_DIR_ENV = "ATTN_STATE_DIR"


def state_dir() -> Path:
    """Where the launcher keeps the teacher's key between starts: $ATTN_STATE_DIR, else the user's state
    directory (XDG)."""
    if os.environ.get(STATE_DIR_ENV):
        return Path(os.environ[STATE_DIR_ENV])
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "attention-head"


def teacher_key(new: bool = False, keep: bool = True) -> tuple[str, bool]:
    """(the teacher's key, whether it was kept from an earlier start). The key is kept in a file only this
    user can read, so that a teacher's page left open comes back by itself after the launcher is started
    again (its cookie still holds the key); `new` makes and keeps a fresh one; `keep=False` (a dry run)
    writes nothing."""
    path = state_dir() / KEY_FILE
    if not new:
        try:
            key = path.read_text().strip()
            if len(key) >= 20:
                return key, True
        except OSError:
            pass
    key = secrets.token_urlsafe(16)
    if not keep:
        return key, False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(key + "\n")
    except OSError as exc:  # a read-only home: the key lasts this start only
        print(f"(the teacher's key could not be kept in {path}: {exc.strerror})", flush=True)
    return key, False


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
    p.add_argument(
        "--processes",
        type=int,
        default=0,
        help=f"server processes (default: one per core, at most {AUTO_MAX_PROCESSES}; more than one runs "
        "behind nginx)",
    )
    p.add_argument(
        "--session-lifetime",
        type=float,
        default=DEFAULT_LIFETIME_MIN,
        metavar="MINUTES",
        help="how long a disconnected session (closed tab, sleeping laptop) is kept",
    )
    p.add_argument("--no-admin", action="store_true", help="leave out the /admin page")
    p.add_argument(
        "--redis-port",
        type=int,
        default=None,
        help="with --processes N > 1: the private Redis's port on 127.0.0.1 (default: a free one)",
    )
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
        help="students expected: the server builds N pages ahead while idle (shared among its processes), so "
        "a class arriving at once is not kept waiting (~3 MB of memory each)",
    )
    p.add_argument(
        "--no-catch-up",
        action="store_true",
        help="with more than one process: one started again after a crash rebuilds its students' sessions at "
        "the normal priority (by default only on CPU the other processes leave idle, so their students do "
        "not wait behind it)",
    )
    p.add_argument(
        "--new-key",
        action="store_true",
        help="make a new teacher's key (otherwise the one from the last start is kept, so an open teacher's "
        "page comes back by itself)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the command and exit")
    return p.parse_args(args)


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def processes_to_run(requested: int, cores: int, nginx: bool, redis: bool) -> tuple[int, str]:
    """(server processes, why): `requested` when given (0: one per core, at most AUTO_MAX_PROCESSES); more
    than one needs nginx in front and Redis between them, else one."""
    if requested < 0 or requested > 64:
        raise ValueError("processes must be between 1 and 64")
    wanted = requested or min(cores, AUTO_MAX_PROCESSES)
    if wanted > 1 and not (nginx and redis):
        missing = " and ".join(name for name, ok in (("nginx", nginx), ("redis-server", redis)) if not ok)
        if requested:
            raise ValueError(f"{requested} processes need {missing} (setup.sh installs them)")
        return 1, f"one process: {missing} not installed (setup.sh installs them)"
    if wanted == 1:
        return 1, "one process" + ("" if requested else " (one core)")
    how = "" if requested else f", one per core of {cores}"
    return wanted, f"{wanted} processes behind nginx{how}"


def expect_per_process(expect: int, processes: int) -> int:
    """Pages each process builds ahead: its share of the class, and a tenth more (nginx sends each new
    student to the process with the fewest connections, so the shares come out nearly even)."""
    if expect <= 0:
        return 0
    return -(-expect * 11 // (10 * processes)) if processes > 1 else expect  # rounded up, in whole numbers


def main(args=None) -> None:
    from app.redis_server import REDIS_SERVER
    from app.run_cluster import NGINX

    ns = parse_args(args)
    try:
        processes, why = processes_to_run(
            ns.processes, cores(), Path(NGINX).exists(), Path(REDIS_SERVER).exists()
        )
        argv = build_argv(
            ns.port, ns.address, ns.origin, 1, session_lifetime_min=ns.session_lifetime, admin=not ns.no_admin
        )
    except ValueError as exc:
        sys.exit(f"app.classroom: {exc}")
    prefix = [f"{k}={v}" for k, v in RETURN_MEMORY_ENV.items()] if ns.return_memory else []
    prefix += [f"{k}={v}" for k, v in origin_env(allowed_origins(ns.port, ns.origin)).items()]
    print(f"Serving from {why}.", flush=True)
    if processes == 1:
        print("Running:", " ".join(prefix + argv), flush=True)
    else:
        here = f"--port {ns.port} --address {ns.address}"
        backend = " ".join(prefix + argv).replace(here, "--port N --address 127.0.0.1")
        print(f"Running: nginx on {ns.address}:{ns.port} in front of {processes} processes, each", flush=True)
        print(f"  {backend}", flush=True)
    # the teacher's pages answer only with it (app/teacher_access.py)
    key, kept = teacher_key(new=ns.new_key, keep=not ns.dry_run)
    tty = sys.stdout.isatty()
    print(announce(ns.port, key, not ns.no_admin, colour=tty, listen=ns.address, key_kept=kept), flush=True)
    if ns.dry_run:
        return
    os.chdir(ROOT)
    origins = allowed_origins(ns.port, ns.origin)
    expect = expect_per_process(ns.expect, processes)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    try:
        if processes == 1:
            url = student_url(ns.port, listen=ns.address)
            env = {"teacher_key": key, "student_url": url, "origins": origins}
            run_one(argv, server_env(ns.return_memory, expect, **env))
        else:
            run_behind_nginx(ns, processes, key, origins, expect)
    except KeyboardInterrupt:
        pass


def say(text: str) -> None:
    print(text, flush=True)


def run_one(argv: list[str], env: dict) -> None:
    """One `panel serve`, started again should it stop (app/supervise.py); its output is the launcher's."""
    import time

    from app.serving import stop_process
    from app.supervise import Supervised, Supervisor

    supervisor = Supervisor(say=say)
    supervisor.add(Supervised("The server process", lambda: subprocess.Popen(argv, env=env)))
    supervisor.children[0].start()
    supervisor.start()
    try:
        while (why := supervisor.why_not_serving()) is None:
            time.sleep(0.5)
        say(f"Stopping: {why}.")
    finally:
        supervisor.stop()
        stop_process(supervisor.children[0].proc)


def run_behind_nginx(ns: argparse.Namespace, processes: int, key: str, origins: list, expect: int) -> None:
    """Several processes: each `panel serve` on a loopback port, nginx on the students' port in front, a
    private Redis for the class bus (app/run_cluster.py). Whatever stops is started again (app/supervise.py):
    meanwhile the other server processes keep serving, nginx sends no new student to one that is down, and
    its students come back by themselves; without Redis students keep working, only sends and the class view
    wait for it. Ctrl-C (or SIGTERM) stops everything."""
    import time

    from app.run_cluster import cluster

    with cluster(
        processes,
        ns.port,
        listen=ns.address,
        origins=origins,
        session_lifetime_min=ns.session_lifetime,
        return_memory=ns.return_memory,
        teacher_key=key,
        student_url=student_url(ns.port, listen=ns.address),
        expect=expect,
        admin=not ns.no_admin,
        redis_port=ns.redis_port,
        say=say,
        catch_up=not ns.no_catch_up,
    ) as c:
        say(f"Class bus: redis-server on 127.0.0.1:{c['redis_port']}")
        say(f"Server logs: {c['dir']} (while it runs)")
        while (why := c["supervisor"].why_not_serving()) is None:
            time.sleep(0.5)
        say(f"Stopping: {why}.")


def configure_server() -> None:
    """Run by `panel serve --setup` in each server process, before any session."""
    import panel as pn

    sys.path.insert(0, str(ROOT))  # --setup runs this file by path
    from app.serving import tune_server

    tune_server()
    from app.bokeh_defaults import cache_stable_defaults

    cache_stable_defaults()  # before the pool builds pages ahead
    # The page reconnects by itself (static/rejoin.js: a new session built from the page's own state, its
    # message in a live region), not by BokehJS's own reconnection, which re-uses the old session's id and
    # gives up after five tries; nor with Panel's toasts.
    pn.config.reconnect = False
    pn.config.disconnect_notification = ""
    pn.config.ready_notification = ""
    from app.pool import pool

    if pool() is not None:  # --expect N: start building pages ahead as soon as the server runs
        pool().start()


if __name__ == "panel_setup_module":  # the name `panel serve --setup` runs this file under
    configure_server()
elif __name__ == "__main__":
    main()
