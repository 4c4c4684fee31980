// Fixes to BokehJS 3.9, loaded by the served page, the static export and the notebook explorer, each
// after static/when_bokeh.js.
//
// 1. On every repaint BokehJS writes each renderer's position into that renderer's <style> element
// (update_position → InlineStyleSheet.replace), even when the CSS is the same as before. Each write
// makes the browser re-parse the sheet and drop its computed styles, and BokehJS then reads colours
// and fonts through getComputedStyle (bokeh/bokeh#15286), which recomputes them on the spot. In the
// served page that was ~40 % of a slider move's main-thread time (bench/RESULTS-latency.md). A write
// of the text the element already holds changes nothing, so it is skipped.
//
// 2. Each visual property (a line's colour, a label's font, ...) asks getComputedStyle for a CSS
// variable that may override it, every time it is drawn (bokeh/bokeh#15286): hundreds of reads a
// repaint, and each read after a DOM change makes the browser recompute styles first. Within one task
// the answer cannot change (nothing but this page's own code runs), so each element's answers are kept
// until the task ends. A new figure shape in the static export spent ~60 ms a switch on these reads.
//
// 3. A colour bar draws its palette into a new canvas through a new LinearColorMapper (a model, with all
// its properties set up) at every layout and at every change of its mapper's low or high, though the
// picture depends only on the palette. A move that changes a heatmap's colour range did this twice per
// colour bar; the picture is now made again only when the palette (or the part of it shown) changes.
//
// 4. Before every repaint each axis measures all its tick labels again, to see whether the layout must
// change (has_size_changed → extents), though the labels are the same from move to move. The measured
// extent is kept while the ticks, their labels' overrides, formatter, orientation, standoff and font are
// the same (the page sets no CSS variable for a label's font).
//
// 5. A rectangle glyph with nothing to draw (no fill, no line, no hatch) still walks its cells and traces
// a path for each. The heatmaps' cells are such a glyph when a picture paints the colours
// (widgets/matrix_plot.py; they stay for the hover): 3 × 4096 empty paths a move at 64 tokens.
//
// 6. The slider's stylesheet (noUiSlider's) asks for `will-change: transform` on each slider's bar and
// handle, which gives every slider two compositor layers of its own. With 64 tokens (192 sliders) the
// browser spent ~60 ms a move assigning and committing those layers (Chromium trace: Layerize and
// Commit), though only the slider being dragged moves. Without the hint a moved handle is repainted
// instead, a few pixels.
//
// 7. Each renderer keeps up to five copies of its glyph besides the glyph itself (decimated, selection,
// non-selection, hover, muted), and BokehJS works out the visuals (colours, fonts, text boxes and their
// sizes) of all six at every data change: a quarter of a slider move's script in the static export,
// where no figure has a selection, a hover glyph, a muted renderer or a decimated draw. The copies'
// visuals are now worked out when a paint needs one of them (something selected, inspected with a hover
// glyph, muted, or a level-of-detail draw during a pan or zoom) and otherwise a moment after the data
// stop changing; so are their data (each copy's columns, taken from the glyph's) and their mapping to
// screen coordinates, made again at every paint. A legend draws the glyph itself.
//
// 8. At every repaint each axis draws its rule, ticks and every tick label again (text measured and
// filled label by label), though from move to move nothing of it changes: the largest single part of
// the figures' repaint in the static export. Each axis now keeps a picture of what it drew, and draws
// that picture while its model, ticker, formatter, ranges, place on the canvas, font size and the
// canvas's scale are the same. An axis whose labels are math, with a hatched background, clipped, or
// drawn to anything but a canvas with pixels (SVG output, a figure not laid out yet) is drawn as before;
// whether the background is hatched (a question that reads the axis's CSS variables) is asked when the
// picture would be made anew, not at every repaint. The axis label's extent, measured before every
// repaint to see whether the layout must change, is kept on the same terms.
//
// 9. Every axis asks its figure for the base font size (getComputedStyle of the figure's element) several
// times a repaint; within one task the answer cannot change, so it is kept until the task ends.
//
// 10. A continuous colour mapper (LinearColorMapper, ...) works out its range (its "metrics") anew each time
// it maps a column, and tells its colour bars each time, though with `low` and `high` set the range does not
// depend on the data. Each colour bar then sets its range, redraws its palette's picture (patch 3 keeps it)
// and asks its figure for a new layout: at every move, twice per heatmap (cells' fill and numbers' ink),
// about a tenth of a move's script in the static export. The colour bars are now told only when the range
// differs from the one they were last told of (a change of low, high or palette tells them as before).
//
// 11. Each text box (a heatmap cell's number, a title, a label) measures its text with the canvas
// (measureText, the font's metrics) whenever its size is asked: for every cell's number at every data
// change, and for each title before each repaint, though the texts and the font rarely change. A text's
// size depends only on the text, the font, the line height and the height metric, so it is kept per font
// for fonts the browser has loaded (as BokehJS keeps a font's metrics), and forgotten when fonts load.
//
// 12. A slider writes its title ("it[0]: 0.45") at every change of its value by emptying the title's
// element and making its nodes anew; in a shadow root each removal and insertion costs the browser a
// style and layout invalidation. The title is now made off the page and, when it has the same nodes as the
// one shown (only the value's text differs), the texts are written into the nodes shown; else the nodes
// are replaced, as before.
(function patchBokeh() {
  function install() {
    skipUnchangedStyleSheets();
    cacheCssReadsPerTask();
    keepColorBarImages();
    keepTickLabelExtents();
    skipEmptyRects();
    slidersWithoutOwnLayers();
    glyphCopiesWhenNeeded();
    baseFontSizePerTask();
    keepAxisPictures();
    keepAxisLabelExtents();
    mapperMetricsWhenChanged();
    keepTextSizes();
    sliderTitlesInPlace();
    performance.mark("bokeh-patch-installed"); // before any view is made (tests/test_export_start.py)
  }

  function sliderTitlesInPlace() {
    let proto = null;
    try {
      proto = window.Bokeh.Models.get("Slider").prototype.default_view.prototype;
    } catch (e) {}
    while (proto && !Object.prototype.hasOwnProperty.call(proto, "_update_title")) {
      proto = Object.getPrototypeOf(proto);
    }
    if (!proto || typeof proto._update_title !== "function") {
      console.warn("bokeh_patch.js: this BokehJS has no slider view with _update_title; nothing patched");
      return;
    }
    if (proto._update_title.patched) return;
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
      if (sameNodes(shown, made)) {
        copyTexts(made, shown);
      } else {
        shown.replaceChildren(...made.childNodes);
      }
      if (shown.style.display !== made.style.display) shown.style.display = made.style.display;
    };
    proto._update_title.patched = true;
  }

  // Whether two elements' contents are the same nodes (names, attributes, comments), texts aside.
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

  // Write `from`'s texts into `to`'s text nodes (the same nodes: sameNodes).
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

  // how many sizes are kept per font, at most (a page's texts are a few hundred; a stream of new texts
  // starts the font's sizes afresh rather than grow without end)
  const TEXT_SIZES_PER_FONT = 5000;

  function keepTextSizes() {
    let sizes = new Map(); // font → (line height, height metric, text → size), for loaded fonts only
    if (document.fonts && typeof document.fonts.addEventListener === "function") {
      document.fonts.addEventListener("loadingdone", () => { sizes = new Map(); });
    }
    replace("core/graphics", "TextBox", "_size", (measure) => function () {
      const { font } = this;
      if (this.width?.unit === "%" || this.height?.unit === "%" || typeof font !== "string") {
        return measure.call(this);
      }
      let known = sizes.get(font);
      if (known === undefined) {
        if (!document.fonts || !document.fonts.check(font)) return measure.call(this);
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

  function mapperMetricsWhenChanged() {
    // keys of a mapper's metrics (scan): numbers for linear and log mappers; a binning array (EqHist) is
    // compared by identity, which tells the colour bars every time, as before
    const same = (a, b) => a != null && b != null && Object.keys(b).every((key) => Object.is(a[key], b[key])) &&
      Object.keys(a).length === Object.keys(b).length;
    replace("models/mappers/continuous_color_mapper", "ContinuousColorMapper", "_v_compute",
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

  function keepAxisPictures() {
    let MathTextView = null;
    try {
      MathTextView = window.Bokeh.require("models/text/math_text").MathTextView;
    } catch (e) {}
    if (typeof MathTextView !== "function" || typeof CanvasRenderingContext2D !== "function") {
      console.warn("bokeh_patch.js: this BokehJS has no MathTextView; axes not patched");
      return;
    }
    replace("models/axes/axis", "AxisView", "_paint", (paint) => function (ctx) {
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
          const picture = document.createElement("canvas");
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
    replace("models/axes/axis", "AxisView", "_axis_label_extent", (measure) => function () {
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

  // how long after a renderer's last data change its glyph copies are brought up to date (patch 7)
  const COPIES_AFTER_MS = 250;

  function glyphCopiesWhenNeeded() {
    const module = "models/renderers/glyph_renderer";
    let Indices = null;
    try {
      Indices = window.Bokeh.require("core/types").Indices;
    } catch (e) {}
    if (typeof Indices !== "function") {
      console.warn("bokeh_patch.js: this BokehJS has no core/types Indices; glyph copies not patched");
      return;
    }
    // BokehJS's GlyphRendererView.set_data with the glyph alone; the copies are marked out of date
    replace(module, "GlyphRendererView", "set_data", () => async function (indices) {
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
    });
    replace(module, "GlyphRendererView", "set_visuals", () => async function () {
      const source = this.model.data_source;
      this.glyph.set_visuals(source, this.all_indices);
      this.glyph.after_visuals();
      await this.glyph.after_lazy_visuals();
      copiesOutOfDate(this);
    });
    replace(module, "GlyphRendererView", "map_data", (map) => function () {
      if (plainDraw(this)) {
        this.glyph.map_data();
      } else {
        map.call(this);
      }
    });
    replace(module, "GlyphRendererView", "_paint", (paint) => function (ctx) {
      if (this._copies_stale && !plainDraw(this)) {
        // their data and visuals are made now; what BokehJS makes later (math labels' boxes) repaints
        bringCopies(this).then(() => this.request_paint());
      }
      return paint.call(this, ctx);
    });
    replace(module, "GlyphRendererView", "remove", (remove) => function () {
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
      proto = window.Bokeh.require("models/plots/plot_canvas").PlotView.prototype;
    } catch (e) {}
    const read = proto && Object.getOwnPropertyDescriptor(proto, "base_font_size");
    if (!read || typeof read.get !== "function") {
      console.warn("bokeh_patch.js: this BokehJS has no PlotView.base_font_size; nothing patched");
      return;
    }
    if (read.get.patched) return;
    let answers = null; // plot view → its base font size, for the current task only
    const get = function () {
      if (answers === null) {
        answers = new Map();
        queueMicrotask(() => { answers = null; });
      }
      if (!answers.has(this)) answers.set(this, read.get.call(this));
      return answers.get(this);
    };
    get.patched = true;
    Object.defineProperty(proto, "base_font_size", { ...read, get });
  }

  function slidersWithoutOwnLayers() {
    let proto = null;
    let InlineStyleSheet = null;
    try {
      proto = window.Bokeh.Models.get("Slider").prototype.default_view.prototype;
      InlineStyleSheet = window.Bokeh.require("core/dom").InlineStyleSheet;
    } catch (e) {}
    if (!proto || typeof proto.stylesheets !== "function" || !InlineStyleSheet) {
      console.warn("bokeh_patch.js: this BokehJS has no Slider view with stylesheets; nothing patched");
      return;
    }
    if (Object.prototype.hasOwnProperty.call(proto, "stylesheets") && proto.stylesheets.noLayers) {
      return;
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
    proto.stylesheets.noLayers = true;
    // sliders already on the page (a page whose documents were rendered before this ran)
    const walk = (root) => {
      for (const el of root.querySelectorAll("*")) {
        const shadow = el.shadowRoot;
        if (shadow === null) continue;
        if (shadow.querySelector(".noUi-target") !== null) {
          const style = document.createElement("style");
          style.textContent = css;
          shadow.appendChild(style);
        }
        walk(shadow);
      }
    };
    walk(document);
  }

  // Replace `method` on the prototype of `name` (from BokehJS's module `module`) by `replacement(original)`,
  // once; a BokehJS without it is left as it is, with a warning.
  function replace(module, name, method, replacement) {
    let proto = null;
    try {
      proto = window.Bokeh.require(module)[name].prototype;
    } catch (e) {}
    if (!proto || typeof proto[method] !== "function") {
      console.warn(`bokeh_patch.js: this BokehJS has no ${name}.${method}; nothing patched`);
      return;
    }
    if (proto[method].patched) {
      return;
    }
    const patched = replacement(proto[method]);
    patched.patched = true;
    proto[method] = patched;
  }

  function skipEmptyRects() {
    replace("models/glyphs/rect", "RectView", "_paint", (paint) => function (ctx, indices, data) {
      const v = this.visuals;
      if (v.fill.doit || v.line.doit || v.hatch.doit) {
        paint.call(this, ctx, indices, data);
      }
    });
  }

  function keepTickLabelExtents() {
    replace("models/axes/axis", "AxisView", "_tick_label_extents", (measure) => function () {
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

  function keepColorBarImages() {
    replace("models/annotations/color_bar", "ColorBarView", "_set_canvas_image", (draw) => function () {
      const key = [this.color_mapper.palette, this._index_low, this._index_high, this.orientation];
      const last = this._image_key;
      if (this._image != null && last && key.every((part, k) => part === last[k])) {
        return;
      }
      draw.call(this);
      this._image_key = key;
    });
  }

  function skipUnchangedStyleSheets() {
    replace("core/dom", "InlineStyleSheet", "_update", (write) => function (css) {
      if (this.el.textContent !== css) {
        write.call(this, css);
      }
    });
  }

  function cacheCssReadsPerTask() {
    let answers = null; // element → (CSS variable → value), for the current task only
    replace("core/visuals/visual", "VisualProperties", "_get_css_value", (read) => function (name) {
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

  // The static export's steps panel (static/explorer_page.js writeMarkup) writes its texts the same way.
  window.BokehPatch = { sameNodes, copyTexts };

  whenBokeh(install); // static/when_bokeh.js
})();
