/*
 * A served page that loses its server says so, keeps the student's work, and comes back by itself.
 *
 * When the page's websocket closes (its server process died, the launcher was restarted, the Wi-Fi
 * dropped), BokehJS tells the document (its `connection_lost` event). From then on this script:
 *
 * - says where the page stands, in words, in a live region (role "status") at the foot of the page, at
 *   once and again when it is back;
 * - leaves the student's own moves to static/explorer_page.js `follow`, which keeps drawing the token
 *   sliders, the query and the switches from the page's own state; what only the server can do (presets,
 *   the editor, sends, "Back to my head") is made inert meanwhile and the message says so;
 * - opens a new session with the page's own state in its address: the head (explorer_page.js
 *   page.link()) and where it stands in the class (the JSON the server keeps on the page's channel:
 *   widgets/channel.py `classroom`), by fetching the page's own
 *   address (the server builds the session from it, as it does any link), then tears down the old
 *   document's views and embeds the new session in the same places of the page with Bokeh's public
 *   `Bokeh.embed.add_document_from_session`; moves made meanwhile are set on the new session's controls;
 * - tries again with a capped back-off for as long as the tab is open: first on its own server process
 *   (nginx routes the header X-Attn-Own, app/nginx.conf.template), so that the students of a process
 *   that died come back to it once the launcher has started it again rather than all landing on the
 *   process that kept its own students working, then, after OWN_PROCESS_MS, on any.
 *
 * Only public BokehJS API is used: Document.on_event, Document.get_model_by_name, Document.clear,
 * the ConnectionLost event's `connection` (its `close()` stops BokehJS's own retries), Bokeh.documents and
 * Bokeh.embed.add_document_from_session. The new session's token and the places of its roots are read from
 * the page the server answers with (Bokeh's standard embed script and the template's root placeholders:
 * readPage). The page's server runs with Panel's `reconnect` off (app/classroom.py): BokehJS's own
 * reconnection re-uses the old session's id and rebuilds it from the address the page was first opened
 * with, not from the head on screen.
 */
