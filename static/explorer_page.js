/*
 * The binding of the static page: user events → HeadLogic.apply → HeadLogic.render → the Bokeh models.
 * It holds no logic of its own beyond writing view data into the models the Python page built
 * (widgets/page.py, widgets/editor.py), as widgets/explorer.py does on the server.  Figures are built once;
 * a new shape (tokens, C, d) changes their data, ranges and ticks, and only the sliders and the W grids,
 * whose number depends on the shape, are made anew (from the classes of the ones Python made).
 *
 * app/export.py writes the page's document and one JSON configuration (widgets/logic_config.py + model ids +
 * view constants), which HeadExplorerPage.embed makes and binds (bind).  Needs static/pyformat.js,
 * static/attention.js and static/explorer.js before it, and uses static/bokeh_seam.js where it is on.
 * A served page calls HeadExplorerPage.follow instead
 * (app/served_page.py follow_in_browser): the same writes, for a student's own moves only.
 */
(function () {
  'use strict';

  const bound = [];

  function shortLabel(label, width) {
    const chars = Array.from(String(label));
    return chars.length <= width ? chars.join('') : chars.slice(0, width - 1).join('') + '…';
  }

  const esc = (text) => AttentionHead.escapeHtml(text); // the page's one escaper (static/pyformat.js)

  // The cells of a figure's matrices as one set of columns (widgets/matrix_plot.py side_by_side).
  function sideBySide(cells, blocks, nCols, gap) {
    const out = { x: [], y: [], value: [], text: [], row: [], col: [], matrix: [] };
    blocks.forEach((name, k) => {
      const c = cells[name];
      const shift = k * (nCols + gap);
      c.x.forEach((x) => { out.x.push(x + shift); out.matrix.push(name); });
      for (const col of ['y', 'value', 'text', 'row', 'col']) out[col].push(...c[col]);
    });
    return out;
  }

  function column(source, name) {
    return source.data instanceof Map ? source.data.get(name) : source.data[name];
  }

  // Equal entries: the same number (or both NaN).
  function sameColumn(a, b) {
    if (a === undefined || a === null || a.length !== b.length) return false;
    for (let k = 0; k < b.length; k++) {
      const x = a[k];
      const y = b[k];
      if (x === y || (Number.isNaN(x) && Number.isNaN(y))) continue;
      return false;
    }
    return true;
  }

  function setText(div, text) {
    if (div.text !== text) div.text = text;
  }

  /**
   * The writes of one state's view data into the figures and the steps panel (widgets/page.py update),
   * for the export's binding (`bind`) and a served page's own moves (`follow`). `models()` gives the
   * models as they are now (the export reads some roots later). Options: `sync: false` writes without
   * sending the change to the server, which computes the same view itself.
   */
  function painter(models, V, options) {
    const opts = options || {};
    const writeOptions = opts.sync === false ? { sync: false } : {};
    const put = (model, attrs) => model.setv(attrs, writeOptions);
    const same = sameColumn;

    function setData(source, value) {
      put(source, { data: source.data instanceof Map ? new Map(Object.entries(value)) : value });
    }

    // Write a source only when a column differs: each write re-indexes its glyphs and repaints the figure.
    function updateSource(source, value) {
      if (!Object.keys(value).every((k) => same(column(source, k), value[k]))) setData(source, value);
    }

    // A figure's size, its numbers' font, its tick labels and its note, as the view data decided them
    // (widgets/figure_text.py heatmap_layouts, static/attention.js heatmapLayouts), as widgets/matrix_plot.py
    // lay_out draws them.
    const laidOut = new WeakMap(); // plot → the layout it shows, as JSON
    // `quietly`: the figure's new size is written without telling its view: BokehJS lays a whole document
    // root out again, there and then, for each figure whose size changes (20-200 ms with the sliders in it),
    // so figures sharing a root take their sizes quietly and the last one's lays the root out for all
    // (layOutAll).
    function layOut(plot, layout, quietly) {
      const json = JSON.stringify(layout);
      if (laidOut.get(plot) === json) return;
      laidOut.set(plot, json);
      const sizes = sizesOf(plot, layout);
      if (Object.keys(sizes).length) plot.figure.setv(sizes, Object.assign({ silent: Boolean(quietly) }, writeOptions));
      const show = Boolean(layout.font);
      const font = `${layout.font}px`;
      const size = plot.numbers.glyph.text_font_size; // a value spec: {value: '11px'}
      if (show && (size && size.value !== undefined ? size.value : size) !== font) {
        put(plot.numbers.glyph, { text_font_size: font }); // before its source: one change of visuals
      }
      // Hidden numbers read an empty source (widgets/matrix_plot.py no_numbers): the one Python made, when
      // the page started with them hidden, else one made here.
      if (!show && !plot.no_numbers) {
        plot.no_numbers = new plot.source.constructor({ data: { x: [], y: [], text: [], value: [] } });
      }
      if (plot.numbers.visible !== show) put(plot.numbers, { visible: show });
      const source = show ? plot.source : plot.no_numbers;
      if (plot.numbers.data_source !== source) put(plot.numbers, { data_source: source });
      put(plot.cells_glyph, { line_color: show ? V.cell_outline : null });
      put(plot.xaxis, { major_label_orientation: layout.x_angle });
      for (const [axis, key] of [[plot.xaxis, 'x'], [plot.yaxis, 'y']]) {
        const labels = new Map(layout[`${key}_ticks`].map((t, k) => [t, layout[`${key}_labels`][k]]));
        put(axis, { major_label_overrides: labels }); // before the ticks: no frame draws old labels
        put(axis.ticker, { ticks: layout[`${key}_ticks`] });
      }
      if (plot.note.text !== layout.note) put(plot.note, { text: layout.note });
    }

    function paintPlot(plot, view, s, reshape) {
      const T = s.tokens.length;
      const dims = Array.from({ length: s.W_Q[0].length }, (_, k) => String(k));
      const [low, high] = view.limits[plot.blocks[0]];
      if (plot.mapper.low !== low || plot.mapper.high !== high) {
        put(plot.mapper, { low, high });
        put(plot.ink, { low, high });
      }
      const cols = plot.square ? s.tokens : dims;
      const cells = sideBySide(view.cells, plot.blocks, cols.length, plot.gap);
      if (reshape) {
        const span = plot.blocks.length * (cols.length + plot.gap) - plot.gap;
        put(plot.x_range, { start: -0.5, end: span - 0.5 });
        put(plot.y_range, { start: T - 0.5, end: -0.5 });
        layOut(plot, view.layout[plot.name]);
        setData(plot.source, cells);
      } else if (!same(column(plot.source, 'value'), cells.value) || !same(column(plot.source, 'text'), cells.text)) {
        const old = plot.source.data; // a Map or a plain object (as the server writes it): kept as it is
        const data = old instanceof Map ? new Map(old) : Object.assign({}, old);
        if (data instanceof Map) {
          data.set('value', cells.value);
          data.set('text', cells.text);
        } else {
          Object.assign(data, { value: cells.value, text: cells.text });
        }
        put(plot.source, { data });
      }
      if (plot.square) updateSource(plot.outline, view.outline);
      if (plot.marks) { // the weights' frames around the rows a slider's move left alone, and those it changed
        updateSource(plot.marks.unchanged, view.moved.unchanged);
        updateSource(plot.marks.changed, view.moved.changed);
      }
      if (view.lesson && plot.spotlight) { // the walk's (static/lesson_page.js)
        updateSource(plot.spotlight, HeadLessonPage.spotlightOf(view.lesson.spotlight, plot.blocks, cols.length, plot.gap));
      }
    }

    function paintBlend(view, s, reshape) {
      const b = models().blend;
      updateSource(b.values, view.blend.values);
      updateSource(b.hull, view.blend.hull);
      updateSource(b.output, view.blend.output);
      updateSource(b.links, view.blend.links);
      updateSource(b.leaders, view.blend.leaders);
      // the view data's ranges, always: it placed the names for them (on a grid: a small move keeps them)
      const [x0, x1, y0, y1] = view.bounds;
      if (b.x_range.start !== x0 || b.x_range.end !== x1) put(b.x_range, { start: x0, end: x1 });
      if (b.y_range.start !== y0 || b.y_range.end !== y1) put(b.y_range, { start: y0, end: y1 });
      if (b.xaxis.axis_label !== view.blend.axes.x) put(b.xaxis, { axis_label: view.blend.axes.x });
      if (b.yaxis.axis_label !== view.blend.axes.y) put(b.yaxis, { axis_label: view.blend.axes.y });
      if (b.note.text !== view.layout.blend.note) put(b.note, { text: view.layout.blend.note });
      if (view.lesson && b.glow) { // the walk's last step: the weighted lines and the output, lit
        updateSource(b.glow, view.lesson.glow);
        updateSource(b.ring, view.lesson.ring);
      }
    }

    // The steps panel changes on every move, the lesson's texts on every step or answer: a text is written
    // into the element its view shows where static/bokeh_seam.js can (only the texts that differ), else set
    // on the model (BokehJS renders the Div anew).
    function markupSetter(divOf) {
      return function setMarkup(text) {
        const div = divOf();
        if (!div || div.text === text) return;
        const seam = window.BokehSeam;
        if (!seam || !seam.writeDivText(div, text, writeOptions)) put(div, { text });
      };
    }
    const setSteps = markupSetter(() => models().steps);

    // The walk's and the questions' panel: its text and which of its controls show (static/lesson_page.js).
    const showLesson = HeadLessonPage.shower(() => models().lesson, put, (name) => markupSetter(() => models().lesson[name]));
    const say = HeadLessonPage.announcer();
    function paintLesson(view) {
      if (!view.lesson) return;
      showLesson(view.lesson);
      say(view.lesson.say);
    }

    function sizesOf(plot, layout) {
      const sizes = {};
      for (const key of ['frame_width', 'frame_height', 'min_width']) {
        if (plot.figure[key] !== layout[key]) sizes[key] = layout[key];
      }
      return sizes;
    }

    /** Every figure's layout, each document root laid out once: of the figures whose size changes in one
     * root, all but the last take it quietly (layOut). */
    function layOutAll(plots, view) {
      const rootOf = (plot) => {
        let v = window.Bokeh && Bokeh.index ? Bokeh.index.find_one(plot.figure) : null;
        while (v && v.parent) v = v.parent;
        return v || plot; // no view yet: nothing to lay out, on its own
      };
      const last = new Map(); // root → the last figure in it whose size changes
      for (const [name, plot] of plots) {
        if (Object.keys(sizesOf(plot, view.layout[name])).length) last.set(rootOf(plot), plot);
      }
      for (const [name, plot] of plots) layOut(plot, view.layout[name], last.get(rootOf(plot)) !== plot);
    }

    return { paintPlot, paintBlend, setSteps, paintLesson, layOutAll };
  }

  /**
   * The window whose address holds the link. The pasted fragment (app/fragment.py) runs the page in a
   * srcdoc frame, whose own address is about:srcdoc: there the link is the embedding page's, so the
   * chapter can link to a head inside its own page. Of several fragments on one page only the first
   * owns it (null for the others).
   */
  function addressWindow() {
    if (window.location.href !== 'about:srcdoc') return window;
    try {
      const host = window.parent;
      const first = host.document.querySelector('.attention-head-embed iframe');
      return first === window.frameElement ? host : null;
    } catch (err) {
      return null; // a frame the host page will not let us read
    }
  }

  /** The link's parameters: the query string, then the #fragment on top (the last value of a key wins). */
  function readLink(location) {
    const params = {};
    for (const part of [location.search, location.hash]) {
      const text = (part || '').replace(/^[?#]/, '');
      if (!text) continue;
      for (const [k, v] of new URLSearchParams(text)) params[k] = v;
    }
    return params;
  }

  // --- embedding: what the first interaction needs first, the rest right after ------------------------

  const afterPaint = () => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)));
  const whenIdle = (ms) => new Promise((done) => {
    if (typeof requestIdleCallback === 'function') requestIdleCallback(() => done(), { timeout: ms });
    else setTimeout(done, 0);
  });
  const nextTask = () => new Promise((done) => setTimeout(done, 0));

  /**
   * Makes the export's page from the JSON app/export.py writes (`configScript`: the <script> that holds
   * its configuration: which <script>s hold the document's JSON, where its roots go, and the binding's
   * configuration) and binds it (bind) as soon as its first part's views are made. The roots
   * named in `later` (the figures below the weights and the blend, the control panel, the editor, the
   * further explorers: more than half of the page's models, and not needed for a first slider move) are
   * kept apart in a <script> of their own, read, bound (page.attach) and given views each in an idle
   * moment of its own (at most LATER_MS later), so a drag started meanwhile is not held.
   * Reading a root against a document already made takes BokehJS's internals (static/bokeh_seam.js);
   * where the seam is off, Bokeh.embed.embed_items makes the whole page at once, then it is bound.
   * Runs where app/export.py puts its script (static/export_embed.js), as soon as the roots' elements are
   * parsed, not at DOMContentLoaded: the rest of the page (the training lab) is parsed after.
   */
  async function embed(configScript) {
    const read = (id) => JSON.parse(document.getElementById(id).textContent);
    const config = JSON.parse(configScript.textContent);
    const docJson = read(config.document);
    const item = config.render_item;
    let waiting = [];
    try {
      waiting = read(config.later);
    } catch (err) {
      console.error('explorer_page.js: the later roots cannot be read', err);
    }
    const element = (id) => document.getElementById(item.roots[id]);
    const seam = window.BokehSeam;
    let doc = null;
    try {
      doc = seam && waiting.length ? seam.documentFromJson(docJson) : null;
    } catch (err) {
      console.error('explorer_page.js: embedding in steps failed; the whole page at once', err);
    }
    if (doc === null) { // the document with every root, by Bokeh's embed_items
      docJson.roots = [...docJson.roots, ...waiting];
      try {
        const [views] = await Bokeh.embed.embed_items({ [item.docid]: docJson }, [item]);
        const [first] = views;
        if (first) bind(first.model.document, config.bind);
      } finally {
        embedded();
      }
      return;
    }
    performance.mark('head-embed-start');
    // one element a root, in the document's order: the later ones join as their roots are added
    const slots = doc.roots().map((root) => element(root.id));
    embedding.add(doc);
    performance.mark('head-embed-json');
    // BokehJS calls a document idle (`is_idle`, then its document_ready callbacks) once each of its roots
    // has reported its views drawn, and ignores every report after that: the roots added later would keep
    // it from ever being idle again, and tools that wait for it (screenshot and PDF exporters, link
    // checkers) would wait forever. So the first part's reports are held until the later roots are added.
    const idle = seam.holdIdle(doc);
    await Bokeh.embed.add_document_standalone(doc, document.body, slots);
    performance.mark('head-embed-views');
    bind(doc, config.bind);
    await afterPaint();
    const pages = () => bound.filter((page) => page.doc === doc);
    for (const json of waiting) {
      await whenIdle(LATER_MS);
      const name = json.attributes && json.attributes.name;
      performance.mark(`head-read-${name}`);
      // read against the document's models, as a root the server adds is read; its own models join the
      // document with it (add_root), meanwhile modelById finds them
      const { root, models } = seam.readRoot(doc, json);
      laterModels.set(doc, models);
      for (const page of pages()) page.attach(); // written up to date before its views are made
      await nextTask();
      slots.push(element(root.id));
      performance.mark(`head-add-${name}`);
      doc.add_root(root); // BokehJS makes its views in the microtasks that follow
      laterModels.delete(doc);
      await nextTask();
      performance.mark(`head-added-${name}`);
      for (const page of pages()) page.watch();
    }
    embedding.delete(doc);
    performance.mark('head-embed-complete');
    embedded();
    for (const page of pages()) page.complete = true;
    idle.release();
  }

  // What waits for the explorer to be made whole (afterEmbed): the training lab below it (app/export_lab.py),
  // which would otherwise be drawn, and laid out in every layout pass BokehJS forces, before the explorer.
  const afterEmbedDone = [];
  let embedDone = false;
  function embedded() {
    embedDone = true;
    for (const callback of afterEmbedDone.splice(0)) {
      try { callback(); } catch (err) { console.error(err); }
    }
  }
  /** Runs `callback` once embed has made every root (at once if it has); should embed never run or end,
   * AFTER_EMBED_MS after the page's load event at the latest. */
  function afterEmbed(callback) {
    if (embedDone) return callback();
    afterEmbedDone.push(callback);
    const late = () => setTimeout(embedded, AFTER_EMBED_MS);
    if (document.readyState === 'complete') late();
    else window.addEventListener('load', late, { once: true });
  }
  const AFTER_EMBED_MS = 10000;
  const SETTLE_AFTER_MS = 200; // without a move, before the parts out of sight catch up (bind and follow)
  const LINK_AFTER_MS = 300; // a lesson press's address waits this long for the next press (bind)
  // A lesson press the server has not said it applied is drawn on top of its state for at most this long (a
  // server that restarted counts its presses from 0 again).
  const PENDING_MS = 5000;
  const LATER_MS = 300; // the longest a root read later waits for an idle moment
  const embedding = new WeakSet(); // documents whose later roots embed has still to add
  const laterModels = new WeakMap(); // document → Map(id → model) of the root read and not yet added

  /** A model of `doc` by id, also while it waits in a root that `embed` has read and not yet added;
   * null for one in a root not read yet. */
  function modelById(doc, id) {
    const model = doc.get_model_by_id(id);
    if (model) return model;
    const later = laterModels.get(doc);
    return later ? later.get(id) || null : null;
  }

  /**
   * `seen(name, visible)` each time the view of a named model comes into sight (within 100 px) or leaves
   * it. Returns watch(models by name), which starts watching those whose views exist (a model without a
   * view yet counts as on screen, and may be offered again); null without IntersectionObserver or
   * BokehJS's index of views.
   */
  function screenWatcher(seen) {
    if (typeof IntersectionObserver !== 'function' || !window.Bokeh || !Bokeh.index) return null;
    const names = new Map(); // element → name
    const watched = new Set();
    const observer = new IntersectionObserver((entries) => {
      for (const entry of entries) seen(names.get(entry.target), entry.isIntersecting);
    }, { rootMargin: '100px' });
    return (models) => {
      for (const [name, model] of Object.entries(models)) {
        if (watched.has(name) || model === null) continue;
        const view = Bokeh.index.find_one(model);
        if (!view || !view.el) continue;
        watched.add(name);
        names.set(view.el, name);
        observer.observe(view.el);
      }
    };
  }

  /**
   * A phone reader sees what they drag. Where the page is narrow the weights and the blend stand one above
   * the other over the token sliders, and a slider far down the list would leave both off screen. So while
   * the sliders are in view and the figures have scrolled off the top, the two figures are drawn over the
   * top of the visible part of the page (moved by a transform: nothing else moves, and a slider under a
   * finger stays where it is), and the sliders pass under them. A slider that takes the keyboard's focus
   * under them is scrolled into the part below them. In the fragment's frame (app/fragment.py), which is as
   * tall as its content and so never scrolls itself, "visible" is what the embedding page shows of the
   * frame, below any bar fixed to the top of that page. Wider pages (the sliders beside a figure) are left
   * as they are. Returns a function that places the figures again (after a new shape's sliders).
   */
  function pinFigures(figures, sliders) {
    if (!window.Bokeh || !Bokeh.index) return () => {};
    // the figures stand above the sliders (a narrow page) rather than beside them
    const stacked = (figuresBottom, sliders) => sliders.top >= figuresBottom - 1;
    const moved = (el) => {
      const m = /translateY\((-?[\d.]+)px\)/.exec(el.style.transform);
      return m ? Number(m[1]) : 0;
    };
    const FOCUS_SCROLL_MS = 1000; // a scroll that ends this soon after a focus is the browser's, to show it
    const host = hostWindow();
    const els = () => figures.map((m) => Bokeh.index.find_one(m)).map((v) => (v ? v.el : null));
    const box = () => { const v = Bokeh.index.find_one(sliders); return v ? v.el : null; };
    let offset = 0;
    let due = false;
    let headerAt = -1; // the embedding page's fixed top bar, measured once per width
    function visibleTop() { // in this window's coordinates
      if (host === window) return 0;
      const frame = window.frameElement.getBoundingClientRect();
      if (headerAt < 0) headerAt = fixedBarHeight(host, frame);
      return Math.max(0, headerAt - frame.top);
    }
    function visibleBottom() {
      if (host === window) return window.innerHeight;
      const frame = window.frameElement.getBoundingClientRect();
      return Math.min(window.innerHeight, host.innerHeight - frame.top);
    }
    function place() {
      due = false;
      const [a, b] = els();
      const list = box();
      if (!a || !b || !list || !a.isConnected) return;
      const ra = a.getBoundingClientRect(), rb = b.getBoundingClientRect(), rs = list.getBoundingClientRect();
      const top = ra.top - moved(a); // where the figures stand unmoved
      const height = rb.bottom - moved(b) - top;
      const vt = visibleTop();
      // the sliders below both figures, some of them below where the figures would stand: follow
      const pinned = stacked(rb.bottom - moved(b), rs) && top < vt && rs.bottom > vt + height &&
        rs.top < visibleBottom();
      offset = pinned ? vt - top : 0;
      // (written each time: BokehJS may lay a figure out anew, and its element's style with it)
      // white beside them and in the gap between them, so no slider shows through; a shade under the last
      const white = '0 10px 0 0 white, 420px 0 0 0 white';
      for (const el of [a, b]) {
        const style = {
          transform: offset ? `translateY(${offset}px)` : '',
          zIndex: offset ? '5' : '',
          background: offset ? 'white' : '',
          boxShadow: !offset ? '' : el === b ? `${white}, 0 6px 6px -6px rgba(0, 0, 0, 0.35)` : white,
        };
        for (const [key, value] of Object.entries(style)) if (el.style[key] !== value) el.style[key] = value;
      }
    }
    // A slider that takes the keyboard's focus where the figures would cover it (the browser scrolls it just
    // into view, often to the top or bottom edge) is scrolled to just below where they stand over the page;
    // one below the screen, up into it (as far as the figures leave room).
    function uncover() {
      const [a, b] = els();
      const list = box();
      if (!a || !b || !list || !stacked(b.getBoundingClientRect().bottom - moved(b), list.getBoundingClientRect())) return;
      let el = document.activeElement;
      while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
      if (!el || el === document.body || !inside(el, list)) return;
      const slider = el.getRootNode().host || el; // the whole slider, its title too
      const height = b.getBoundingClientRect().bottom - a.getBoundingClientRect().top;
      const r = slider.getBoundingClientRect();
      const under = visibleTop() + height + 4 - r.top; // > 0: covered by the figures over the page
      const past = r.bottom + 4 - visibleBottom(); // > 0: below the screen
      const by = under > 0 ? -under : past > 0 ? Math.min(past, -under) : 0;
      if (by) host.scrollBy({ top: by, behavior: 'instant' }); // (a theme may scroll smoothly)
      place();
    }
    const soon = () => {
      if (!due) {
        due = true;
        requestAnimationFrame(place);
      }
    };
    const watch = [window];
    if (host !== window) watch.push(host);
    for (const w of watch) {
      w.addEventListener('scroll', soon, { passive: true });
      w.addEventListener('resize', () => { headerAt = -1; soon(); }, { passive: true });
    }
    // (and again once the browser's own scroll to the focused slider has ended: a theme may make it smooth).
    // A focus that moves from one slider to another within the sliders' box sends no focusin to the document
    // (the two are the same element there, once shadow roots are looked through): a Tab's keyup does come.
    let focusedAt = -Infinity;
    const focused = () => {
      focusedAt = performance.now();
      requestAnimationFrame(uncover);
    };
    document.addEventListener('focusin', focused);
    document.addEventListener('keyup', (event) => { if (event.key === 'Tab') focused(); });
    const afterScroll = () => { if (performance.now() - focusedAt < FOCUS_SCROLL_MS) uncover(); };
    for (const w of watch) w.addEventListener('scrollend', afterScroll, { passive: true });
    soon();
    return soon;
  }

  /** Whether `el` lies within `container`, across shadow roots. */
  function inside(el, container) {
    for (; el; el = el.parentElement || (el.getRootNode && el.getRootNode().host) || null) {
      if (el === container) return true;
    }
    return false;
  }

  /** The window that scrolls the page: this one, or the embedding page of the fragment's srcdoc frame. */
  function hostWindow() {
    try {
      if (window.frameElement && window.location.href === 'about:srcdoc') return window.parent;
    } catch (err) {
      // a frame the host page will not let us read: as a page of its own
    }
    return window;
  }

  /** How far down the embedding page's bars fixed to the top of its window reach (a theme's header): the
   * first point down the frame's middle whose element is not in a fixed or sticky box. */
  function fixedBarHeight(host, frame) {
    const x = Math.min(Math.max(frame.left + frame.width / 2, 0), host.innerWidth - 1);
    const fixed = (el) => {
      for (; el && el !== host.document.body; el = el.parentElement) {
        if (/^(fixed|sticky)$/.test(host.getComputedStyle(el).position)) return true;
      }
      return false;
    };
    for (let y = 0; y < Math.min(200, host.innerHeight); y += 4) {
      if (!fixed(host.document.elementFromPoint(x, y))) return y;
    }
    return 0;
  }

  /** A configuration's `models` with each {id} in it replaced by that model of `doc` (modelById). */
  function resolveModels(doc, ref) {
    if (Array.isArray(ref)) return ref.map((r) => resolveModels(doc, r));
    if (ref && typeof ref === 'object') {
      if (Object.keys(ref).length === 1 && 'id' in ref) return modelById(doc, ref.id);
      return Object.fromEntries(Object.entries(ref).map(([k, v]) => [k, resolveModels(doc, v)]));
    }
    return ref;
  }

  function bind(doc, config) {
    const had = bound.find((page) => page.doc === doc && !page.served);
    if (had) return had;
    performance.mark('head-bind-start'); // bench/bench_export.py reports where the start-up time goes
    const logic = HeadLogic.make(config);
    const V = config.view;
    const get = (ref) => resolveModels(doc, ref);
    // The models of a root that embed reads later are null until then (page.attach resolves them again).
    let M = get(config.models);
    let C_ = M.controls; // its sliders (C_.tokens) come first; the rest of the panel may be read later
    let E = M.editor;
    const SWITCHES = config.switches;
    let state = logic.initial();
    const { paintPlot, paintBlend, setSteps, paintLesson, layOutAll } = painter(() => M, V);
    let syncing = false;
    const page = { doc, config, get state() { return state; }, dispatch, logic, watchers: [] };
    bound.push(page);

    // --- state → figures -------------------------------------------------------------

    const shapeOf = (s) => JSON.stringify([s.tokens, s.X[0].length, s.W_Q[0].length]);
    const sliderShape = (s) => JSON.stringify([s.tokens, s.X[0].length]); // one slider a token and component

    // --- what is on screen ------------------------------------------------------------
    // BokehJS repaints every figure whose data changed, in the frame after a move; a figure scrolled out of
    // sight is not written until it comes back into view or the moves stop (page.settleAfter ms without one, or the
    // slider let go), so a drag costs the figures in sight. Same for the editor's W grids, which a new shape
    // makes anew. Until the browser first reports, everything counts as on screen.

    page.settleAfter = SETTLE_AFTER_MS; // (a test may lengthen it)
    const parts = {}; // name → { visible, stale (null, 'update' or 'reshape'), catchUp(reshape) }
    let settleTimer = null;

    // A part whose models are not read yet (`model` null) is not written: it catches up in page.attach.
    function part(name, model, catchUp) {
      parts[name] = { visible: true, stale: null, model, catchUp };
    }
    for (const name of Object.keys(M.plots)) {
      part(name, M.plots[name].figure, (reshape) => paintPlot(M.plots[name], logic.render(state), state, reshape));
    }
    part('blend', M.blend.figure, (reshape) => paintBlend(logic.render(state), state, reshape));
    part('editor', E.area, () => syncEditor(state));

    function isStale(name, reshape) {
      const p = parts[name];
      if (p.model === null) { // not read yet: page.attach catches it up, whatever happens meanwhile
        p.stale = 'reshape';
        return true;
      }
      if (p.visible) return false;
      p.stale = reshape || p.stale === 'reshape' ? 'reshape' : 'update';
      clearTimeout(settleTimer);
      settleTimer = setTimeout(settle, page.settleAfter);
      return true;
    }

    function bringUpToDate(name) {
      const p = parts[name];
      if (p.stale === null || p.model === null) return;
      const reshape = p.stale === 'reshape';
      p.stale = null;
      syncing = true;
      try { p.catchUp(reshape); } finally { syncing = false; }
    }

    function settle() {
      clearTimeout(settleTimer);
      settleTimer = null;
      for (const name of Object.keys(parts)) bringUpToDate(name);
    }

    // Parts whose views exist are watched; one without a view yet (a root that embed adds later) counts as
    // on screen, and its models are written directly, until `page.watch` runs again once it has one.
    let watch = null;
    function watchScreen() {
      watch = watch || screenWatcher((name, visible) => {
        parts[name].visible = visible;
        if (visible) bringUpToDate(name);
      });
      if (watch) watch(Object.fromEntries(Object.entries(parts).map(([name, p]) => [name, p.model])));
    }
    page.parts = parts; // for tests: which parts wait for a catch-up
    page.settle = settle;
    page.watch = watchScreen;

    function paint(view, s, reshape) {
      // Every figure's new size first, then the new data: a change of size makes BokehJS redo the text
      // visuals of the page's figures at once, which must not fall between a figure's new data and its
      // text's (BokehJS makes a text glyph's labels a microtask after its data).
      // (a figure out of sight is laid out when it catches up)
      if (reshape) layOutAll(Object.entries(M.plots).filter(([name]) => parts[name].model !== null && parts[name].visible), view);
      for (const [name, plot] of Object.entries(M.plots)) {
        if (!isStale(name, reshape)) paintPlot(plot, view, s, reshape);
      }
      if (!isStale('blend', reshape)) paintBlend(view, s, reshape);
      setSteps(view.steps + view.checks); // widgets/page.py readout_html
      paintLesson(view);
    }

    // --- state → controls ------------------------------------------------------------

    const SliderClass = M.controls.tokens.children[0].children[0].constructor;
    const RowClass = M.controls.tokens.children[0].constructor;
    const NumberClass = () => E.grids.W_Q.children[1].children[0].constructor; // once the editor is read

    function sliderRange(v) {
      const t = Math.trunc(v);
      return [Math.min(V.slider.low, t - (v < 0 ? 1 : 0)), Math.max(V.slider.high, t + (v > 0 ? 1 : 0))];
    }

    // widgets/controls.py TokenSliders.rebuild
    function buildSliders(s) {
      const titles = s.tokens.map((label) => shortLabel(label, V.slider.label_chars));
      const longest = Math.max(0, ...titles.map((t) => Array.from(t).length));
      const perRow = longest <= V.slider.three_a_row_up_to ? V.slider.per_row : V.slider.per_row - 1;
      const rows = [];
      const sliders = s.X.map((vector, t) => vector.map((v, c) => {
        const [start, end] = sliderRange(v);
        const slider = new SliderClass({
          title: `${titles[t]}[${c}]`, value: v, start, end, step: V.slider.step,
          width: Math.floor(V.slider.row_px / Math.min(vector.length, perRow)) - 6,
          name: `x-${t}-${c}`, format: '0.00', tags: [t, c], css_classes: ['x-slider'],
        });
        wireSlider(slider, t, c);
        return slider;
      }));
      for (const line of sliders) {
        for (let k = 0; k < line.length; k += perRow) {
          rows.push(new RowClass({ children: line.slice(k, k + perRow), css_classes: ['token-row'] }));
        }
      }
      C_.tokens.children = rows;
      page.sliders = sliders;
      page.slidersShape = sliderShape(s);
      if (page.pin) page.pin(); // the sliders' box has another height
    }

    function showSliderValues(s) {
      page.sliders.forEach((line, t) => line.forEach((slider, k) => {
        const x = s.X[t][k];
        const [start, end] = sliderRange(x);
        const change = {};
        if (slider.start !== start) change.start = start;
        if (slider.end !== end) change.end = end;
        if (slider.value !== x) change.value = x;
        if (Object.keys(change).length) slider.setv(change);
      }));
    }

    // A new shape repaints the figures first: BokehJS making the new slider views and laying out their
    // rows (and the editor's W grids, when in sight) costs more than the figures (~100-250 ms for the
    // chapter's 12 sliders ⇄ "tired"'s 40), so the controls follow in a task after the frame that shows
    // the new figures, with the state of that moment (syncControls). Until then the old sliders and grids
    // stand and are not listened to (their tokens and components may not exist any more).
    let controlsDue = false;
    function syncControlsSoon() {
      if (controlsDue) return;
      controlsDue = true;
      requestAnimationFrame(() => setTimeout(() => {
        controlsDue = false;
        syncControls(state);
      }, 0));
    }
    const slidersCurrent = () => !controlsDue && page.slidersShape === sliderShape(state);

    function buildGrid(name, W) {
      const grid = E.grids[name];
      const title = grid.children[0];
      const cells = W.map((line, r) => line.map((v, c) => {
        const box = new (NumberClass())({ value: v, mode: 'float', width: V.grid_width, name: `${name}-${r}-${c}`, tags: [r, c] });
        wireEntry(box, name, r, c);
        return box;
      }));
      grid.children = [title, ...cells.map((line) => new RowClass({ children: line }))];
      page.grids[name] = cells;
    }

    function showSwitch(s, widget, value) {
      if (s.kind === 'toggle') {
        const on = Array.from(widget.active || []).indexOf(0) >= 0;
        if (on !== value) widget.active = value ? [0] : [];
      } else if (s.kind === 'choice') {
        const k = s.choices.indexOf(value);
        if (widget.active !== k) widget.active = k;
      } else if (widget.value !== value) {
        widget.value = value;
      }
    }

    const messageMarkup = (s) => (s.message ? `<div class="alert">${esc(s.message)}</div>` : '');

    // The editor's fields, from the state (widgets/editor.py).
    function syncEditor(s) {
      setText(E.message, messageMarkup(s));
      const labels = s.tokens.join(', ');
      if (E.labels.value !== labels) E.labels.value = labels;
      const C = s.X[0].length;
      const d = s.W_Q[0].length;
      if (E.C.value !== C) E.C.value = C;
      if (E.d.value !== d) E.d.value = d;
      for (const name of ['W_Q', 'W_K', 'W_V']) {
        const W = s[name];
        const cells = page.grids[name];
        if (!cells || cells.length !== W.length || cells[0].length !== W[0].length) buildGrid(name, W);
        else cells.forEach((line, r) => line.forEach((box, c) => { if (box.value !== W[r][c]) box.value = W[r][c]; }));
      }
      const options = Array.from({ length: d }, (_, k) => String(k));
      for (const [select, k] of [[E.dim_x, 0], [E.dim_y, 1]]) {
        if (JSON.stringify(select.options) !== JSON.stringify(options)) select.options = options;
        if (select.value !== String(s.dims[k])) select.value = String(s.dims[k]);
        if (select.disabled !== d <= 2) select.disabled = d <= 2;
      }
      setText(E.dims_note, d > 2 ? `d = ${d}: the blend plot shows two of the ${d} value coordinates, chosen above.`
        : d === 1 ? 'd = 1: the blend plot puts every value on one line.' : '');
    }

    // The control panel (preset, query, switches, note, message), once its root is read (embed).
    function syncPanel(s, newTokens) {
      if (!C_.preset) return; // page.attach writes it when it comes
      if (newTokens) C_.query.options = s.tokens.map((label, k) => [String(k), String(label)]);
      if (C_.query.value !== String(s.query)) C_.query.value = String(s.query);
      for (const sw of SWITCHES) showSwitch(sw, C_.switches[sw.name], s[sw.name]);
      const preset = s.preset || config.custom;
      if (C_.preset.value !== preset) C_.preset.value = preset;
      const note = config.notes[s.preset];
      setText(C_.note, note !== undefined ? note : config.notes['']);
      setText(C_.message, messageMarkup(s));
    }

    let controlsShow = null; // the state the controls show: the figures' one, or the one before it for a task
    function syncControls(s) {
      const old = controlsShow;
      controlsShow = s;
      syncing = true;
      try {
        const newTokens = !old || JSON.stringify(old.tokens) !== JSON.stringify(s.tokens);
        if (old && shapeOf(old) !== shapeOf(s) && window.A11y) { // static/a11y.js: names follow the tokens
          window.A11y.renameControls(doc, s.tokens, s.X[0].length, s.W_Q[0].length);
        }
        if (!old || sliderShape(old) !== sliderShape(s)) buildSliders(s);
        else showSliderValues(s);
        syncPanel(s, newTokens);
        if (!isStale('editor', !old)) syncEditor(s);
        if (E.message) setText(E.message, messageMarkup(s)); // else syncEditor writes it once it is read
        if (lessonWired) syncLesson(s, !old || old.question !== s.question || old.revealed !== s.revealed);
      } finally {
        syncing = false;
      }
    }

    // --- the link in the address bar ------------------------------------------------

    // Only the first explorer on a page owns its address: two pasted fragments would overwrite each other's.
    const linkWindow = addressWindow();
    const ownsLink = () => config.link && bound[0] === page && linkWindow !== null;

    function writeLink() {
      clearTimeout(linkTimer);
      if (!ownsLink()) return;
      try {
        const hash = '#' + new URLSearchParams(logic.encodeLink(state)).toString();
        if (linkWindow.location.hash !== hash) linkWindow.history.replaceState(linkWindow.history.state, '', hash);
      } catch (err) {
        // a sandboxed frame may refuse; the page still works
      }
    }
    // A walk step or an answer writes the address once the lesson rests (replaceState costs ~2 ms, a step's
    // frame budget is ~16), as a drag does when the slider is let go.
    let linkTimer = null;
    function writeLinkSoon() {
      clearTimeout(linkTimer);
      linkTimer = setTimeout(writeLink, LINK_AFTER_MS);
    }

    // --- events → state ---------------------------------------------------------------

    const inputsOf = (s) => JSON.stringify(Object.assign({}, s, { message: '' }));

    function show(next, old, { link = true } = {}) {
      state = next;
      let reshape = false;
      if (inputsOf(next) !== inputsOf(old)) {
        reshape = shapeOf(next) !== shapeOf(old);
        paint(logic.render(next), next, reshape);
        for (const watch of page.watchers) watch(next); // other views of this head (static/explorer_tabs.js)
      }
      if (reshape || controlsDue) syncControlsSoon(); // the figures' frame first
      else syncControls(next);
      if (link) writeLink();
    }

    function dispatch(action, options) {
      try {
        show(logic.apply(state, action), state, options);
      } catch (err) { // a bug must not break the page: say so, keep the last state
        console.error(err);
        show(Object.assign({}, state, { message: `That change could not be applied (${err && err.name ? err.name : 'Error'}).` }), state);
      }
    }

    const on = (model, prop, handler) => model.connect(model.properties[prop].change, () => {
      if (!syncing) handler(model[prop]);
    });

    function needsNumber(field, handler) {
      return (value) => {
        if (value === null || value === undefined) {
          show(Object.assign({}, state, { message: `${field} needs a number; kept the last one.` }), state);
        } else {
          handler(value);
        }
      };
    }

    function wireSlider(slider, t, c) {
      on(slider, 'value', (value) => {
        if (slidersCurrent() && value !== state.X[t][c]) dispatch({ do: 'x', token: t, component: c, value }, { link: false });
      });
      on(slider, 'value_throttled', () => { settle(); writeLink(); }); // let go: the hidden parts catch up
    }

    function wireEntry(box, name, r, c) {
      on(box, 'value', needsNumber(`${name}[${r}, ${c}]`, (value) => {
        if (!controlsDue && value !== state[name][r][c]) dispatch({ do: 'weight', name, row: r, col: c, value });
      }));
    }

    function wirePanel() {
      on(C_.query, 'value', (value) => {
        const i = parseInt(value, 10);
        if (!controlsDue && i !== state.query) dispatch({ do: 'query', index: i });
      });
      for (const sw of SWITCHES) {
        const widget = C_.switches[sw.name];
        if (sw.kind === 'toggle') {
          on(widget, 'active', (active) => dispatch({ do: 'option', name: sw.name, value: Array.from(active || []).indexOf(0) >= 0 }));
        } else if (sw.kind === 'choice') {
          on(widget, 'active', (k) => dispatch({ do: 'option', name: sw.name, value: sw.choices[k] }));
        } else {
          on(widget, 'value', needsNumber(sw.label, (value) => {
            if (value !== state[sw.name]) dispatch({ do: 'option', name: sw.name, value }, { link: !sw.slider });
          }));
          if (sw.slider) on(widget, 'value_throttled', () => { settle(); writeLink(); });
        }
      }
      on(C_.preset, 'value', (name) => {
        if (name !== config.custom && name !== state.preset) dispatch({ do: 'preset', name });
      });
      C_.reset.on_event('button_click', () => dispatch({ do: 'reset' }));
    }
    // The editor and the downloads, once their root is read (embed), with the W grids Python made.
    function wireEditor() {
      on(E.labels, 'value', (text) => dispatch({ do: 'labels', text }));
      E.add.on_event('button_click', () => dispatch({ do: 'add' }));
      E.remove.on_event('button_click', () => dispatch({ do: 'remove' }));
      on(E.C, 'value', needsNumber('C', (C) => { if (C !== state.X[0].length) dispatch({ do: 'widths', C }); }));
      on(E.d, 'value', needsNumber('d', (d) => { if (d !== state.W_Q[0].length) dispatch({ do: 'widths', d }); }));
      on(E.dim_x, 'value', (v) => dispatch({ do: 'dims', value: [parseInt(v, 10), state.dims[1]] }));
      on(E.dim_y, 'value', (v) => dispatch({ do: 'dims', value: [state.dims[0], parseInt(v, 10)] }));

      function download(text, filename, type) {
        const url = URL.createObjectURL(new Blob([text], { type }));
        const a = document.createElement('a');
        a.href = url;
        a.download = filename;
        document.body.appendChild(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(url), 1000);
      }
      M.downloads.json.on_event('button_click', () => download(logic.asJson(state), 'attention-head.json', 'application/json'));
      M.downloads.csv.on_event('button_click', () => download(logic.asCsv(state), 'attention-head.csv', 'text/csv'));
      for (const name of ['W_Q', 'W_K', 'W_V']) {
        page.grids[name] = E.grids[name].children.slice(1).map((row) => row.children);
        page.grids[name].forEach((line) => line.forEach((box) => wireEntry(box, name, box.tags[0], box.tags[1])));
      }
    }

    // The walk's and the questions' buttons (static/lesson_page.js), then the focus where the lesson goes on.
    // Their root is read later (embed): until then the lesson's models are null; page.attach wires them.
    const kindOf = (s) => (s.question ? logic.bank.pose(s.question).kind : '');
    let lessonWired = false;
    function wireLesson() {
      const L = M.lesson;
      HeadLessonPage.wire(L, (action) => {
        dispatch(action, { link: false });
        writeLinkSoon();
        HeadLessonPage.focusAfter(L, action.do, state, kindOf(state));
      }, () => kindOf(state));
      on(L.ask, 'value', (name) => { if (name !== state.question) dispatch({ do: 'ask', name }); });
      lessonWired = true;
    }
    function syncLesson(s, asked) { // the lesson's controls' values (its text and spotlights are paint's)
      const L = M.lesson;
      HeadLessonPage.sync(L, s, asked, kindOf(s), config.lessons.estimate[3]);
      setText(L.message, messageMarkup(s));
      if (L.message.visible !== Boolean(s.message)) L.message.visible = Boolean(s.message);
    }
    if (M.lesson.ask) wireLesson();

    // The sliders Python made get the same wiring as the ones made here.
    page.sliders = [];
    page.slidersShape = sliderShape(state);
    page.grids = {};
    for (const slider of C_.tokens.children.flatMap((row) => row.children)) {
      const [t, c] = slider.tags;
      (page.sliders[t] = page.sliders[t] || [])[c] = slider;
      wireSlider(slider, t, c);
    }
    let editorWired = false;
    if (E.labels) { wireEditor(); editorWired = true; }
    let panelWired = false;
    if (C_.preset) { wirePanel(); panelWired = true; }

    /** embed has read a root it adds later: its models are resolved, wired, and brought up to date with
     * the state (a move or a link may have come first) before BokehJS makes their views. */
    page.attach = function attach() {
      M = get(config.models);
      E = M.editor;
      C_ = M.controls;
      if (!editorWired && E.labels) { wireEditor(); editorWired = true; }
      if (!panelWired && C_.preset) {
        wirePanel();
        panelWired = true;
        syncing = true;
        try { syncPanel(controlsShow || state, true); } finally { syncing = false; }
      }
      if (!lessonWired && M.lesson.ask) {
        wireLesson();
        syncing = true;
        try {
          syncLesson(controlsShow || state, true);
          paintLesson(logic.render(state)); // a link or a move may have come first
        } finally { syncing = false; }
      }
      const models = { editor: E.area, blend: M.blend.figure };
      for (const name of Object.keys(M.plots)) models[name] = M.plots[name].figure;
      for (const [name, p] of Object.entries(parts)) {
        if (p.model !== null || !models[name]) continue;
        p.model = models[name];
        bringUpToDate(name);
      }
    };

    // A link opens the head it names (the page starts on config.start without one).
    const params = ownsLink() ? readLink(linkWindow.location) : {};
    controlsShow = state; // as Python made them
    if (Object.keys(params).length) dispatch({ do: 'link', params });
    else syncControls(state);
    afterPaint().then(watchScreen); // not on the way to the first frame: until then every part is written
    afterPaint().then(() => { page.pin = pinFigures([M.plots.weights.figure, M.blend.figure], C_.tokens); });
    page.ready = true;
    page.complete = !embedding.has(doc); // every root has its views (see embed)
    performance.mark('head-bind-end');
    return page;
  }


  /**
   * A served page (app/served_page.py) draws a student's own moves. The server stays the authority: it
   * applies every value it receives, and publishes its state (widgets/channel.py: the channel's `state`)
   * with every change that is not a drag. But under a class's load its answer can come a second after
   * the move, so the page does not wait for it: it shows the server's state with what its own controls
   * hold (the token sliders, the query picker, the switches), which is always the newest (the student's
   * move, or the server's value when it sets them), written without syncing it back. After each answer
   * the same is done again in the same task, before the next frame, so an answer to an older move is
   * never seen. Once set up, the page sets the channel's `drawn_by` to "page" and the server sends
   * nothing of the figures for a drag, which the page has drawn already; while `drawn_by` is "server"
   * (the page's drawing failed, or a test or benchmark asked for the server's answers alone) the page
   * draws nothing. Only the figures and the steps panel are drawn here; the rest (the controls, the
   * preset's note, the editor, the address) is the server's, as are presets, edits and the teacher's
   * sends, each of which publishes the state anew.
   */
  function follow(doc, config) {
    const logic = HeadLogic.make(config);
    const M = resolveModels(doc, config.models);
    // Python's and JavaScript's numbers agree to the last bit (tests/test_actions.py requires it), so the
    // server's answer to a move the page has drawn is found equal and not written again.
    const { paintPlot, paintBlend, setSteps, paintLesson } = painter(() => M, config.view, { sync: false });
    const page = { doc, config, served: true, drawn: 0, failed: 0, state: null };

    const published = () => {
      try {
        return JSON.parse(M.channel.state);
      } catch (err) {
        return null;
      }
    };
    let server = published(); // the server's state, but for what the page's own controls hold

    const sliders = () => M.tokens.children.flatMap((row) => row.children);
    const SWITCHES = config.switches;
    function switchValue(sw, widget) { // as widgets/controls.py widget_value reads it
      if (sw.kind === 'toggle') return Array.from(widget.active || []).indexOf(0) >= 0;
      if (sw.kind === 'choice') return sw.choices[widget.active];
      return typeof widget.value === 'number' ? widget.value : null; // an emptied box: the server says so
    }
    // The server's state with what the controls hold now: X from the token sliders, the query picker's
    // token, each switch, the question picked; then the lesson's presses the server has not applied yet
    // (the channel's `presses` says how many it has). The controls are not read when the sliders are of another
    // shape (a new shape's sliders come in the same answer as its state). What the controls hold is
    // checked as the server checks it.
    const L = M.lesson;
    const kindOf = (s) => (s.question ? logic.bank.pose(s.question).kind : '');
    let pending = []; // {n: the channel's count of presses once the server has this one, action, at}
    let presses = M.channel.presses; // this page's presses, counted as the server counts them
    function predicted() {
      let s = server;
      const moved = [];
      let fits = true;
      for (const slider of sliders()) {
        const [t, c] = slider.tags;
        if (!(t < server.X.length && c < server.X[t].length)) fits = false;
        else if (slider.value !== server.X[t][c]) moved.push({ do: 'x', token: t, component: c, value: slider.value });
      }
      if (fits) {
        for (const move of moved) s = logic.apply(s, move);
        const query = parseInt(M.query.value, 10);
        if (query !== s.query && query >= 0 && query < s.tokens.length) s = logic.apply(s, { do: 'query', index: query });
        for (const sw of SWITCHES) {
          const value = switchValue(sw, M.switches[sw.name]);
          if (value !== null && value !== s[sw.name]) s = logic.apply(s, { do: 'option', name: sw.name, value });
        }
      }
      // the picker against the server's own question: a drag that closes an answered one leaves it as it was
      if (L.ask.value !== server.question) s = logic.apply(s, { do: 'ask', name: L.ask.value });
      for (const p of pending) s = logic.apply(s, p.action);
      return s;
    }

    // A heatmap out of sight is not written while the student moves (BokehJS would repaint it unseen,
    // and a 64-token head's lower figures cost more than the ones in view): it is brought up to date
    // when it comes into view, or page.settleAfter ms after the last move.
    page.settleAfter = SETTLE_AFTER_MS;
    const inView = new Map(); // heatmap name → false while its figure is out of sight
    page.inView = inView; // (what the screen has reported so far: tests wait for it)
    const behind = new Set(); // heatmaps not written since the last move
    let settleTimer = null;
    function watchScreen() {
      const watch = screenWatcher((name, visible) => {
        inView.set(name, visible);
        if (visible && behind.has(name)) soon();
      });
      if (watch) watch(Object.fromEntries(Object.entries(M.plots).map(([name, plot]) => [name, plot.figure])));
    }

    let due = false;
    let stopped = false;
    let drawn = server; // the state drawn last: one slider apart from the next, it is the head before a move
    let publishedText = M.channel.state; // a new one is a change the server made (a preset, an edit): no move
    // Only what differs from what is shown is written, so a server's answer with the same
    // numbers costs the page one comparison.
    function refresh(everything) {
      due = false;
      if (stopped || M.channel.drawn_by !== 'page') return;
      server = published() || server;
      if (!server) return;
      const now = performance.now();
      pending = pending.filter((p) => p.n > M.channel.presses && now - p.at < PENDING_MS);
      try {
        const fresh = M.channel.state !== publishedText;
        publishedText = M.channel.state;
        const s = fresh ? Object.assign({}, predicted(), { moved: null }) : logic.sliderMove(drawn, predicted());
        drawn = s;
        page.state = s;
        const view = logic.render(s);
        for (const [name, plot] of Object.entries(M.plots)) {
          if (everything || inView.get(name) !== false) {
            paintPlot(plot, view, s, false);
            behind.delete(name);
          } else {
            behind.add(name);
          }
        }
        paintBlend(view, s, false);
        setSteps(view.steps + view.checks);
        paintLesson(view);
        page.drawn += 1;
        clearTimeout(settleTimer);
        if (behind.size) settleTimer = setTimeout(() => refresh(true), page.settleAfter);
      } catch (err) { // a bug here must not leave the figures still: the server draws every move again
        console.error(err);
        page.failed += 1;
        stopped = true;
        M.channel.drawn_by = 'server';
      }
    }
    // Once per batch of changes: a slider moved, or the server's answer (its figures, sliders and state
    // arrive as one message, read in one task).
    const soon = () => {
      if (!due) {
        due = true;
        queueMicrotask(() => refresh(false));
      }
    };

    const wired = new WeakSet();
    function wire() {
      for (const slider of sliders()) {
        if (wired.has(slider)) continue;
        wired.add(slider);
        slider.connect(slider.properties.value.change, soon);
      }
    }
    M.tokens.connect(M.tokens.properties.children.change, () => { wire(); soon(); });
    M.channel.connect(M.channel.properties.state.change, soon);
    M.channel.connect(M.channel.properties.presses.change, soon);
    L.ask.connect(L.ask.properties.value.change, soon);
    // A lesson button: the server applies its click; the page draws the press at once, on top of the server's
    // state until the channel's `presses` says the server has it (the focus then goes where the lesson goes on).
    HeadLessonPage.wire(L, (action) => {
      presses += 1;
      pending.push({ n: presses, action, at: performance.now() });
      refresh(false);
      if (page.state) HeadLessonPage.focusAfter(L, action.do, page.state, kindOf(page.state));
    }, () => (page.state ? kindOf(page.state) : ''));
    M.query.connect(M.query.properties.value.change, soon);
    for (const sw of SWITCHES) {
      const widget = M.switches[sw.name];
      widget.connect(widget.properties[sw.kind === 'number' ? 'value' : 'active'].change, soon);
    }
    wire();
    watchScreen();
    page.pin = pinFigures([M.plots.weights.figure, M.blend.figure], M.tokens);
    M.channel.drawn_by = 'page'; // the server need not send a drag's figures any more
    // static/rejoin.js: the head on screen as link parameters (the server's state and what the controls
    // hold), to open a new session on should the server go; and to stop drawing a document it replaced
    page.link = () => (server ? logic.encodeLink(predicted()) : null);
    page.controls = () => [
      ...sliders().map((slider) => [slider, 'value']), [M.query, 'value'],
      ...SWITCHES.map((sw) => [M.switches[sw.name], sw.kind === 'number' ? 'value' : 'active']),
    ];
    page.stop = () => {
      stopped = true;
      clearTimeout(settleTimer);
      bound.splice(bound.indexOf(page), 1);
    };
    bound.push(page);
    return page;
  }

  window.HeadExplorerPage = { afterEmbed, bind, embed, follow, modelById, pages: bound, readLink };
})();
