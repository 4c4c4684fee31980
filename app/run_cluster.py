"""N `panel serve` backends on loopback behind one nginx: how app.classroom uses several cores; also alone.

    python -m app.run_cluster --processes 2 --port 5310

Starts N backends (app.classroom's command line, each on its own loopback
port, each accepting websockets whose Origin is the nginx address), with more
than one a private redis-server on loopback for the class bus (the teacher's
sends and the class view reach every backend through it), and nginx
with a private prefix in a temporary directory (config, pid file, logs, temp
files all inside it: `nginx -p DIR -c DIR/nginx.conf -g 'daemon off;'`).
Everything stops on exit, Ctrl-C or SIGTERM.  No shell is involved.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from string import Template

from app.catch_up import can_catch_up
from app.classroom import ROOT, allowed_origins, build_argv, server_env
from app.pool import EXPECT_ENV
from app.redis_server import redis_url, start_redis
from app.serving import free_port, stop_process, wait_for_http
from app.supervise import Supervised, Supervisor
from app.zygote import Forked, Zygote

TEMPLATE = Path(__file__).resolve().with_name("nginx.conf.template")
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


FAIL_TIMEOUT_S = 2  # nginx sends no new student to a backend that refused one, for this long


def upstream_name(backend: str) -> str:
    return "attn_" + "".join(c if c.isalnum() else "_" for c in backend)


def render_nginx_conf(prefix: str | Path, listen: str, backends: list[str]) -> str:
    """The template with its ${prefix}, ${listen}, ${servers}, ${pinned} and ${routes} filled in."""
    if not backends:
        raise ValueError("at least one backend is needed")
    health = f"max_fails=1 fail_timeout={FAIL_TIMEOUT_S}s"
    servers = "\n".join(f"        server {b} {health};" for b in backends)
    pinned = []
    for b in backends:
        backups = "".join(f" server {o} backup;" for o in backends if o != b)
        pinned.append(f"    upstream {upstream_name(b)} {{ server {b} {health};{backups} }}")
        pinned.append(f"    upstream {upstream_name(b)}_only {{ server {b}; }}")
    routes = []
    for b in backends:
        routes.append(f'        ":{b}" {upstream_name(b)};')
        routes.append(f'        "1:{b}" {upstream_name(b)}_only;')
    text = Template(TEMPLATE.read_text()).safe_substitute(
        prefix=str(prefix), listen=listen, servers=servers, pinned="\n".join(pinned), routes="\n".join(routes)
    )
    if "${" in text:
        raise ValueError("the nginx template has a field that was not filled in")
    return text


@contextlib.contextmanager
def cluster(
    processes: int = 2,
    port: int | None = None,
    *,
    backend_ports: list[int] | None = None,
    session_lifetime_min: float = 1.0,
    log_dir: Path | None = None,
    keep_dir: bool = False,
    return_memory: bool = False,
    teacher_key: str | None = None,
    addresses: list[str] | None = None,
    admin: bool = False,
    redis: bool | None = None,
    listen: str = "127.0.0.1",
    origins: list[str] | None = None,
    student_url: str | None = None,
    expect: int = 0,
    redis_port: int | None = None,
    supervise: bool = True,
    say=print,
    warm_starts: bool = True,
    catch_up: bool = True,
):
    """Yield a dict: url (of nginx), backends [(port, Popen)], nginx (Popen), dir, supervisor, and with
    Redis (by default when there is more than one backend: the class bus, issue 15) redis (Popen) and
    redis_port.

    nginx listens on `listen`:`port`; the backends accept websockets from `origins` (HOST:PORT, the
    addresses students reach nginx by; default: nginx's loopback names). `teacher_key` opens the backends'
    teacher and admin pages (app/teacher_access.py), `student_url` is the address the teacher's page
    shows, `expect` the pages each backend builds ahead (app/pool.py); `addresses` stands in for this
    machine's own addresses (tests). With `supervise` (the default) a backend, nginx or Redis that stops is
    started again (app/supervise.py; `say` reports it), and the dict's entries follow the new processes.
    With `warm_starts` (the default, but not with `return_memory`, whose allocator is chosen when Python
    starts) each backend is a fork of one process that has made their imports (app/zygote.py), so one that
    died serves again within a second. With `catch_up` a backend started again builds its returning students'
    sessions on idle CPU only (app/catch_up.py); it is the dict's "catch_up", read at each start."""
    port = port or free_port()
    backend_ports = backend_ports or [free_port() for _ in range(processes)]
    tmp = Path(tempfile.mkdtemp(prefix="attn-cluster-"))
    tmp.chmod(0o755)  # nginx's worker (nobody) reads and writes its temp dirs here
    logs = log_dir or tmp
    if origins is None:
        origins = [f"127.0.0.1:{port}", f"localhost:{port}", f"{socket.gethostname()}:{port}"]
    supervisor = Supervisor(say=say)
    found: dict = {"backends": [], "supervisor": supervisor, "dir": tmp, "catch_up": catch_up}
    zygote = None
    try:
        if warm_starts and not return_memory:
            try:
                ahead = {EXPECT_ENV: str(expect)} if expect else {}  # (its forks start with these built)
                zygote = found["zygote"] = Zygote(env={**os.environ, **ahead}, log=logs / "zygote.log")
            except (OSError, RuntimeError, queue.Empty) as exc:  # cold starts then, as before
                say(f"Warm starts unavailable ({exc}); server processes start from scratch")
        classroom: dict = {"teacher_key": teacher_key, "student_url": student_url}
        if redis if redis is not None else processes > 1:
            rp = found["redis_port"] = redis_port or free_port()
            bus = supervisor.add(
                Supervised(
                    "Redis (the class bus)",
                    lambda: start_redis(rp, log=logs / "redis.log"),
                    logs / "redis.log",
                    on_restart=lambda p: found.__setitem__("redis", p),
                    needed=False,  # students keep working without it; only sends and the class view wait
                )
            )
            found["redis"] = bus.start()
            classroom["redis_url"] = redis_url(rp)

        def backend_starter(bp: int):
            argv = build_argv(
                bp,
                "127.0.0.1",
                origins,
                1,
                addresses=addresses,
                session_lifetime_min=session_lifetime_min,
                admin=admin,
            )
            env = server_env(
                return_memory, expect, **classroom, origins=allowed_origins(bp, origins, addresses=addresses)
            )
            log = logs / f"backend-{bp}.log"
            log.write_text("")
            starts = [0]

            def start() -> subprocess.Popen | Forked:
                starts[0] += 1
                # started again: its returning students' sessions built on idle CPU (app/catch_up.py)
                lower = found["catch_up"] and starts[0] > 1 and can_catch_up()
                if zygote is not None and zygote.running:
                    try:
                        return zygote.spawn(argv, env, log, catch_up=lower)
                    except RuntimeError:
                        pass  # a cold start below
                with open(log, "a") as out:
                    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)

            return start, log

        for k, bp in enumerate(backend_ports):
            start, log = backend_starter(bp)

            def follow(p: subprocess.Popen, k: int = k, bp: int = bp) -> None:
                found["backends"][k] = (bp, p)

            child = supervisor.add(Supervised(f"Server process on port {bp}", start, log, on_restart=follow))
            found["backends"].append((bp, child.start()))
        for bp, _ in found["backends"]:
            wait_for_http(f"http://127.0.0.1:{bp}/main")
        conf = tmp / "nginx.conf"
        upstream = [f"127.0.0.1:{bp}" for bp in backend_ports]
        conf.write_text(render_nginx_conf(tmp, f"{listen}:{port}", upstream))

        def start_nginx() -> subprocess.Popen:
            old = found.get("nginx")
            if old is not None:  # a master that died leaves its workers, still on the port with the old
                with contextlib.suppress(ProcessLookupError, PermissionError):  # config: they go too
                    os.killpg(old.pid, signal.SIGKILL)
            with open(logs / "nginx.stderr", "a") as err:
                return subprocess.Popen(
                    [NGINX, "-p", str(tmp), "-c", str(conf), "-g", "daemon off;"],
                    cwd=tmp,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    start_new_session=True,  # its workers in a group of their own (above)
                )

        front = supervisor.add(
            Supervised(
                "nginx",
                start_nginx,
                logs / "nginx.stderr",
                on_restart=lambda p: found.__setitem__("nginx", p),
            )
        )
        found["nginx"] = front.start()
        url = f"http://{'127.0.0.1' if listen in ('0.0.0.0', '::') else listen}:{port}"
        wait_for_http(f"{url}/main", timeout=20)
        found["url"] = url
        if supervise:
            supervisor.start()
        yield found
    finally:
        supervisor.stop()
        everything = [c.proc for c in supervisor.children if c.proc is not None]
        for p in everything:  # all at once: each backend takes a few seconds to shut down
            if p.poll() is None:
                p.terminate()
        for p in everything:
            stop_process(p)
        if found.get("nginx") is not None:  # and any worker a master killed outright left behind
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(found["nginx"].pid, signal.SIGKILL)
        if zygote is not None:
            zygote.stop()
        if not keep_dir and log_dir is None:
            shutil.rmtree(tmp, ignore_errors=True)