(function () {
  'use strict';

  // Between tries: often at first (a server process the launcher starts again answers within seconds, and
  // a refused try costs nginx nothing), then less; then every 5 s (± a quarter) while the tab is open.
  const RETRY_MS = [250, 500, 500, 500, 500, 750, 750, 1000, 1500, 2000, 3000, 5000];
  const OWN_PROCESS_MS = 8000; // the page's own server process first, for this long after the loss
  const FETCH_TIMEOUT_MS = 45000; // a class arriving at once can keep a session waiting a while
  const BACK_SHOWN_MS = 8000;

  const LOST = 'Lost the connection to the server; reconnecting. Your moves are kept and drawn here; ' +
    'presets, edits and sends wait until it is back.';
  const BACK = 'Connected again. The page is as you left it.';
  const KEY_REFUSED = 'This page cannot reconnect: the server no longer accepts its key. Open the ' +
    "teacher's address the classroom launcher printed.";

  const watched = new WeakSet();
  let away = null; // while disconnected: { doc, since, attempt, timer, trying }
  const stats = { lost: 0, back: 0, attempts: 0, failures: [], events: [] }; // for tests and benchmarks

  // --- saying where the page stands ----------------------------------------------------------------

  function region() {
    let box = document.getElementById('attn-connection');
    if (!box && document.body) {
      box = document.createElement('div');
      box.id = 'attn-connection';
      box.className = 'connection-status';
      box.setAttribute('role', 'status');
      box.setAttribute('aria-live', 'polite');
      box.innerHTML = '<span class="words"></span> <span class="detail" aria-hidden="true"></span>';
      document.body.appendChild(box);
    }
    return box;
  }

  let hideTimer = null;
  function say(words, kind, detail) {
    const box = region();
    if (!box) return;
    clearTimeout(hideTimer);
    box.dataset.state = kind;
    if (box.querySelector('.words').textContent !== words) box.querySelector('.words').textContent = words;
    box.querySelector('.detail').textContent = detail || '';
    if (kind === 'back') hideTimer = setTimeout(() => say('', 'connected'), BACK_SHOWN_MS);
  }

  // What only the server can do waits while the page is away (and says so): the preset box, the reset
  // button, the class line, the editor and the figures below it, the teacher's desk.
  const INERT_NAMES = ['preset', 'reset'];
  const INERT_AREAS = ['.area-class', '.area-bottom'];
  function inert(doc, on) {
    document.body.classList.toggle('attn-away', on);
    for (const selector of INERT_AREAS) {
      for (const el of document.querySelectorAll(selector)) el.inert = on;
    }
    if (!window.Bokeh || !Bokeh.index) return;
    for (const name of INERT_NAMES) {
      const model = modelNamed(doc, name);
      const view = model && Bokeh.index.find_one(model);
      if (view && view.el) view.el.inert = on;
    }
  }

  // --- the page's own state ----------------------------------------------------------------------------

  function modelNamed(doc, name) {
    try {
      return doc.get_model_by_name(name);
    } catch (err) { // several models of that name: not one of ours
      return null;
    }
  }

  const followPage = (doc) => (window.HeadExplorerPage ? HeadExplorerPage.pages.find((p) => p.doc === doc && p.served) : null);

  /** Where the page stands in the class, as the server keeps it on the page's channel
   * (widgets/channel.py `classroom`). */
  function classState(doc) {
    const channel = modelNamed(doc, 'head-channel');
    try {
      const state = JSON.parse(channel ? channel.classroom : '{}');
      return state && typeof state === 'object' ? state : {};
    } catch (err) { // a copy that does not read: the page comes back as a new one would
      return {};
    }
  }

  /** The page's head as link parameters: what it draws (follow), else its address (which the server
   * keeps current when a slider is let go). */
  function headParams(doc) {
    const page = followPage(doc);
    const link = page && page.link ? page.link() : null;
    return link || Object.fromEntries(new URLSearchParams(window.location.search));
  }

  function rejoinAddress(head, cls) {
    const params = new URLSearchParams(head);
    params.delete('key');
    params.set('class', JSON.stringify(cls)); // widgets/class_link.py CAME_BACK
    return window.location.pathname + '?' + params.toString();
  }

  /** Every change of what follow draws (the token sliders, the query, the switches) from now on, by model
   * name; the newest of each. */
  function recordMoves(doc) {
    const moves = new Map();
    const page = followPage(doc);
    for (const [model, attr] of page && page.controls ? page.controls() : []) {
      model.connect(model.properties[attr].change, () => {
        moves.set(`${model.name} ${attr}`, [model.name, attr, model[attr]]);
      });
    }
    return () => [...moves.values()];
  }

  // --- a new session ----------------------------------------------------------------------------------

  /** The new session's render item (token, roots) and its root placeholders, in the template's order,
   * from the page the server answered with. */
  function readPage(html) {
    const found = html.match(/render_items\s*=\s*(\[.*\]);\s*$/m);
    if (!found) throw new Error('the answer is not a served page');
    const item = JSON.parse(found[1])[0];
    const parsed = new DOMParser().parseFromString(html, 'text/html');
    const slots = [...parsed.querySelectorAll('[data-root-id]')].map((el) => ({
      id: el.id, root: el.getAttribute('data-root-id'),
    }));
    if (!item || !item.token || !item.root_ids || item.root_ids.length !== slots.length) {
      throw new Error('the answer is not a served page');
    }
    return { item, slots };
  }

  function websocketUrl() {
    const protocol = window.location.protocol === 'https:' ? 'wss:' : 'ws:';
    return `${protocol}//${window.location.host}${window.location.pathname.replace(/\/+$/, '')}/ws`;
  }

  /** Embed the new session in new placeholders beside the old ones (hidden until its views are made),
   * then take the old document's views away and show the new. The old views stay until the new session
   * is there, so a server that fails again meanwhile leaves the page as it was. */
  async function swap(oldDoc, page, moves) {
    const olds = [...document.querySelectorAll('[data-root-id]')].filter((el) => !el.dataset.attnNew);
    if (olds.length !== page.slots.length) throw new Error('the new page has other parts');
    const fresh = page.slots.map((slot, k) => {
      const el = document.createElement('div');
      el.id = slot.id;
      el.dataset.rootId = slot.root;
      el.dataset.attnNew = '1';
      el.style.display = 'none';
      olds[k].before(el);
      return el;
    });
    const byId = new Map(page.slots.map((slot, k) => [slot.root, fresh[k]]));
    const roots = page.item.root_ids.map((id) => byId.get(id));
    let views;
    try {
      views = await Bokeh.embed.add_document_from_session(websocketUrl(), page.item.token, document.body, roots, false);
    } catch (err) {
      for (const el of fresh) el.remove();
      throw err;
    }
    const newDoc = views.roots.length ? views.roots[0].model.document : null;
    if (!newDoc) {
      for (const el of fresh) el.remove();
      throw new Error('the new session has no views');
    }
    const old = followPage(oldDoc);
    if (old && old.stop) old.stop();
    oldDoc.clear({ sync: false }); // its views go with its roots (Bokeh's embedding removes them)
    const k = Bokeh.documents.indexOf(oldDoc);
    if (k >= 0) Bokeh.documents.splice(k, 1);
    for (const el of olds) el.remove();
    for (const el of fresh) {
      el.style.display = 'contents';
      delete el.dataset.attnNew;
    }
    // Moved while the new session was made: moved again, once the page has told the server it is ready
    // (Panel sends nothing of a change made before then, and its answer would be lost).
    const replay = () => {
      for (const [name, attr, value] of moves()) {
        const model = modelNamed(newDoc, name);
        if (model && JSON.stringify(model[attr]) !== JSON.stringify(value)) model[attr] = value;
      }
    };
    if (newDoc.is_idle) replay(); // (ready already: its views were all made while hidden)
    else newDoc.on_event('document_ready', replay);
    return newDoc;
  }

  // --- losing the server and coming back ----------------------------------------------------------------

  function lost(doc, event) {
    if (away !== null) return;
    const connection = event && event.connection && event.connection.deref ? event.connection.deref() : null;
    if (connection && typeof connection.close === 'function') {
      try { connection.close(); } catch (err) { /* already closed */ }
    }
    stats.lost += 1;
    stats.events.push({ kind: 'lost', at: Date.now() });
    away = { doc, since: Date.now(), attempt: 0, timer: null, trying: false };
    say(LOST, 'lost');
    inert(doc, true);
    schedule();
  }

  function schedule() {
    const base = RETRY_MS[Math.min(away.attempt, RETRY_MS.length - 1)];
    const wait = Math.round(base * (0.75 + 0.5 * Math.random())); // a class's pages do not all come at once
    clearTimeout(away.timer);
    away.timer = setTimeout(attempt, wait);
    if (away.attempt > 0 && !away.refused) say(LOST, 'lost', `Trying again in ${Math.max(1, Math.round(wait / 1000))} s.`);
  }

  async function attempt() {
    if (away === null || away.trying) return;
    away.trying = true;
    away.attempt += 1;
    stats.attempts += 1;
    const { doc } = away;
    const moves = recordMoves(doc);
    const own = Date.now() - away.since < OWN_PROCESS_MS;
    const controller = new AbortController();
    const timeout = setTimeout(() => controller.abort(), FETCH_TIMEOUT_MS);
    try {
      const answer = await fetch(rejoinAddress(headParams(doc), classState(doc)), {
        headers: own ? { 'X-Attn-Own': '1' } : {}, cache: 'no-store', credentials: 'same-origin',
        signal: controller.signal,
      });
      if (answer.status === 403) {
        away.refused = true;
        say(KEY_REFUSED, 'lost');
      }
      if (!answer.ok) throw new Error(`the server answered ${answer.status}`);
      const newDoc = await swap(doc, readPage(await answer.text()), moves);
      away = null;
      stats.back += 1;
      stats.events.push({ kind: 'back', at: Date.now() });
      inert(newDoc, false);
      watch(newDoc);
      say(BACK, 'back');
    } catch (err) {
      stats.failures.push(String(err && err.message ? err.message : err));
      if (stats.failures.length > 20) stats.failures.shift();
      if (away !== null) {
        away.trying = false;
        schedule();
      }
    } finally {
      clearTimeout(timeout);
    }
  }

  /** Look after a document's connection (app/served_page.py calls this once its views are made). */
  function watch(doc) {
    if (!doc || watched.has(doc)) return;
    watched.add(doc);
    region();
    doc.on_event('connection_lost', (_doc, event) => lost(doc, event));
  }

  // A connection lost before its page was ready (static/connection_check.js sees every websocket close):
  // the document's own event came before `watch`, so the page is looked after from here.
  let leaving = false;
  window.addEventListener('beforeunload', () => { leaving = true; });
  function closed() {
    setTimeout(() => {
      if (leaving || away !== null || !window.Bokeh || !Bokeh.documents) return;
      const doc = Bokeh.documents.find((d) => !watched.has(d));
      if (doc) {
        watch(doc);
        lost(doc, null);
      }
    }, 1000);
  }

  // A laptop that wakes up or finds its network again need not wait for the next try.
  const soon = () => { if (away !== null && !away.trying) { clearTimeout(away.timer); attempt(); } };
  window.addEventListener('online', soon);
  document.addEventListener('visibilitychange', () => { if (document.visibilityState === 'visible') soon(); });

  window.Rejoin = { watch, closed, stats, get away() { return away !== null; }, readPage, classState };
})();
