// Latest move wins at the source: a served page keeps at most one property change in flight.
//
// BokehJS 3.9 sends every change of a synced property as its own PATCH-DOC message at once
// (ClientSession._document_changed), and the server answers each with OK once it has applied it. A
// slider dragged faster than the server answers (a busy classroom server, a quick flick, a burst) so
// piled up messages at the server, each read and parsed before it could be dropped
// (bench/RESULTS-class-load.md). Here, while the server has not answered the last patch this page
// sent, a new property value is held instead: only the newest value of each (model, property) is kept,
// and they go in one patch when the answer comes. A slow drag still sends every value (each is answered
// before the next), a burst costs two round trips, and an overloaded server gets fewer, fresher values
// instead of a queue. Anything that is not a plain value (a button's event, document_ready, a new
// model) is sent at once, after the held values, so the order the server sees is the order they were
// made. The server's half (app/serving.py latest_patch_wins) stays for clients without this script.
(function sendLatest() {
  // An answer that never comes (a lost reply) must not keep the last value back for ever.
  const ANSWER_TIMEOUT_MS = 5000;

  function install() {
    let Session, Message, events;
    try {
      Session = window.Bokeh.require("client/session").ClientSession;
      Message = window.Bokeh.require("protocol/message").Message;
      events = window.Bokeh.require("document/events");
    } catch (e) {}
    const proto = Session && Session.prototype;
    if (!proto || typeof proto._document_changed !== "function" || typeof proto._handle_ok !== "function" ||
        !Message || !events || !events.ModelChangedEvent || !events.DocumentEventBatch) {
      console.warn("send_latest.js: this BokehJS has no ClientSession._document_changed; nothing patched");
      return;
    }
    if (proto._document_changed.sendsLatest) {
      return;
    }
    const original = {
      changed: proto._document_changed, ok: proto._handle_ok, error: proto._handle_error,
    };

    // Per session: the msgid awaiting its answer (null: none), the socket it went on, the held events
    // (by "model id attr" for plain values, by a fresh symbol otherwise), in the order they were made.
    const state = (session) => {
      if (session.__latest === undefined) {
        session.__latest = {awaiting: null, socket: null, timer: null, held: new Map()};
      }
      return session.__latest;
    };

    const plain = (v) => v === null || ["number", "string", "boolean"].includes(typeof v) ||
      (Array.isArray(v) && v.every((x) => x === null || ["number", "string", "boolean"].includes(typeof x)));

    function send(session, st) {
      const evs = [...st.held.values()];
      st.held.clear();
      const message = Message.create("PATCH-DOC", {}, session.document.create_json_patch(evs));
      session._connection.send(message);
      st.awaiting = message.msgid();
      st.socket = session._connection.socket;
      clearTimeout(st.timer);
      st.timer = setTimeout(() => answered(session, message.msgid()), ANSWER_TIMEOUT_MS);
    }

    function answered(session, msgid) {
      const st = state(session);
      if (st.awaiting !== msgid) {
        return;  // an answer to an older message (or one sent before this script)
      }
      st.awaiting = null;
      clearTimeout(st.timer);
      if (st.held.size > 0) {
        send(session, st);
      }
    }

    proto._document_changed = function (event) {
      // which events go to the server: as BokehJS's own _document_changed decides
      const batch = event instanceof events.DocumentEventBatch;
      const evs = (batch ? (event.sync ? event.events : []) : [event]).filter((e) => e.sync);
      if (evs.length === 0) {
        return;
      }
      const st = state(this);
      let now = false;
      for (const e of evs) {
        if (e instanceof events.ModelChangedEvent && plain(e.value)) {
          const key = `${e.model.id} ${e.attr}`;
          st.held.delete(key);  // overtaken: only the newest value goes, in the order of its making
          st.held.set(key, e);
        } else {
          st.held.set(Symbol("event"), e);
          now = true;
        }
      }
      if (st.awaiting !== null && st.socket !== this._connection.socket) {
        st.awaiting = null;  // the connection was replaced: that answer will never come
      }
      if (now || st.awaiting === null) {
        send(this, st);
      }
    };
    proto._document_changed.sendsLatest = true;
    proto._document_changed.original = original.changed;  // for bench/burst_browser.py's A/B rounds

    proto._handle_ok = function (message) {
      answered(this, message.reqid());
      return original.ok.call(this, message);
    };
    proto._handle_error = function (message) {
      answered(this, message.reqid());
      return original.error.call(this, message);
    };
  }

  whenBokeh(install); // static/when_bokeh.js: BokehJS comes later in the page
})();
