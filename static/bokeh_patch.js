// One fix to BokehJS 3.9, loaded by the served page, the static export and the notebook explorer.
//
// On every repaint BokehJS writes each renderer's position into that renderer's <style> element
// (update_position → InlineStyleSheet.replace), even when the CSS is the same as before. Each write
// makes the browser re-parse the sheet and drop its computed styles, and BokehJS then reads colours
// and fonts through getComputedStyle (bokeh/bokeh#15286), which recomputes them on the spot. In the
// served page that was ~40 % of a slider move's main-thread time (bench/RESULTS-latency.md). A write
// of the text the element already holds changes nothing, so it is skipped.
(function skipUnchangedStyleSheets() {
  function install() {
    let proto = null;
    try {
      proto = window.Bokeh.require("core/dom").InlineStyleSheet.prototype;
    } catch (e) {}
    if (!proto || typeof proto._update !== "function") {
      console.warn("bokeh_patch.js: this BokehJS has no InlineStyleSheet._update; nothing patched");
      return;
    }
    if (proto._update.skipsUnchanged) {
      return;
    }
    const write = proto._update;
    proto._update = function (css) {
      if (this.el.textContent !== css) {
        write.call(this, css);
      }
    };
    proto._update.skipsUnchanged = true;
  }
  const ready = () => window.Bokeh && window.Bokeh.require;
  if (ready()) {
    install();
  } else if (document.readyState === "loading") {
    // BokehJS comes later in the page; documents are rendered on DOMContentLoaded, after this
    document.addEventListener("DOMContentLoaded", install, { once: true });
  } else {  // a notebook: an output of the same cell is still loading BokehJS
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
})();
