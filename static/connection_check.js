// A served page whose websocket the server refuses (an address it does not accept as an origin) or that
// never connects would stay blank: Bokeh draws the page only once its websocket is open. Say so in words
// instead, with what to ask the teacher. Runs before Bokeh opens its websocket; watches every one it opens.
(function () {
  const WAIT_MS = 15000;  // a first page on a busy classroom server can take several seconds
  const Native = window.WebSocket;
  let opened = false;

  function say() {
    if (opened || document.getElementById("attn-no-connection")) return;
    const host = window.location.host;
    const box = document.createElement("div");
    box.id = "attn-no-connection";
    box.setAttribute("role", "alert");
    box.className = "no-connection";
    box.innerHTML =
      "<h2>This page cannot connect to the classroom server</h2>" +
      "<p>The page loaded, but the server did not accept its live connection under the address <b></b>, " +
      "so the head cannot be shown.</p>" +
      "<p>Ask your teacher for the address the classroom launcher printed (the one that starts with " +
      "<code>http://</code> and numbers) and open that one instead, or ask them to restart it with " +
      "<code>--origin</code> and the address you used.</p>";
    box.querySelector("b").textContent = host;
    const body = document.body || document.documentElement;
    body.classList.remove("pn-loading");  // Panel's loading spinner would grey the message out
    body.prepend(box);
  }

  function hide() {
    const box = document.getElementById("attn-no-connection");
    if (box) box.remove();
  }

  function Watched(url, protocols) {
    const ws = protocols === undefined ? new Native(url) : new Native(url, protocols);
    let open = false;
    ws.addEventListener("open", () => { open = opened = true; hide(); });
    ws.addEventListener("close", () => {
      if (!open && !opened) say();
      else if (open && window.Rejoin) window.Rejoin.closed(); // static/rejoin.js: lost after it connected
    });
    return ws;
  }
  Watched.prototype = Native.prototype;
  for (const k of ["CONNECTING", "OPEN", "CLOSING", "CLOSED"]) Watched[k] = Native[k];
  window.WebSocket = Watched;
  setTimeout(() => { if (!opened) say(); }, WAIT_MS);
})();
