// whenBokeh(install): run `install` once BokehJS is on the page, for the scripts that patch it
// (static/bokeh_patch.js, static/send_latest.js). Loaded before them wherever they are: the served page,
// the static export, the notebook explorer.
//
// BokehJS may be there already (it came earlier in the page), or come later in a page still loading
// (the documents are rendered on DOMContentLoaded, so installing then is early enough), or, in a
// notebook, be loaded by another output of the same cell after this script ran: then it is looked for
// every 50 ms, for a minute at most.
(function (root) {
  if (typeof root.whenBokeh === "function") {
    return;  // a page with two explorers (or a notebook run twice) defines it once
  }
  const ready = () => root.Bokeh && root.Bokeh.require;
  root.whenBokeh = function whenBokeh(install) {
    if (ready()) {
      install();
    } else if (document.readyState === "loading") {
      document.addEventListener("DOMContentLoaded", install, {once: true});
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
})(window);