def main(args=None) -> None:
    p = argparse.ArgumentParser(prog="python -m app.run_cluster", description=__doc__.split("\n\n")[0])
    p.add_argument("--processes", type=int, default=2)
    p.add_argument("--port", type=int, default=5310, help="nginx's port on 127.0.0.1")
    p.add_argument("--session-lifetime", type=float, default=20.0, metavar="MINUTES")
    p.add_argument("--return-memory", action="store_true", help="as for app.classroom")
    ns = p.parse_args(args)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    key = secrets.token_urlsafe(16)  # the teacher's pages (app/teacher_access.py)
    with cluster(
        ns.processes,
        ns.port,
        session_lifetime_min=ns.session_lifetime,
        keep_dir=False,
        return_memory=ns.return_memory,
        teacher_key=key,
    ) as c:
        print(f"nginx on {c['url']}/ in front of backends {[bp for bp, _ in c['backends']]}", flush=True)
        print(f"teacher's page: {c['url']}/teacher?key={key}", flush=True)
        if c.get("redis_port"):
            print(f"class bus: redis-server on 127.0.0.1:{c['redis_port']}", flush=True)
        print(f"config and logs in {c['dir']}; Ctrl-C stops everything", flush=True)
        try:
            while (why := c["supervisor"].why_not_serving()) is None:
                time.sleep(1)
            print(f"{why}; stopping", flush=True)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
