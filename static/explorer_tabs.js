/*
 * The static page's binding for the further explorers: Bokeh events in,
 * view data out.  Each control's CustomJS callback (app/export_explorers.py)
 * calls ExplorerTabs.cost, .saturation or .tiles with its kind, the
 * widget and the page's models.  The state and every number come from the
 * pure ports (static/cost.js, static/saturation.js, static/tiles.js, the
 * last on the head the page's explorer holds); this file only writes
 * their view data into the same Bokeh models the served views write
 * (widgets/cost_page.py CostPage.update / show_inputs, and the saturation
 * page's), and shows a refusal's message as widgets/refusal.py does.
 *
 * BokehJS runs CustomJS callbacks after the change, so the writes this file
 * makes to the controls come back as events too: a change that asks for what
 * the state already holds is ignored.
 */
(function () {
  'use strict';
  // One state per embedded page, keyed by a control of that page; kept if a second copy of the page
  // on the same web page loads this file again.
  const pages = (window.ExplorerTabs && window.ExplorerTabs.states) || new WeakMap();

  function entry(M, make) {
    let e = pages.get(M.key);
    if (e === undefined) {
      const config = JSON.parse(M.config);
      e = { config, state: make(config) };
      pages.set(M.key, e);
    }
    return e;
  }

  // Every Div.text write re-lays out that Div's root, so unchanged text is not written.
  function setText(div, text) {
    if (div.text !== text) div.text = text;
  }

  function messageHtml(text) {
    return text ? '<div class="alert">' + PyFormat.escapeHtml(text) + '</div>' : '';
  }

  function setValue(widget, name, value) {
    if (widget[name] !== value) widget[name] = value;
  }

  function failed(M, err) {
    console.error(err);
    setText(M.message, messageHtml('That change could not be applied (' + (err && err.name ? err.name : 'Error') + ').'));
  }

  // --- the long-context cost tab --------------------------------------------------------

  function drawCost(M, v) {
    M.x_range.setv({ start: v.x_range[0], end: v.x_range[1] });
    M.y_range.setv({ start: v.y_range[0], end: v.y_range[1] });
    M.lines.data = v.lines;
    M.points.data = v.points;
    M.now.location = v.now;
    M.now_label.setv({ x: v.now, text: v.now_text });
    M.cross.location = v.cross;
    M.cross_label.setv({ x: v.cross, text: v.cross_text });
    M.mha.visible = v.grouped;
    M.mha_item.visible = v.grouped;
    setText(M.readout, v.readout);
  }

  function showCost(M, e) {
    const v = e.state.inputs;
    setValue(M.preset, 'value', e.state.preset);
    const stop = e.config.t_stops.indexOf(v.T);
    if (stop >= 0) setValue(M.T_slider, 'value', stop);
    for (const name of Object.keys(M.boxes)) setValue(M.boxes[name], 'value', v[name]);
    setValue(M.gpu, 'value', Math.round(v.gpu_gb));
    setText(M.message, messageHtml(e.state.message));
  }

  function cost(kind, obj, M) {
    const C = CostExplorer;
    try {
      const e = entry(M, C.initial);
      const v = e.state.inputs;
      let result = null;
      if (kind === 'preset') {
        if (obj.value !== e.config.custom && obj.value !== e.state.preset) result = C.load(e.config, e.state, obj.value);
      } else if (kind === 'T_slider') {
        const T = e.config.t_stops[Math.round(obj.value)];
        if (T !== v.T) result = C.apply(e.config, e.state, { T });
      } else if (kind === 'gpu') {
        if (obj.value !== Math.round(v.gpu_gb)) result = C.apply(e.config, e.state, { gpu_gb: obj.value });
      } else if (obj.value === null || obj.value === undefined) { // an emptied number box
        result = { state: Object.assign({}, e.state, { message: C.needsNumber(e.state, kind) }), taken: false };
      } else if (obj.value !== v[kind]) {
        result = C.apply(e.config, e.state, { [kind]: obj.value });
      }
      if (result === null) return;
      e.state = result.state;
      if (result.taken) drawCost(M, C.viewData(e.config, e.state.inputs));
      showCost(M, e);
    } catch (err) { // a bug must not break the page: say so, keep the last state
      failed(M, err);
    }
  }

  // --- the "Why ÷√d" tab --------------------------------------------------------------------

  function drawSaturation(M, v, resweep) {
    if (resweep) {
      M.curve.data = v.curve;
      M.reference.data = v.reference;
      M.entropy_range.setv({ start: v.entropy_range[0], end: v.entropy_range[1] });
    }
    M.marker.data = v.marker;
    for (const span of M.chosen) span.location = v.chosen;
    setText(M.readout, v.readout);
    setText(M.row, v.row);
  }

  function showSaturation(M, e) {
    const v = e.state.inputs;
    const k = e.config.widths.indexOf(v.d);
    if (k >= 0) setValue(M.d, 'active', k);
    for (const name of Object.keys(M.boxes)) setValue(M.boxes[name], 'value', v[name]);
    setText(M.message, messageHtml(e.state.message));
  }

  function saturation(kind, obj, M) {
    const S = SaturationExplorer;
    try {
      const e = entry(M, S.initial);
      const v = e.state.inputs;
      let result = null;
      if (kind === 'd') {
        const d = e.config.widths[obj.active];
        if (d !== undefined && d !== v.d) result = S.apply(e.config, e.state, { d });
      } else if (obj.value === null || obj.value === undefined) {
        result = { state: Object.assign({}, e.state, { message: S.needsNumber(e.state, kind) }), taken: false };
      } else if (obj.value !== v[kind]) {
        result = S.apply(e.config, e.state, { [kind]: obj.value });
      }
      if (result === null) return;
      const before = e.state.curve;
      e.state = result.state;
      if (result.taken) drawSaturation(M, S.viewData(e.config, e.state), e.state.curve !== before);
      showSaturation(M, e);
    } catch (err) {
      failed(M, err);
    }
  }

  // --- the "Attention in tiles" tab ---------------------------------------------------------------
  // It reads the head on screen: the state of the page's explorer (static/explorer_page.js bind), drawn
  // anew after each of its changes once the tab has opened. Its own state is {size, step}
  // (static/tiles.js apply).

  const headPage = () => ((window.HeadExplorerPage && HeadExplorerPage.pages) || []).find((p) => p.logic) || null;

  /** TilesPage.update: one state's view data into the tab's models. */
  function drawTiles(M, e) {
    const page = headPage();
    if (!page) return;
    const s = page.state;
    const head = page.logic.headOf(s);
    const v = TilesExplorer.viewData(e.config, head, s.query, s.tokens, e.state.size, e.state.step);
    for (const name of ['scores', 'weights', 'tiles', 'current']) M[name].data = v[name];
    const [scoreMapper, scoreInk, weightMapper, weightInk] = M.mappers;
    for (const [mapper, [low, high]] of [[scoreMapper, v.score_limits], [scoreInk, v.score_limits],
      [weightMapper, v.weight_limits], [weightInk, v.weight_limits]]) {
      if (mapper.low !== low || mapper.high !== high) mapper.setv({ low, high });
    }
    const L = v.layout;
    if (M.x_range.end !== v.T - 0.5) M.x_range.setv({ start: -0.5, end: v.T - 0.5 });
    M.axis.major_label_overrides = new Map(L.x_ticks.map((n, k) => [n, L.x_labels[k]])); // labels first
    M.axis.ticker.ticks = L.x_ticks;
    M.axis.major_label_orientation = L.x_angle;
    for (const glyph of M.numbers) if (glyph.text_font_size !== `${L.font}px`) glyph.text_font_size = `${L.font}px`;
    e.drawing = true; // the slider's own callback must not take our writes for a move
    try {
      M.size.setv({ end: Math.max(v.T, 2), value: v.size, disabled: v.T < 2 });
    } finally {
      e.drawing = false;
    }
    setValue(M.next, 'disabled', v.step >= v.count);
    setValue(M.again, 'disabled', v.step === 0);
    setText(M.readout, v.readout);
    setText(M.table, v.table);
  }

  const tilesEntry = (M) => entry(M, (config) => Object.assign({}, config.start));

  function tiles(kind, obj, M) {
    try {
      const e = tilesEntry(M);
      const page = headPage();
      if (!page || e.drawing) return;
      const T = page.state.tokens.length;
      if (kind === 'size' && obj.value === TilesExplorer.settle(e.state.size, e.state.step, T)[0]) return;
      e.state = TilesExplorer.apply(e.state, kind === 'size' ? { do: 'size', value: obj.value } : { do: kind }, T);
      drawTiles(M, e);
    } catch (err) {
      console.error(err);
    }
  }

  /** The tab's document is made: draw the head as it is now, and again after each of its changes. */
  function startTiles(doc) {
    const tags = doc.roots()[0].tags.map((t) => (t instanceof Map ? Object.fromEntries(t) : t));
    const M = tags.find((t) => t && t.key && t.scores);
    const page = headPage();
    if (!M || !page) return;
    const e = tilesEntry(M);
    page.watchers.push(() => drawTiles(M, e));
    drawTiles(M, e);
  }

  // --- the tab strip (app/export_explorers.py tabs_html) ------------------------------------

  // The tabs' documents, by the id of the JSON that holds them (the strip's data-items), read when first
  // needed.
  const items = new Map();
  function itemsOf(id) {
    if (!items.has(id)) {
      const script = document.getElementById(id);
      items.set(id, script ? JSON.parse(script.textContent) : {});
    }
    return items.get(id);
  }

  /**
   * Show the tab of `button`; the first time a page's tab opens, embed its Bokeh document (json_item,
   * packed by app/packing.py: static/unpack.js).  Works inside the Div's shadow root, and for several
   * pages at once.
   */
  function open(button) {
    const root = button.getRootNode();
    const name = button.dataset.tab;
    const strip = button.closest('.more-tabs');
    for (const b of root.querySelectorAll('.more-tabs button')) b.setAttribute('aria-selected', String(b === button));
    let target = null;
    for (const panel of root.querySelectorAll('.more-panel')) {
      panel.hidden = panel.dataset.tab !== name;
      if (!panel.hidden) target = panel;
    }
    const item = strip ? itemsOf(strip.dataset.items)[name] : undefined;
    if (target && item && !target.dataset.embedded) {
      target.dataset.embedded = 'yes';
      // packed by app/packing.py: unpacked only now, when the reader first opens the tab
      Unpack.json(item)
        .then((json) => Bokeh.embed.embed_item(json, target).then(() => {
          const doc = Bokeh.documents.find((d) => d.roots().some((r) => r.id === json.root_id));
          if (name === 'tiles' && doc) startTiles(doc); // it draws the head as it is now, and follows it
        }))
        .catch((err) => console.error(err));
    }
  }

  // A click on a tab of a strip (it lives in a Div's shadow root: the click's path says which button).
  if (!window.ExplorerTabs) {
    document.addEventListener('click', (event) => {
      const button = event.composedPath().find((el) => el instanceof Element && el.matches('.more-tabs button'));
      if (button) open(button);
    });
  }

  window.ExplorerTabs = { cost, saturation, tiles, open, states: pages };
})();
