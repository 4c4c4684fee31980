"""Issue 6, beyond one machine: two `panel serve` backends behind nginx, opened by real Chromium pages."""

from __future__ import annotations

import pytest

from tests.conftest import NGINX


@pytest.mark.skipif(NGINX is None, reason="nginx is not installed")
def test_through_nginx_each_page_and_its_websocket_reach_one_backend(browser, tmp_path):
    """Two backends behind nginx, six students opening the page at once: each page and its websocket
    land on the same backend (the other would build the whole session a second time), the students
    spread over both backends, and every widget works."""
    from app.run_cluster import cluster

    with cluster(2, log_dir=tmp_path) as c:
        backends = {f"127.0.0.1:{port}" for port, _ in c["backends"]}
        students = []
        for _ in range(6):  # each with their own cookies; the next page loads while the last connects
            context = browser.new_context()
            page = context.new_page()
            cdp = context.new_cdp_session(page)
            cdp.send("Network.enable")
            handshakes: list[dict] = []
            cdp.on(
                "Network.webSocketHandshakeResponseReceived",
                lambda e, into=handshakes: into.append(
                    {k.lower(): v for k, v in e["response"]["headers"].items()}
                ),
            )
            response = page.goto(f"{c['url']}/main", wait_until="commit")
            students.append((context, page, response.headers["x-attn-backend"], handshakes))
        for _context, page, page_backend, handshakes in students:
            page.wait_for_selector("text=weights = [0.13, 0.56, 0.14, 0.18]", timeout=90000)
            assert page_backend in backends
            assert [h.get("x-attn-backend") for h in handshakes] == [page_backend]
            # the session is live on that backend: a change of query comes back computed
            page.evaluate("() => { Bokeh.documents[0].get_model_by_name('query').value = '1'; }")
            page.wait_for_selector("text=weights = [0.01, 0.99, 0.00, 0.00]", timeout=30000)
        assert {b for _, _, b, _ in students} == backends  # least_conn spread them over both
        for context, *_ in students:
            context.close()
    for port, _ in c["backends"]:
        assert "Traceback" not in (tmp_path / f"backend-{port}.log").read_text()
