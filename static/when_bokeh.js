// whenBokeh(install): run `install` once BokehJS is on the page, for the scripts that patch it
// (static/bokeh_patch.js, static/send_latest.js). Loaded before them wherever they are: the served page,
// the static export, the notebook explorer.
//
// BokehJS may be there already (it came earlier in the page), or come later in a page still loading
// (Bokeh renders its documents on DOMContentLoaded, so installing then is early enough; a page that
// renders one sooner, as the static export's embed does, first calls whenBokeh.now()), or, in a
// notebook, be loaded by another output of the same cell after this script ran: then it is looked for
// every 50 ms, for a minute at most.
(function (root) {
  if (typeof root.whenBokeh === "function") {
    return;  // a page with two explorers (or a notebook run twice) defines it once
  }
  const ready = () => root.Bokeh && root.Bokeh.require;
  const waiting = [];  // installs waiting for DOMContentLoaded, each run once (now() or the event)
  root.whenBokeh = function whenBokeh(install) {
    if (ready()) {
      install();
    } else if (document.readyState === "loading") {
      let done = false;
      const once = () => {
        if (!done) {
          done = true;
          install();
        }
      };
      waiting.push(once);
      document.addEventListener("DOMContentLoaded", once, {once: true});
    } else {
      const started = Date.now();
      const wait = setInterval(() => {
        if (ready()) {
          clearInterval(wait);
          install();
        } else if (Date.now() - started > 60000) {
          clearInterval(wait);
        }
      }, 50);
    }
  };
  // Runs the installs still waiting for DOMContentLoaded, if BokehJS is there: for a page that makes its
  // documents' views before that event.
  root.whenBokeh.now = function now() {
    if (ready()) {
      for (const install of waiting.splice(0)) install();
    }
  };
})(window);
