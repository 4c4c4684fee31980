// The one seam between this project and BokehJS's internals: every BokehJS name that is not its public API
// (a module reached through Bokeh.require, a member starting with "_", a protected member, a method
// replaced on a prototype) is used in this file and nowhere else. Loaded by the served page, the static
// export and the notebook explorer, before the scripts that ask it for anything.
//
// It was written for one BokehJS, WRITTEN_FOR. On a page with any other BokehJS it installs nothing, says
// so once in the console (an error), and answers every question from the page's scripts with "no", so
// they take BokehJS's public way: the page works as it would without this file, at BokehJS's own speed.
// What it installs buys speed only, never correctness: the pages pass every behaviour test without it
// (tests/conftest.py `--stock-bokeh` runs them on a BokehJS that reports another version).
//
// What it installs (window.BokehSeam.patches says which are in force; tests/test_seam.py checks each):
//
// 1. styleSheets: on every repaint BokehJS writes each renderer's position into that renderer's <style>
// element (update_position → InlineStyleSheet.replace), even when the CSS is the same as before. Each
// write makes the browser re-parse the sheet and drop its computed styles, and BokehJS then reads colours
// and fonts through getComputedStyle (bokeh/bokeh#15286), which recomputes them on the spot: ~40 % of a
// served slider move's main-thread time (bench/RESULTS-latency.md). A write of the text the element
// already holds changes nothing, so it is skipped.
//
// 2. cssReads: each visual property (a line's colour, a label's font, ...) asks getComputedStyle for a CSS
// variable that may override it, every time it is drawn: hundreds of reads a repaint, each after a DOM
// change recomputing styles first. Within one task the answer cannot change (nothing but this page's own
// code runs), so each element's answers are kept until the task ends.
//
// 3. colorBarImages: a colour bar draws its palette into a new canvas through a new LinearColorMapper at
// every layout and at every change of its mapper's low or high, though the picture depends only on the
// palette; it is made again only when the palette (or the part of it shown) changes.
//
// 4. tickLabelExtents: before every repaint each axis measures all its tick labels again, to see whether
// the layout must change, though the labels are the same from move to move. The measured extent is kept
// while the ticks, their overrides, formatter, orientation, standoff and font are the same.
//
// 5. emptyRects: a rectangle glyph with nothing to draw (no fill, no line, no hatch) still walks its cells
// and traces a path for each. The heatmaps' cells are such a glyph when a picture paints the colours
// (widgets/matrix_plot.py; they stay for the hover): 3 × 4096 empty paths a move at 64 tokens.
//
// 6. sliderLayers: noUiSlider's stylesheet asks for `will-change: transform` on each slider's bar and
// handle, two compositor layers a slider; with 64 tokens (192 sliders) the browser spent ~60 ms a move
// assigning and committing them, though only the slider being dragged moves.
//
// 7. glyphCopies: each renderer keeps up to five copies of its glyph (decimated, selection,
// non-selection, hover, muted), and BokehJS works out the data and visuals of all six at every data
// change. The copies' are worked out when a paint needs one of them (something selected, inspected with
// a hover glyph, muted, or a level-of-detail draw during a pan or zoom) and otherwise a moment after the
// data stop changing.
//
// 8. axisPictures: at every repaint each axis draws its rule, ticks and every tick label again, though
// from move to move nothing of it changes. Each axis keeps a picture of what it drew, and draws that
// picture while its model, ticker, formatter, ranges, place, font size and the canvas's scale are the
// same (math labels, a hatched background, clipping, SVG output: drawn as before). The axis label's
// extent, measured before every repaint, is kept on the same terms.
//
// 9. baseFontSize: every axis asks its figure for the base font size (getComputedStyle of the figure's
// element) several times a repaint; within one task the answer cannot change.
//
// 10. mapperMetrics: a continuous colour mapper works out its range anew each time it maps a column, and
// tells its colour bars each time, though with `low` and `high` set the range does not depend on the
// data; each bar then redraws and asks for a new layout, twice per heatmap a move. The bars are now told
// only when the range differs from the one they were last told of.
//
// 11. textSizes: each text box measures its text with the canvas whenever its size is asked: every cell's
// number at every data change, each title before each repaint. A text's size depends only on the text,
// the font, the line height and the height metric, so it is kept per loaded font.
//
// 12. sliderTitles: a slider writes its title ("it[0]: 0.45") at every change of its value by emptying
// the title's element and making its nodes anew (a style and layout invalidation each, in a shadow root).
// The title is made off the page and, when its nodes are those shown, only their texts are written.
//
// 13. sendLatest (the served page): BokehJS sends every change of a synced property as its own PATCH-DOC
// at once (ClientSession._document_changed), and a slider dragged faster than a busy server answers
// piled messages up at the server (bench/RESULTS-class-load.md). While the server has not answered the
// last patch, new numbers are held: only the newest number of each (model, property) is kept, sent in one
// patch when the answer comes. Anything else (a pick, an event, a new model) goes at once, after the held
// values, so the order the server sees is the order they were made. The server's half (app/serving.py
// latest_patch_wins) stays for pages without this.
//
// And what the page's own scripts ask of it (each answers null or false when the seam is off, and the
// script then takes BokehJS's public way):
// * documentFromJson / readRoot / holdIdle: the export's first part is made before its other roots are
//   read, the document called idle only once they are (static/explorer_page.js embed; else
//   Bokeh.embed.embed_items makes the whole page at once);
// * writeDivText: a Div's new text written into the element its view shows, without rendering the view
//   anew (the steps panel; else the model's text is set);
// * ndarray: an image's array, for a heatmap painted as one picture (static/matrix_picture.js; else the
//   cells are painted).
(function (root) {
  "use strict";
  if (root.BokehSeam) return; // a page with two explorers (or a notebook run twice) loads it once

  const WRITTEN_FOR = "3.9.2";

  const seam = {
    writtenFor: WRITTEN_FOR,
    patches: {}, // name → true once installed, false if this BokehJS lacked what it replaces
  };
  root.BokehSeam = seam;

  // --- the guard ----------------------------------------------------------------------------------------

  let verdict = null; // null until BokehJS is on the page; then true (the seam is on) or false
  function on() {
    if (verdict !== null) return verdict;
    const Bokeh = root.Bokeh;
    if (!Bokeh || typeof Bokeh.require !== "function") return false; // not yet: asked again later
    verdict = Bokeh.version === WRITTEN_FOR;
    if (!verdict) {
      console.error(`bokeh_seam.js: written for BokehJS ${WRITTEN_FOR}, but this page has BokehJS ` +
        `${Bokeh.version}: nothing installed, the page runs on BokehJS as it is (slower, not wrong)`);
    }
    return verdict;
  }
  Object.defineProperty(seam, "on", { get: on, enumerable: true });

  // A piece this BokehJS lacks although its version is WRITTEN_FOR: a bug here, said as an error.
  function missing(what) {
    console.error(`bokeh_seam.js: BokehJS ${WRITTEN_FOR} has no ${what}; that part is not installed`);
  }

  const require = (module) => root.Bokeh.require(module);

  // --- the loader ---------------------------------------------------------------------------------------

  // Runs `install` once BokehJS is on the page: at once if it is; on DOMContentLoaded in a page still
  // loading (Bokeh renders its documents then, or later); in a notebook, where another output may bring
  // BokehJS after this script ran, looked for every 50 ms for a minute at most.
  function whenBokeh(install) {
    const ready = () => root.Bokeh && typeof root.Bokeh.require === "function";
    if (ready()) {
      install();
    } else if (root.document.readyState === "loading") {
      root.document.addEventListener("DOMContentLoaded", () => { if (ready()) install(); }, { once: true });
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
  }

  let installed = false;
  function install() {
    if (installed || !on()) return;
    installed = true;
    for (const [name, patch] of PATCHES) {
      let done = false;
      try {
        done = patch() !== false;
      } catch (err) {
        console.error(`bokeh_seam.js: ${name}:`, err);
      }
      seam.patches[name] = done;
    }
    performance.mark("bokeh-seam-installed"); // before any view is made (tests/test_export_start.py)
  }
  seam.install = install;

  // Replace `method` on the prototype of `name` (from BokehJS's module `module`) by `replacement(original)`.
  function replace(module, name, method, replacement) {
    let proto = null;
    try {
      proto = require(module)[name].prototype;
    } catch (e) {}
    if (!proto || typeof proto[method] !== "function") {
      missing(`${name}.${method}`);
      return false;
    }
    proto[method] = replacement(proto[method]);
    return true;
  }

  function sliderViewPrototype() {
    try {
      return root.Bokeh.Models.get("Slider").prototype.default_view.prototype;
    } catch (e) {
      return null;
    }
  }

  // --- the patches (see the list at the top) -------------------------------------------------------------

  const PATCHES = [ // (in the order of the list at the top)
    ["styleSheets", skipUnchangedStyleSheets],
    ["cssReads", cacheCssReadsPerTask],
    ["colorBarImages", keepColorBarImages],
    ["tickLabelExtents", keepTickLabelExtents],
    ["emptyRects", skipEmptyRects],
    ["sliderLayers", slidersWithoutOwnLayers],
    ["glyphCopies", glyphCopiesWhenNeeded],
    ["axisPictures", () => keepAxisPictures() && keepAxisLabelExtents()],
    ["baseFontSize", baseFontSizePerTask],
    ["mapperMetrics", mapperMetricsWhenChanged],
    ["textSizes", keepTextSizes],
    ["sliderTitles", sliderTitlesInPlace],
    ["sendLatest", sendLatest],
  ];

  function skipUnchangedStyleSheets() {
    return replace("core/dom", "InlineStyleSheet", "_update", (write) => function (css) {
      if (this.el.textContent !== css) {
        write.call(this, css);
      }
    });
  }

  function cacheCssReadsPerTask() {
    let answers = null; // element → (CSS variable → value), for the current task only
    return replace("core/visuals/visual", "VisualProperties", "_get_css_value", (read) => function (name) {
      if (answers === null) {
        answers = new Map();
        queueMicrotask(() => { answers = null; });
      }
      const el = this.obj.el;
      let known = answers.get(el);
      if (known === undefined) {
        known = new Map();
        answers.set(el, known);
      }
      const key = this.css_prefix + name;
      let value = known.get(key);
      if (value === undefined) {
        value = read.call(this, name);
        known.set(key, value);
      }
      return value;
    });
  }

  function keepColorBarImages() {
    return replace("models/annotations/color_bar", "ColorBarView", "_set_canvas_image", (draw) => function () {
      const key = [this.color_mapper.palette, this._index_low, this._index_high, this.orientation];
      const last = this._image_key;
      if (this._image != null && last && key.every((part, k) => part === last[k])) {
        return;
      }
      draw.call(this);
      this._image_key = key;
    });
  }

  function keepTickLabelExtents() {
    return replace("models/axes/axis", "AxisView", "_tick_label_extents", (measure) => function () {
      const m = this.model;
      const ticks = this.tick_coords.major[this.dimension];
      // the label's font by its model's properties (reading the visuals' values costs a measurement's worth)
      const text = JSON.stringify([ticks, m.major_label_orientation, m.major_label_standoff,
        m.major_label_text_font, m.major_label_text_font_size, m.major_label_text_font_style,
        this.plot_view.base_font_size]);
      const last = this._kept_extents;
      if (last && last.text === text && last.overrides === m.major_label_overrides &&
          last.formatter === m.formatter) {
        return last.extents;
      }
      const extents = measure.call(this);
      this._kept_extents = { text, overrides: m.major_label_overrides, formatter: m.formatter, extents };
      return extents;
    });
  }

  function skipEmptyRects() {
    return replace("models/glyphs/rect", "RectView", "_paint", (paint) => function (ctx, indices, data) {
      const v = this.visuals;
      if (v.fill.doit || v.line.doit || v.hatch.doit) {
        paint.call(this, ctx, indices, data);
      }
    });
  }

  function slidersWithoutOwnLayers() {
    const proto = sliderViewPrototype();
    let InlineStyleSheet = null;
    try {
      InlineStyleSheet = require("core/dom").InlineStyleSheet;
    } catch (e) {}
    if (!proto || typeof proto.stylesheets !== "function" || !InlineStyleSheet) {
      missing("Slider view with stylesheets");
      return false;
    }
    // !important: the slider's own sheet may be adopted by the shadow root, after (over) a <style> in it
    const css = ".noUi-connect, .noUi-origin { will-change: auto !important; }";
    const inherited = proto.stylesheets;
    proto.stylesheets = function () {
      // one sheet per view: a sheet's <style> element lives in one shadow root at a time
      if (this._no_layers_sheet === undefined) {
        this._no_layers_sheet = new InlineStyleSheet(css);
      }
      return [...inherited.call(this), this._no_layers_sheet];
    };
    // sliders already on the page (a page whose documents were rendered before this ran)
    const walk = (node) => {
      for (const el of node.querySelectorAll("*")) {
        const shadow = el.shadowRoot;
        if (shadow === null) continue;
        if (shadow.querySelector(".noUi-target") !== null) {
          const style = root.document.createElement("style");
          style.textContent = css;
          shadow.appendChild(style);
        }
        walk(shadow);
      }
    };
    walk(root.document);
    return true;
  }

  // how long after a renderer's last data change its glyph copies are brought up to date (patch 7)
  const COPIES_AFTER_MS = 250;

  function glyphCopiesWhenNeeded() {
    const module = "models/renderers/glyph_renderer";
    let Indices = null;
    try {
      Indices = require("core/types").Indices;
    } catch (e) {}
    if (typeof Indices !== "function") {
      missing("core/types Indices");
      return false;
    }
    // BokehJS's GlyphRendererView.set_data with the glyph alone; the copies are marked out of date
    return replace(module, "GlyphRendererView", "set_data", () => async function (indices) {
      const source = this.model.data_source;
      this.all_indices = this.model.view.indices;
      await this.glyph.set_data(source, this.all_indices, indices);
      await this.set_visuals();
      this._update_masked_indices();
      const { lod_factor } = this.plot_model;
      const n = this.all_indices.count;
      this.decimated = new Indices(n);
      for (let i = 0; i < n; i += lod_factor) {
        this.decimated.set(i);
      }
      this.plot_view.invalidate_dataranges = true;
    }) && replace(module, "GlyphRendererView", "set_visuals", () => async function () {
      const source = this.model.data_source;
      this.glyph.set_visuals(source, this.all_indices);
      this.glyph.after_visuals();
      await this.glyph.after_lazy_visuals();
      copiesOutOfDate(this);
    }) && replace(module, "GlyphRendererView", "map_data", (map) => function () {
      if (plainDraw(this)) {
        this.glyph.map_data();
      } else {
        map.call(this);
      }
    }) && replace(module, "GlyphRendererView", "_paint", (paint) => function (ctx) {
      if (this._copies_stale && !plainDraw(this)) {
        // their data and visuals are made now; what BokehJS makes later (math labels' boxes) repaints
        bringCopies(this).then(() => this.request_paint());
      }
      return paint.call(this, ctx);
    }) && replace(module, "GlyphRendererView", "remove", (remove) => function () {
      waitingCopies.delete(this);
      this._copies_stale = false;
      return remove.call(this);
    });
  }

  // renderer view → the time of its last data change, for those whose copies are out of date; one timer
  // for all (a move changes a dozen renderers: a timer each, set again at every move, cost more than it saves)
  const waitingCopies = new Map();
  let copiesTimer = null;

  function copiesOutOfDate(view) {
    view._copies_stale = true;
    waitingCopies.set(view, performance.now());
    if (copiesTimer === null) copiesTimer = setTimeout(catchUpCopies, COPIES_AFTER_MS);
  }

  function catchUpCopies() {
    copiesTimer = null;
    const now = performance.now();
    let next = Infinity;
    for (const [view, changed] of waitingCopies) {
      const due = changed + COPIES_AFTER_MS;
      if (due <= now) {
        bringCopies(view);
      } else {
        next = Math.min(next, due);
      }
    }
    if (next < Infinity) copiesTimer = setTimeout(catchUpCopies, next - now);
  }

  // The copies' data and visuals, as BokehJS's set_data and set_visuals make them. Each step that BokehJS
  // does not defer is done before this returns.
  function bringCopies(view) {
    waitingCopies.delete(view);
    if (!view._copies_stale) return Promise.resolve();
    view._copies_stale = false;
    const source = view.model.data_source;
    const copies = [view.decimated_glyph, view.selection_glyph, view.nonselection_glyph, view.hover_glyph,
      view.muted_glyph].filter((glyph) => glyph != null);
    const lazy = copies.map((glyph) => glyph.set_data(source, view.all_indices, null));
    for (const glyph of copies) {
      glyph.set_visuals(source, view.all_indices);
      glyph.after_visuals();
      lazy.push(glyph.after_lazy_visuals());
    }
    return Promise.all(lazy);
  }

  // A paint that draws the glyph alone (GlyphRendererView._paint: nothing selected, nothing inspected with
  // a hover glyph, not muted, not a level-of-detail draw).
  function plainDraw(view) {
    const { selected, inspected } = view.model.data_source;
    const doc = view.model.document;
    const interactive = doc != null && typeof doc.interactive_duration === "function" &&
      doc.interactive_duration() > 0;
    return selected.is_empty() && (view.hover_glyph == null || inspected.is_empty()) && !view.model.muted &&
      !interactive;
  }

  function baseFontSizePerTask() {
    let proto = null;
    try {
      proto = require("models/plots/plot_canvas").PlotView.prototype;
    } catch (e) {}
    const read = proto && Object.getOwnPropertyDescriptor(proto, "base_font_size");
    if (!read || typeof read.get !== "function") {
      missing("PlotView.base_font_size");
      return false;
    }
    let answers = null; // plot view → its base font size, for the current task only
    const get = function () {
      if (answers === null) {
        answers = new Map();
        queueMicrotask(() => { answers = null; });
      }
      if (!answers.has(this)) answers.set(this, read.get.call(this));
      return answers.get(this);
    };
    Object.defineProperty(proto, "base_font_size", { ...read, get });
    return true;
  }

  function keepAxisPictures() {
    let MathTextView = null;
    try {
      MathTextView = require("models/text/math_text").MathTextView;
    } catch (e) {}
    if (typeof MathTextView !== "function" || typeof CanvasRenderingContext2D !== "function") {
      missing("MathTextView");
      return false;
    }
    return replace("models/axes/axis", "AxisView", "_paint", (paint) => function (ctx) {
      const canvas = ctx.canvas;
      const labels = [this._axis_label_view, ...this._major_label_views.values()];
      if (!(ctx instanceof CanvasRenderingContext2D) || !canvas || canvas.width === 0 || canvas.height === 0 ||
          this.needs_clip || labels.some((view) => view instanceof MathTextView)) {
        paint.call(this, ctx);
        return;
      }
      watchAxis(this);
      const m = this.model;
      const t = ctx.getTransform();
      const [range, crossRange] = this.ranges;
      const box = this.bbox;
      const frame = this.plot_view.frame.bbox;
      const key = JSON.stringify([this._axis_version, t.a, t.b, t.c, t.d, t.e, t.f, canvas.width, canvas.height,
        box.x, box.y, box.width, box.height, frame.x, frame.y, frame.width, frame.height, range.start, range.end,
        crossRange.start, crossRange.end, this.loc, this.plot_view.base_font_size]);
      const refs = [m.ticker, m.formatter, m.major_label_overrides, ...labels];
      let kept = this._axis_picture;
      const same = kept && kept.key === key && kept.refs.length === refs.length &&
        kept.refs.every((ref, k) => ref === refs[k]);
      // whether the background is hatched is asked only when the picture is made anew: the question reads
      // CSS variables (getComputedStyle of the axis's element), which this patch takes as fixed, as it does
      // for the labels' colours and fonts
      if (!same && this.visuals.background_hatch.doit) {
        this._axis_picture = null;
        paint.call(this, ctx);
        return;
      }
      if (!same) {
        if (!kept || kept.canvas.width !== canvas.width || kept.canvas.height !== canvas.height) {
          const picture = root.document.createElement("canvas");
          picture.width = canvas.width;
          picture.height = canvas.height;
          kept = { canvas: picture, ctx: picture.getContext("2d") };
        }
        const p = kept.ctx;
        p.setTransform(1, 0, 0, 1, 0, 0);
        p.clearRect(0, 0, canvas.width, canvas.height);
        p.setTransform(t);
        paint.call(this, p);
        kept.key = key;
        kept.refs = refs;
        this._axis_picture = kept;
      }
      ctx.save();
      ctx.setTransform(1, 0, 0, 1, 0, 0);
      ctx.globalAlpha = 1;
      ctx.globalCompositeOperation = "source-over";
      ctx.drawImage(kept.canvas, 0, 0);
      ctx.restore();
    });
  }

  // The axis label's extent (its text measured at every repaint, to see whether the layout must change) is
  // kept while the axis, its label and the base font size are the same.
  function keepAxisLabelExtents() {
    return replace("models/axes/axis", "AxisView", "_axis_label_extent", (measure) => function () {
      watchAxis(this);
      const ticks = this.model.axis_label_standoff_mode === "axis" ? this._tick_label_extents() : null;
      const key = JSON.stringify([this._axis_version, this.plot_view.base_font_size, this.panel.side, ticks]);
      const last = this._kept_label_extent;
      if (last && last.key === key && last.view === this._axis_label_view) {
        return last.extent;
      }
      const extent = measure.call(this);
      this._kept_label_extent = { key, view: this._axis_label_view, extent };
      return extent;
    });
  }

  // A count of the changes to an axis, its ticker and its formatter (whichever models they are now).
  function watchAxis(view) {
    if (view._axis_version === undefined) {
      view._axis_version = 0;
      view._axis_watched = new Set();
    }
    for (const model of [view.model, view.model.ticker, view.model.formatter]) {
      if (view._axis_watched.has(model)) continue;
      view._axis_watched.add(model);
      view.connect(model.change, () => { view._axis_version += 1; });
    }
  }

  function mapperMetricsWhenChanged() {
    // keys of a mapper's metrics (scan): numbers for linear and log mappers; a binning array (EqHist) is
    // compared by identity, which tells the colour bars every time, as before
    const same = (a, b) => a != null && b != null && Object.keys(b).every((key) => Object.is(a[key], b[key])) &&
      Object.keys(a).length === Object.keys(b).length;
    return replace("models/mappers/continuous_color_mapper", "ContinuousColorMapper", "_v_compute",
      (compute) => function (...args) {
        const signal = this.metrics_change;
        const before = this._scan_data;
        let asked = false;
        signal.emit = () => { asked = true; };
        try {
          compute.apply(this, args);
        } finally {
          delete signal.emit;
        }
        if (asked && !same(before, this._scan_data)) signal.emit();
      });
  }

  // how many sizes are kept per font, at most (a page's texts are a few hundred; a stream of new texts
  // starts the font's sizes afresh rather than grow without end)
  const TEXT_SIZES_PER_FONT = 5000;

  function keepTextSizes() {
    const fonts = root.document.fonts;
    let sizes = new Map(); // font → (line height, height metric, text → size), for loaded fonts only
    if (fonts && typeof fonts.addEventListener === "function") {
      fonts.addEventListener("loadingdone", () => { sizes = new Map(); });
    }
    return replace("core/graphics", "TextBox", "_size", (measure) => function () {
      const { font } = this;
      if (this.width?.unit === "%" || this.height?.unit === "%" || typeof font !== "string") {
        return measure.call(this);
      }
      let known = sizes.get(font);
      if (known === undefined) {
        if (!fonts || !fonts.check(font)) return measure.call(this);
        known = new Map();
        sizes.set(font, known);
      }
      const key = `${this.line_height}\u0000${this.text_height_metric}\u0000${this.text}`;
      let size = known.get(key);
      if (size === undefined) {
        if (known.size >= TEXT_SIZES_PER_FONT) known.clear();
        size = measure.call(this);
        known.set(key, size);
      }
      return { width: size.width, height: size.height, metrics: size.metrics };
    });
  }

  function sliderTitlesInPlace() {
    let proto = sliderViewPrototype();
    while (proto && !Object.prototype.hasOwnProperty.call(proto, "_update_title")) {
      proto = Object.getPrototypeOf(proto);
    }
    if (!proto || typeof proto._update_title !== "function") {
      missing("slider view with _update_title");
      return false;
    }
    const update = proto._update_title;
    proto._update_title = function () {
      const shown = this.title_el;
      if (!(shown instanceof Element)) {
        update.call(this);
        return;
      }
      const made = shown.cloneNode(false);
      this.title_el = made;
      try {
        update.call(this);
      } finally {
        this.title_el = shown;
      }
      writeNodes(made, shown);
      if (shown.style.display !== made.style.display) shown.style.display = made.style.display;
    };
    return true;
  }

  // `to`'s content made the same as `from`'s: only the texts written when their nodes are the same (names,
  // attributes, comments), else the nodes replaced. (Patch 12 and writeDivText.)
  function writeNodes(from, to) {
    if (sameNodes(to, from)) copyTexts(from, to);
    else to.replaceChildren(...from.childNodes);
  }

  function sameNodes(a, b) {
    const as = a.childNodes, bs = b.childNodes;
    if (as.length !== bs.length) return false;
    for (let k = 0; k < as.length; k++) {
      const x = as[k], y = bs[k];
      if (x.nodeType !== y.nodeType || x.nodeName !== y.nodeName) return false;
      if (x.nodeType === Node.ELEMENT_NODE) {
        if (x.attributes.length !== y.attributes.length) return false;
        for (const attr of y.attributes) if (x.getAttribute(attr.name) !== attr.value) return false;
        if (!sameNodes(x, y)) return false;
      } else if (x.nodeType !== Node.TEXT_NODE && x.nodeValue !== y.nodeValue) {
        return false;
      }
    }
    return true;
  }

  function copyTexts(from, to) {
    const fs = from.childNodes, ts = to.childNodes;
    for (let k = 0; k < fs.length; k++) {
      if (fs[k].nodeType === Node.TEXT_NODE) {
        if (ts[k].data !== fs[k].data) ts[k].data = fs[k].data;
      } else {
        copyTexts(fs[k], ts[k]);
      }
    }
  }

  // An answer that never comes (a lost reply) must not keep the last value back for ever (patch 13).
  const ANSWER_TIMEOUT_MS = 5000;

  function sendLatest() {
    let Session, Message, events;
    try {
      Session = require("client/session").ClientSession;
      Message = require("protocol/message").Message;
      events = require("document/events");
    } catch (e) {}
    const proto = Session && Session.prototype;
    if (!proto || typeof proto._document_changed !== "function" || typeof proto._handle_ok !== "function" ||
        !Message || !events || !events.ModelChangedEvent || !events.DocumentEventBatch) {
      missing("ClientSession._document_changed");
      return false;
    }
    const original = { changed: proto._document_changed, ok: proto._handle_ok, error: proto._handle_error };
    const sessions = new WeakMap(); // session → what it holds back (below)

    // Per session: the msgid awaiting its answer (null: none), the socket it went on, the held events
    // (by "model id attr" for numbers, by a fresh symbol otherwise), in the order they were made.
    const state = (session) => {
      let st = sessions.get(session);
      if (st === undefined) {
        st = { awaiting: null, socket: null, timer: null, held: new Map() };
        sessions.set(session, st);
      }
      return st;
    };

    // Only a number is overwritten by a newer one; a pick goes in turn, as an event does.
    const overwritable = (v) => typeof v === "number"; // widgets/latest.py overwritable

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
        return; // an answer to an older message (or one sent before this was installed)
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
        if (e instanceof events.ModelChangedEvent && overwritable(e.value)) {
          const key = `${e.model.id} ${e.attr}`;
          st.held.delete(key); // overtaken: only the newest value goes, in the order of its making
          st.held.set(key, e);
        } else {
          st.held.set(Symbol("event"), e);
          now = true;
        }
      }
      if (st.awaiting !== null && st.socket !== this._connection.socket) {
        st.awaiting = null; // the connection was replaced: that answer will never come
      }
      if (now || st.awaiting === null) {
        send(this, st);
      }
    };
    proto._document_changed.original = original.changed; // bench/burst_browser.py: both ways in one page
    proto._handle_ok = function (message) {
      answered(this, message.reqid());
      return original.ok.call(this, message);
    };
    proto._handle_error = function (message) {
      answered(this, message.reqid());
      return original.error.call(this, message);
    };
    return true;
  }

  // --- what the page's scripts ask of it ------------------------------------------------------------------

  /** A BokehJS Document made from a document's JSON, before any view of it is made; null when off. */
  seam.documentFromJson = function documentFromJson(json) {
    if (!on()) return null;
    const doc = require("document").Document.from_json(json);
    return typeof doc.add_root === "function" && doc._all_models instanceof Map ? doc : null;
  };

  /** A root's JSON read against the models `doc` has (as a root the server adds is read), not yet added
   * to it: { root, models (id → model, the root's and those it refers to) }. */
  seam.readRoot = function readRoot(doc, json) {
    const Deserializer = require("core/serialization/deserializer").Deserializer;
    const root = new Deserializer(doc.resolver, new Map(doc._all_models)).decode(json);
    return { root, models: new Map([...root.references()].map((model) => [model.id, model])) };
  };

  /** Holds `doc`'s reports that a root's views are drawn (Document.notify_idle) until `release()`, which
   * gives them: BokehJS calls a document idle once each root has reported, and ignores reports after. */
  seam.holdIdle = function holdIdle(doc) {
    if (!on() || typeof doc.notify_idle !== "function") return { release() {} };
    const held = [];
    doc.notify_idle = (model) => { held.push(model); }; // on this document only, until release
    return {
      release() {
        delete doc.notify_idle; // the Document's own again
        for (const model of held.splice(0)) doc.notify_idle(model);
      },
    };
  };

  // Div model → its view, for writeDivText (looking a view up walks every view on the page)
  const divViews = new WeakMap();

  /** Write `text` into the Div `div` as its view shows it, without rendering the view anew (BokehJS
   * answers a new text by rendering the whole view again: its shadow root, style sheets and layout, ~7 ms
   * a move for the steps panel). The model gets the same text without a change event, so it reads what is
   * shown; `options` are setv's (sync). Only the texts that differ are written when the new HTML has the
   * nodes shown. False, with nothing written, when that cannot be done: the caller sets the text. */
  seam.writeDivText = function writeDivText(div, text, options) {
    if (!on() || div.render_as_text) return false;
    let view = divViews.get(div);
    if (!view || view.model !== div || !view.markup_el || !view.markup_el.isConnected) {
      view = root.Bokeh.index.find_one(div);
      if (!view) return false;
      divViews.set(div, view);
    }
    const el = view.markup_el;
    if (!el || !el.isConnected) return false;
    div.setv({ text }, Object.assign({ silent: true }, options));
    if (typeof view.has_math_disabled === "function" && !view.has_math_disabled()) {
      view.rerender();
    } else {
      parser.innerHTML = text;
      writeNodes(parser.content, el);
      parser.innerHTML = "";
    }
    return true;
  };
  const parser = root.document.createElement("template");

  /** A rows × cols array of numbers as an Image glyph's `image` takes it; null when off. */
  seam.ndarray = function ndarray(flat, rows, cols) {
    if (!on()) return null;
    return require("core/util/ndarray").ndarray(flat, { shape: [rows, cols] });
  };

  whenBokeh(install);
})(window);
