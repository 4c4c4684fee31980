// What a screen reader, a keyboard and a magnifier need from the explorer's Bokeh page, loaded by the
// served page and by the static export (after BokehJS is defined or before: it waits for it).
//
// Bokeh 3.9 widgets render in shadow DOM and have no property for an accessible name, so this module
// follows BokehJS's views with its public index of them (Bokeh.index) and the page's DOM: each time a view
// is added or renders anew (a MutationObserver on the page and on every view's shadow root says when), it
// fixes up that view and the views inside it, in the same task, from data the page declares
// (widgets/a11y.py):
//   * controls get accessible names from the document's "a11y-names" model (model name -> name), or
//     from their own title; slider handles keep noUiSlider's aria-valuetext, which it updates on every
//     move, and get the exact value as aria-valuenow (noUiSlider's is rounded to one decimal); toolbar
//     buttons become named buttons; button groups and tabs say which is on;
//   * every figure listed in the page's "a11y-figures" JSON gets a <details> after its document root with
//     its numbers as an HTML table, built from the figure's own ColumnDataSource (so it follows every
//     move in both pages). A closed table is not rebuilt: it is marked stale and built when opened;
//   * every shadow root gets a visible focus ring.
// It touches no BokehJS internals (static/bokeh_seam.js holds those), so it works on any BokehJS 3.
(function (root, factory) {
  if (typeof module === "object" && module.exports) module.exports = factory(null);
  else root.A11y = factory(root);
})(typeof self !== "undefined" ? self : this, function (win) {
  "use strict";

  const NAMES = "a11y-names";
  const FIGURES = "a11y-figures";
  const MASKED = "masked";
  const ANNOUNCE_AFTER_MS = 800;
  // Added to every shadow root: a visible focus ring, drawn inside where the box clips what overflows it
  // (a tab's header strip); and tabs that wrap onto a second line instead of running out of a narrow page.
  const FOCUS_CSS =
    ":focus-visible { outline: 3px solid #1d4ed8 !important; outline-offset: 2px !important; }" +
    ".noUi-handle:focus-visible { box-shadow: 0 0 0 3px #1d4ed8 !important; }" +
    ".bk-tab:focus-visible { outline-offset: -3px !important; }" +
    ".bk-headers-wrapper { flex-wrap: wrap; }";

  // The figures' tables, wherever they are put (the page, or a shadow root: a tab's panel, the export's
  // further explorers), and the polite status line, heard and not seen.
  const TABLE_CSS = `
.a11y-tables { display: flex; flex-wrap: wrap; gap: 4px 18px; margin: 4px 0 10px; font-size: 13px; }
.figure-table summary { cursor: pointer; color: #1d4ed8; text-decoration: underline; padding: 2px 0;
  font-weight: normal; }
.figure-table[open] { flex-basis: 100%; }
.figure-table-body { overflow-x: auto; }
.figure-table-note { margin: 4px 0; color: #1a1a1a; max-width: 60em; }
.figure-table table { border-collapse: collapse; margin: 2px 0 8px; font-variant-numeric: tabular-nums; }
.figure-table caption { text-align: left; font-weight: 600; padding: 2px 0; }
.figure-table th, .figure-table td { border: 1px solid #8c8c8c; padding: 2px 8px; text-align: right; }
.figure-table th[scope="row"] { text-align: left; font-weight: normal; }
.figure-table .query-row th, .figure-table .query-row td { font-weight: 700; background: #fff1e0; }
.figure-table td.masked { color: #4d4d4d; font-style: italic; background: #ececec; }
.a11y-status { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%);
  white-space: nowrap; }`;

  // --- the tables' data: the same as widgets/a11y.py (tests/test_a11y.py holds them equal) ----------

  function fmt(x) {
    return win && win.AttentionHead ? win.AttentionHead.fmt(x) : require("./attention.js").fmt(x);
  }

  const col = (data, name) => (data instanceof Map ? data.get(name) : data[name]);

  function cellsTable(cells, outline) {
    const value = Array.from(col(cells, "value")), n = value.length;
    const blocks = col(cells, "matrix") ? Array.from(col(cells, "matrix")) : value.map(() => "");
    const several = new Set(blocks).size > 1;
    const colsOf = Array.from(col(cells, "col"), String), rowsOf = Array.from(col(cells, "row"), String);
    const ys = Array.from(col(cells, "y"), (y) => Math.trunc(y));
    const columns = [], keys = new Map(), rowOf = new Map();
    for (let k = 0; k < n; k++) {
      const key = blocks[k] + "\u0000" + colsOf[k];
      if (!keys.has(key)) { keys.set(key, columns.length); columns.push([blocks[k], colsOf[k]]); }
      if (!rowOf.has(ys[k])) rowOf.set(ys[k], rowsOf[k]);
    }
    const rows = [...rowOf.keys()].sort((a, b) => a - b).map((y) => rowOf.get(y));
    const body = rows.map(() => columns.map(() => ""));
    let masked = 0;
    for (let k = 0; k < n; k++) {
      const v = Number(value[k]);
      if (Number.isNaN(v)) masked += 1;
      body[ys[k]][keys.get(blocks[k] + "\u0000" + colsOf[k])] = Number.isNaN(v) ? MASKED : fmt(v);
    }
    const oy = outline ? col(outline, "y") : null;
    const query = oy && oy.length ? Math.trunc(oy[0]) : null;
    let note = query !== null ? `Rows are tokens; the query is '${rows[query]}'.` : "Rows are tokens.";
    if (masked) {
      note += ` ${masked} cell${masked !== 1 ? "s are" : " is"} masked: a key after its query, which gets no weight.`;
    }
    return {
      columns: columns.map(([m, c]) => (several ? `${m}[${c}]` : c)),
      rows: rows.map((r, i) => (i === query ? `${r} (the query)` : r)),
      body: body,
      note: note,
    };
  }

  // Whether the output lies in the values' hull: static/lessons.js's test (core/lessons.py inside_convex).
  function insideConvex(hx, hy, x, y) {
    const lessons = win && win.HeadLessons ? win.HeadLessons : require("./lessons.js");
    return lessons.insideConvex(hx, hy, x, y);
  }

  function blendTable(values, output, hull, axes) {
    const ox = Number(col(output, "x")[0]), oy = Number(col(output, "y")[0]);
    const label = String(col(output, "label")[0]);
    const oneLine = axes.y === "(d = 1)";
    const where = oneLine ? fmt(ox) : `(${fmt(ox)}, ${fmt(oy)})`;
    const weights = Array.from(col(values, "weight"), Number);
    const xs = Array.from(col(values, "x"), Number), ys = Array.from(col(values, "y"), Number);
    const labels = Array.from(col(values, "label"), String);
    let top = 0;
    for (let k = 1; k < weights.length; k++) if (weights[k] > weights[top]) top = k;
    const inside = insideConvex(Array.from(col(hull, "x"), Number), Array.from(col(hull, "y"), Number), ox, oy);
    const note =
      `${label.slice(0, 1).toUpperCase()}${label.slice(1)}: ${col(output, "text")[0]}. In the plot (${axes.x}` +
      (oneLine ? "" : `, ${axes.y}`) +
      `) it lies at ${where}, ${inside ? "inside" : "outside"} the values' hull; the largest weight, ` +
      `${fmt(weights[top])}, is on the value of '${labels[top]}'.`;
    return {
      columns: ["weight", axes.x].concat(oneLine ? [] : [axes.y]),
      rows: labels.map((v) => `value of ${v}`),
      body: weights.map((w, k) => [fmt(w), fmt(xs[k])].concat(oneLine ? [] : [fmt(ys[k])])),
      note: note,
    };
  }

  function barsTable(bars) {
    const keys = Array.from(col(bars, "key"), String), counts = Array.from(col(bars, "students"), Number);
    const total = counts.reduce((a, b) => a + b, 0);
    const note = total
      ? `${total} student${total !== 1 ? "s" : ""} counted; each is counted under the key their query row weights most.`
      : "No student's row yet.";
    return { columns: ["students"], rows: keys, body: counts.map((n) => [String(n)]), note: note };
  }

  // A line plot's points (widgets/a11y.py series_table): columns [[source column, header], ...], the first
  // heading the rows.
  function seriesCell(value, headsRow) {
    if (typeof value === "string") return value;
    return headsRow ? String(Math.round(Number(value))) : fmt(Number(value));
  }

  function seriesTable(data, columns) {
    const [[x, xHeader], ...rest] = columns;
    const xs = Array.from(col(data, x)), n = xs.length;
    const values = rest.map(([c]) => Array.from(col(data, c)));
    return {
      columns: rest.map(([, header]) => header),
      rows: xs.map((v) => seriesCell(v, true)),
      body: xs.map((_, i) => values.map((v) => seriesCell(v[i], false))),
      note: `A row per point of the curves, ${n} in all; the rows are headed by ${xHeader}.`,
    };
  }

  function sliderName(label, component) {
    return `${label}, component ${component}`;
  }

  const WEIGHTS = ["W_Q", "W_K", "W_V"];
  const GENERATED = /^(x|W_Q|W_K|W_V)-\d+-\d+$/; // the names accessibleNames makes from the shape

  /** widgets/a11y.py accessible_names: the fixed names, then the sliders x-t-c and the grid boxes W-r-c. */
  function accessibleNames(fixed, labels, C, d) {
    const names = Object.assign({}, fixed);
    labels.forEach((label, t) => { for (let c = 0; c < C; c++) names[`x-${t}-${c}`] = sliderName(String(label), c); });
    for (const matrix of WEIGHTS) {
      for (let r = 0; r < C; r++) for (let c = 0; c < d; c++) names[`${matrix}-${r}-${c}`] = `${matrix} row ${r} column ${c}`;
    }
    return names;
  }

  if (!win) return { cellsTable, blendTable, barsTable, seriesTable, sliderName, accessibleNames }; // Node: for the parity test

  // --- the page --------------------------------------------------------------------------------------

  const esc = (text) => win.AttentionHead.escapeHtml(text); // the page's one escaper (static/pyformat.js)

  const state = { following: false, docs: new WeakMap(), focusSheet: null, tableSheet: null, tables: new Set() };
  // what this module has done to a view, by view (its own marks, kept off BokehJS's objects)
  const marks = new WeakMap();
  const marked = (view) => {
    let m = marks.get(view);
    if (m === undefined) {
      m = {};
      marks.set(view, m);
    }
    return m;
  };
  const isTabs = (view) => Boolean(view.model && Array.isArray(view.model.tabs) && typeof view.model.active === "number");

  function docState(doc) {
    let s = state.docs.get(doc);
    if (s === undefined) {
      s = { names: null, tables: new Map() };
      const model = doc.get_model_by_name(NAMES);
      if (model) model.connect(model.properties.names.change, () => { s.names = null; sweep(); });
      state.docs.set(doc, s);
    }
    return s;
  }

  // The controls' names: the document's A11yNames model (widgets/a11y.py), model name -> name.
  function namesOf(doc) {
    const s = docState(doc);
    if (s.names === null) {
      const model = doc.get_model_by_name(NAMES);
      const names = model ? model.names : null;
      s.names = names instanceof Map ? names : new Map(Object.entries(names || {}));
    }
    return s.names;
  }

  // Which figures get a table, the same for every document on the page: the JSON the page's template
  // carries (widgets/a11y.py figures_script), read once.
  let figures = null;
  function figuresOf() {
    if (figures !== null) return figures;
    const script = win.document.getElementById(FIGURES);
    if (!script) return new Map(); // (not parsed yet)
    figures = new Map();
    try {
      Object.entries(JSON.parse(script.textContent)).forEach(([name, spec], order) => {
        figures.set(name, Object.assign({ order }, spec));
      });
    } catch (err) {
      console.error("a11y.js: the figures' tables cannot be read", err);
    }
    return figures;
  }

  function titleText(model) {
    const t = model.title;
    if (t == null) return "";
    return typeof t === "string" ? t : t.text != null ? String(t.text) : "";
  }

  // A figure's title: its own, or the Title annotations widgets/matrix_plot.py `titled` puts above it
  // (the subtitle first, nearest the frame, then the bold title): "Weights: how each query divides …".
  function figureTitle(model) {
    const own = titleText(model);
    if (own) return own;
    const above = (model.above || []).filter((r) => r.type === "Title" && r.text).map((r) => String(r.text));
    if (!above.length) return "";
    const [main, ...rest] = above.reverse();
    return rest.length ? `${main}: ${rest.join(", ")}` : main;
  }

  const setAttr = (el, name, value) => {
    if (el.getAttribute(name) !== value) el.setAttribute(name, value);
  };

  function focusRing(view) {
    const shadow = view.shadow_el;
    if (!shadow || !("adoptedStyleSheets" in shadow)) return;
    if (state.focusSheet === null) {
      state.focusSheet = new CSSStyleSheet();
      state.focusSheet.replaceSync(FOCUS_CSS);
    }
    if (!shadow.adoptedStyleSheets.includes(state.focusSheet)) {
      shadow.adoptedStyleSheets = [...shadow.adoptedStyleSheets, state.focusSheet];
    }
  }

  function ownFields(view, selector) {
    return view.shadow_el ? Array.from(view.shadow_el.querySelectorAll(selector)) : [];
  }

  function decorate(view) {
    const model = view.model;
    if (!model) return;
    if (model.tool !== undefined && view.el) return toolButton(view); // made by BokehJS: no document
    // A plot's canvas takes the focus for key-driven tools, which these figures have none of: an unnamed
    // Tab stop per figure, so out of the Tab order (the figure's table and toolbar are the keyboard's way).
    if (view.events_el instanceof HTMLElement) setAttr(view.events_el, "tabindex", "-1");
    // A model made in the browser (the export's binding builds new sliders and grid boxes for new tokens
    // or widths) can be on screen before BokehJS attaches it to the document: its root's document, then.
    const doc = model.document || rootView(view).model.document;
    if (!doc) return;
    focusRing(view);
    const declared = model.name ? namesOf(doc).get(model.name) : undefined;
    const name = declared !== undefined ? declared : titleText(model) || labelBefore(view);
    if (declared !== undefined && typeof model.text === "string" && view.el) scrollRegion(view.el, declared);
    for (const handle of ownFields(view, ".noUi-handle")) {
      if (name) setAttr(handle, "aria-label", name);
      exactValues(view.model, handle);
    }
    for (const field of ownFields(view, "input:not([type=checkbox]):not([type=radio]), select, textarea")) {
      if (declared !== undefined) setAttr(field, "aria-label", declared);
    }
    for (const [selector, verb] of [[".bk-spin-btn-up", "Increase"], [".bk-spin-btn-down", "Decrease"]]) {
      for (const button of ownFields(view, selector)) {
        setAttr(button, "aria-label", `${verb} ${name}`);
        setAttr(button, "tabindex", "-1"); // the arrow keys in the box do the same, one Tab stop fewer
      }
    }
    if (Array.isArray(model.labels) && typeof model.active === "number") buttonGroup(view, name);
    if (typeof model.collapsed === "boolean" && view.button_el instanceof HTMLElement) card(view);
    if (isTabs(view)) tabs(view);
    else if (view.parent && marked(view.parent).markTabs) marked(view.parent).markTabs(); // a tab's new panel
    if (typeof model.text === "string") htmlTabs(view);
    if (model.renderers !== undefined && model.toolbar !== undefined) figure(view, doc);
  }

  // noUiSlider tells assistive technology a slider's value, and its ends, rounded to one decimal
  // (aria-valuenow 0.3 for 0.25) on every move: each is written back as the model's exact value, as a link
  // writes it (static/explorer.js numberAtStep: 0.45, not 0.4500000000000002).
  const exact = new WeakSet();
  function exactValues(model, handle) {
    if (typeof model.value !== "number" || exact.has(handle)) return;
    exact.add(handle);
    const logic = win.HeadLogic;
    const text = (x) => (logic && logic.numberAtStep ? logic.numberAtStep(x, model.step) : String(x));
    const write = () => {
      if (typeof model.value !== "number") return;
      setAttr(handle, "aria-valuenow", text(model.value));
      setAttr(handle, "aria-valuemin", text(model.start));
      setAttr(handle, "aria-valuemax", text(model.end));
    };
    new MutationObserver(write).observe(handle, {
      attributes: true, attributeFilter: ["aria-valuenow", "aria-valuemin", "aria-valuemax"],
    });
    write();
  }

  // A text panel that scrolls (the training lab's steps): a keyboard reaches and scrolls it only as a Tab
  // stop, and a Tab stop needs a name and a role.
  function scrollRegion(el, name) {
    if (!/(auto|scroll)/.test(getComputedStyle(el).overflow)) return;
    setAttr(el, "tabindex", "0");
    setAttr(el, "role", "region");
    setAttr(el, "aria-label", name);
  }

  // A control without a title whose layout puts a text label just before it (Panel's DiscreteSlider):
  // that label's text, up to any ":" that starts the value.
  function labelBefore(view) {
    const siblings = view.parent && view.parent.model && view.parent.model.children;
    if (!Array.isArray(siblings)) return "";
    const k = siblings.indexOf(view.model);
    const before = k > 0 ? siblings[k - 1] : null;
    if (!before || typeof before.text !== "string") return "";
    const text = new DOMParser().parseFromString(before.text, "text/html").body.textContent; // inert: no loads
    return text.split(":")[0].trim();
  }

  function toolButton(view) {
    let title = "", up = view.parent;
    while (up && !title) {
      if (up.model && up.model.renderers !== undefined) title = figureTitle(up.model).split(":")[0];
      up = up.parent;
    }
    // several tools of one kind share a button (a "proxy"), its tip their tips on separate lines
    const tip = (view.el.title || (view.model.tool && view.model.tool.tooltip) || "tool").split("\n")[0];
    setAttr(view.el, "role", "button");
    setAttr(view.el, "aria-label", title ? `${tip}: ${title}` : tip);
    const tool = view.model.tool;
    const kinds = Array.isArray(tool.tools) ? tool.tools.map((t) => t.type) : [tool.type];
    if (kinds.every((k) => k === "HoverTool")) setAttr(view.el, "tabindex", "-1"); // the mouse pointer only
    if (view.model.type === "OnOffButton" && tool.properties.active) { // hover and other tools one turns on or off
      const mark = () => setAttr(view.el, "aria-pressed", String(Boolean(tool.active)));
      mark();
      watch(view, tool, "active", mark);
    }
  }

  // `action` at each change of `model`'s `property`, once per view (it goes with the view)
  function watch(view, model, property, action) {
    const m = marked(view);
    const key = `watch ${property}`;
    if (m[key]) return;
    m[key] = true;
    view.connect(model.properties[property].change, action);
  }

  function buttonGroup(view, name) {
    const group = ownFields(view, ".bk-btn-group")[0];
    if (!group) return;
    setAttr(group, "role", "group");
    if (name) setAttr(group, "aria-label", name);
    const mark = () => ownFields(view, ".bk-btn-group > button").forEach((b, k) =>
      setAttr(b, "aria-pressed", String(k === view.model.active)));
    mark();
    watch(view, view.model, "active", () => requestAnimationFrame(mark));
  }

  // Panel's Card (the served page's "Edit the head"): its header is a button that shows or hides the rest;
  // a screen reader hears which (the disclosure pattern).
  function card(view) {
    const mark = () => setAttr(view.button_el, "aria-expanded", String(!view.model.collapsed));
    mark();
    watch(view, view.model, "collapsed", mark); // (a header made anew, with new contents: decorated again)
  }

  // The WAI-ARIA tabs pattern (https://www.w3.org/WAI/ARIA/apg/patterns/tabs/) on a strip of tabs: roles,
  // ids that tie each tab to its panel, only the selected tab in the Tab order (the focus then goes on
  // into its panel), Left/Right (round the strip) and Home/End move the focus along the strip, and Enter
  // or Space opens the focused tab. Opening is left to Enter/Space (manual activation), not done by the
  // arrows: opening a tab builds its explorer, on the server or from the file, which takes a moment.
  // `strip` gives the current tabs, panels and selected index (its elements can be rebuilt).
  function tabPattern(list, strip, prefix) {
    const mark = () => {
      const { tabs, panels, selected } = strip();
      setAttr(list, "role", "tablist");
      tabs.forEach((tab, k) => {
        const panel = panels[k];
        setAttr(tab, "role", "tab");
        setAttr(tab, "id", `${prefix}-tab-${k}`);
        setAttr(tab, "aria-selected", String(k === selected));
        setAttr(tab, "tabindex", k === selected ? "0" : "-1");
        if (panel) setAttr(tab, "aria-controls", `${prefix}-panel-${k}`);
      });
      panels.forEach((panel, k) => {
        if (!panel) return;
        setAttr(panel, "role", "tabpanel");
        setAttr(panel, "id", `${prefix}-panel-${k}`);
        setAttr(panel, "aria-labelledby", `${prefix}-tab-${k}`);
        // a panel that starts with text is a Tab stop of its own, so its text is reached before what follows
        if (k === selected) setAttr(panel, "tabindex", "0");
        else if (panel.hasAttribute("tabindex")) panel.removeAttribute("tabindex");
      });
    };
    // Opening a tab of Panel's Tabs rebuilds the strip: the focused tab is gone and the focus with it,
    // so it is put back on the tab at the same place (only when nothing else has taken it meanwhile).
    const keepFocus = () => {
      const k = list._a11yFocused;
      if (k === undefined || list.contains(list.getRootNode().activeElement)) return;
      const active = document.activeElement;
      const tab = strip().tabs[k];
      if (tab && (active === null || active === document.body)) tab.focus({ preventScroll: true });
    };
    if (!list._a11yTabs) {
      list._a11yTabs = true;
      list.addEventListener("focusin", (event) => {
        const k = strip().tabs.indexOf(event.target);
        if (k >= 0) list._a11yFocused = k;
      });
      list.addEventListener("focusout", (event) => {
        if (event.relatedTarget) list._a11yFocused = undefined; // gone elsewhere, not lost with its element
      });
      list.addEventListener("keydown", (event) => {
        const { tabs } = strip();
        const k = tabs.indexOf(event.target), n = tabs.length;
        if (k < 0 || event.altKey || event.ctrlKey || event.metaKey) return;
        const to = { ArrowRight: (k + 1) % n, ArrowLeft: (k - 1 + n) % n, Home: 0, End: n - 1 }[event.key];
        if (to !== undefined) {
          event.preventDefault();
          tabs[to].focus();
        } else if ((event.key === "Enter" || event.key === " ") && event.target.tagName !== "BUTTON") {
          event.preventDefault(); // a <button> opens itself on Enter and Space
          event.target.click();
        }
      });
    }
    const update = () => { mark(); keepFocus(); };
    update();
    return update;
  }

  // Bokeh's Tabs (the served page's "Going further"): its header elements are the tabs, its children's
  // elements the panels. Panel's dynamic Tabs replace a child when it is first opened, so a child's own
  // render marks its parent's strip again (decorate).
  function tabs(view) {
    const wrapper = ownFields(view, ".bk-headers-wrapper")[0];
    if (!wrapper) return;
    const strip = () => ({
      tabs: Array.from(view.header_els || ownFields(view, ".bk-tab")),
      panels: (view.child_views || []).map((child) => child.el),
      selected: view.model.active,
    });
    const mark = tabPattern(wrapper, strip, `a11y-${view.model.id}`);
    const m = marked(view);
    m.markTabs = () => { headerFirst(view, wrapper.parentElement); mark(); };
    m.markTabs();
    watch(view, view.model, "active", () => requestAnimationFrame(() => m.markTabs()));
    watch(view, view.model, "tabs", () => requestAnimationFrame(() => m.markTabs()));
  }

  // BokehJS puts the tab strip after the panels in the DOM (CSS grid draws it above them), so the Tab key
  // would reach a panel's controls before the tabs: the strip is moved before them.
  function headerFirst(view, header) {
    const panels = new Set((view.child_views || []).map((child) => child.el));
    if (!header || !header.parentNode) return;
    const first = Array.from(header.parentNode.children).find((el) => el === header || panels.has(el));
    if (first !== header) header.parentNode.insertBefore(header, first);
  }

  // A tab strip written as HTML in a text panel (the export's "Going further", app/export_explorers.py):
  // its [role=tab] elements, and the [role=tabpanel] elements beside the strip, in the same order; the
  // page's own script says which is selected (aria-selected), and this follows it.
  function htmlTabs(view) {
    ownFields(view, '[role="tablist"]').forEach((list, n) => {
      if (list._a11yTabs) return;
      const strip = () => {
        const tabs = Array.from(list.querySelectorAll('[role="tab"]'));
        return {
          tabs,
          panels: Array.from(list.parentNode.querySelectorAll(':scope > [role="tabpanel"]')),
          selected: tabs.findIndex((tab) => tab.getAttribute("aria-selected") === "true"),
        };
      };
      const mark = tabPattern(list, strip, `a11y-${view.model.id}-${n}`);
      new MutationObserver(mark).observe(list, { subtree: true, attributeFilter: ["aria-selected"] });
    });
  }

  // --- figures and their tables ------------------------------------------------------------------------

  function rootView(view) {
    let v = view;
    while (v.parent) v = v.parent;
    return v;
  }

  function figure(view, doc) {
    const model = view.model;
    const spec = figuresOf().get(model.name);
    if (!spec || !view.el) return;
    setAttr(view.el, "role", "figure");
    setAttr(view.el, "aria-label", `${figureTitle(model)}. Its numbers: "${spec.summary}", below.`);
    const s = docState(doc);
    let table = s.tables.get(model.name);
    if (table === undefined || !table.details.isConnected) {
      table = makeTable(view, spec, doc);
      if (table === null) return;
      s.tables.set(model.name, table);
    }
    table.plot = model;
    table.stale = true;
    if (table.details.open) render(table);
  }

  // The tables go after the figures' document root; or, for figures inside a tab (the served page's
  // "Going further"), at the end of that tab's panel, so they show, hide and take the Tab order with it.
  function container(view) {
    let v = view;
    while (v.parent && !isTabs(v.parent)) v = v.parent;
    const inTab = v.parent && v.shadow_el ? v.shadow_el : null;
    const top = v.el;
    if (!top || (!inTab && !top.parentNode)) return null;
    let box = inTab ? inTab.querySelector(":scope > .a11y-tables") : top.nextElementSibling;
    if (!box || !box.classList.contains("a11y-tables")) {
      box = document.createElement("div");
      box.className = "a11y-tables";
      if (inTab) inTab.append(box);
      else top.parentNode.insertBefore(box, top.nextSibling);
    }
    tableStyle(box.getRootNode());
    return box;
  }

  function tableStyle(root) {
    if (!("adoptedStyleSheets" in root)) return;
    if (state.tableSheet === null) {
      state.tableSheet = new CSSStyleSheet();
      state.tableSheet.replaceSync(TABLE_CSS);
    }
    if (!root.adoptedStyleSheets.includes(state.tableSheet)) {
      root.adoptedStyleSheets = [...root.adoptedStyleSheets, state.tableSheet];
    }
  }

  function makeTable(view, spec, doc) {
    const box = container(view);
    if (box === null) return null;
    const name = view.model.name;
    const details = document.createElement("details");
    details.className = "figure-table";
    details.dataset.figure = name;
    details.dataset.order = String(spec.order);
    details.innerHTML = `<summary>${esc(spec.summary)}</summary><div class="figure-table-body"></div>`;
    const after = [...box.children].find((d) => Number(d.dataset.order) > spec.order);
    box.insertBefore(details, after || null);
    const table = { details, spec, doc, plot: view.model, stale: true, queued: false, sources: {} };
    state.tables.add(table);
    const names = spec.kind === "blend"
      ? { values: `${spec.source}-values`, output: `${spec.source}-output`, hull: `${spec.source}-hull` }
      : spec.kind === "bars" ? { bars: spec.source }
      : spec.kind === "series" ? { series: spec.source } : { cells: spec.source, outline: `${name}-outline` };
    for (const [key, sourceName] of Object.entries(names)) {
      const source = doc.get_model_by_name(sourceName);
      table.sources[key] = source;
      if (source) source.change.connect(() => changed(table));
    }
    details.addEventListener("toggle", () => { if (details.open && table.stale) render(table); });
    if (spec.announce) {
      table.status = document.createElement("div");
      table.status.className = "a11y-status";
      table.status.setAttribute("role", "status"); // polite: heard after what the reader is saying
      box.insertBefore(table.status, box.firstChild);
    }
    return table;
  }

  // The query's row, said once the sliders rest (a drag would otherwise queue a sentence per step).
  function announce(table) {
    clearTimeout(table.announcing);
    table.announcing = setTimeout(() => {
      const t = tableData(table);
      const q = t.rows.findIndex((r) => r.endsWith(" (the query)"));
      if (q < 0) return;
      const heading = figureTitle(table.plot).split(":")[0];
      const row = t.columns.map((c, j) => `${c} ${t.body[q][j]}`).join(", ");
      const text = `${heading} of ${t.rows[q].slice(0, -" (the query)".length)}: ${row}`;
      if (table.status.textContent !== text) table.status.textContent = text;
    }, ANNOUNCE_AFTER_MS);
  }

  function changed(table) {
    if (table.status) announce(table);
    table.stale = true;
    if (!table.details.open || table.queued) return;
    table.queued = true; // one rebuild a frame, however many of its sources a move changed
    requestAnimationFrame(() => { table.queued = false; if (table.stale) render(table); });
  }

  function axisLabel(plot, sides) {
    for (const side of sides) for (const r of plot[side] || []) if (r.axis_label != null) return titleText({ title: r.axis_label });
    return "";
  }

  function tableData(table) {
    const src = table.sources;
    if (table.spec.kind === "blend") {
      const axes = { x: axisLabel(table.plot, ["below", "above"]), y: axisLabel(table.plot, ["left", "right"]) };
      return blendTable(src.values.data, src.output.data, src.hull.data, axes);
    }
    if (table.spec.kind === "bars") return barsTable(src.bars.data);
    if (table.spec.kind === "series") return seriesTable(src.series.data, table.spec.columns);
    const outline = src.outline ? src.outline.data : null;
    return cellsTable(src.cells.data, outline);
  }

  // Same rows and columns as last time: only the cells whose text changed are written (a move changes
  // numbers, not the table's shape), so the browser re-lays out a few cells instead of a new table.
  function render(table) {
    table.stale = false;
    const t = tableData(table), caption = figureTitle(table.plot);
    const shape = JSON.stringify([t.columns, t.rows, caption]);
    const body = table.details.querySelector(".figure-table-body");
    if (shape !== table.shape) {
      table.shape = shape;
      body.innerHTML = tableHtml(t, caption);
      return;
    }
    const note = body.querySelector(".figure-table-note");
    if (note.textContent !== t.note) note.textContent = t.note;
    body.querySelectorAll("tbody tr").forEach((tr, i) => {
      const cells = tr.children;
      t.body[i].forEach((v, j) => {
        const td = cells[j + 1];
        if (td.textContent !== v) {
          td.textContent = v;
          td.className = v === MASKED ? "masked" : "";
        }
      });
    });
  }

  function tableHtml(t, caption) {
    const head = "<tr><td></td>" + t.columns.map((c) => `<th scope="col">${esc(c)}</th>`).join("") + "</tr>";
    const rows = t.rows.map((r, i) =>
      `<tr${r.endsWith("(the query)") ? ' class="query-row"' : ""}><th scope="row">${esc(r)}</th>` +
      t.body[i].map((v) => `<td${v === MASKED ? ' class="masked"' : ""}>${esc(v)}</td>`).join("") + "</tr>");
    return (
      `<p class="figure-table-note">${esc(t.note)}</p>` +
      `<table><caption>${esc(caption)}</caption><thead>${head}</thead><tbody>${rows.join("")}</tbody></table>`
    );
  }

  // --- following the views ---------------------------------------------------------------------------
  // BokehJS's index of views (public: Bokeh.index) says which views there are; the DOM says when one is
  // added or renders anew. A MutationObserver watches the page and every view's shadow root it has seen:
  // a change inside a view's shadow root decorates that view and those inside it again; a document's root
  // view put on the page (an element with a shadow root) decorates the root views not seen before. Its
  // callback runs in the task that made the change, before the browser paints.

  const shadows = new WeakMap(); // shadow root → its view
  const seenRoots = new WeakSet();
  let observer = null;

  function decorateTree(view) {
    const stack = [view];
    while (stack.length) {
      const v = stack.pop();
      const shadow = v.shadow_el;
      if (shadow && !shadows.has(shadow)) {
        shadows.set(shadow, v);
        observer.observe(shadow, { childList: true, subtree: true });
      }
      try { decorate(v); } catch (err) { console.error("a11y.js:", err); }
      if (typeof v.children === "function") for (const c of v.children()) stack.push(c);
    }
  }

  function rootViews() {
    const index = win.Bokeh && win.Bokeh.index;
    return index && index.roots ? index.roots : [];
  }

  /** Decorate every view on the page again (the controls' names changed). */
  function sweep() {
    if (observer === null) return;
    for (const view of rootViews()) {
      seenRoots.add(view);
      decorateTree(view);
    }
  }

  // The root views not decorated yet. (BokehJS puts a root view on the page a moment before it lists it in
  // its index: asked again in the next task.)
  function newRoots() {
    for (const view of rootViews()) {
      if (seenRoots.has(view) || !view.el || !view.el.isConnected) continue;
      seenRoots.add(view);
      decorateTree(view);
    }
  }

  // A change made by this module, or by BokehJS to a style sheet's text.
  const ignored = (target) => target.nodeName === "STYLE" ||
    (typeof target.closest === "function" && target.closest(".a11y-tables") !== null);
  const addsShadow = (record) => Array.from(record.addedNodes).some((node) => node.nodeType === 1 &&
    node.shadowRoot !== null);

  function domChanged(records) {
    const again = new Set();
    let roots = false;
    for (const record of records) {
      if (ignored(record.target)) continue;
      const view = shadows.get(record.target.getRootNode());
      if (view !== undefined) again.add(view);
      else if (addsShadow(record)) roots = true;
    }
    for (const view of again) if (view.el && view.el.isConnected) decorateTree(view);
    if (roots) {
      newRoots();
      setTimeout(newRoots, 0);
    }
  }

  function follow() {
    if (observer !== null) return;
    observer = new MutationObserver(domChanged);
    observer.observe(win.document.documentElement, { childList: true, subtree: true });
    state.following = true;
    newRoots(); // views made before this ran
  }

  /** Rebuild every open table that a change has left stale, now rather than at the next frame (for timing). */
  function renderOpen() {
    for (const table of state.tables) if (table.details.isConnected && table.details.open && table.stale) render(table);
  }

  /** Rename the controls for new tokens or widths (the export's glue calls this): the same names as
   * widgets/a11y.py accessible_names gives, kept in the document's A11yNames model. */
  function renameControls(doc, labels, C, d) {
    const model = doc.get_model_by_name(NAMES);
    if (!model) return;
    const fixed = {};
    for (const [name, spoken] of namesOf(doc)) if (!GENERATED.test(name)) fixed[name] = spoken;
    model.names = new Map(Object.entries(accessibleNames(fixed, labels, C, d)));
  }

  follow(); // at once: the export makes its first views while the page is still being read

  return {
    get following() { return state.following; },
    cellsTable, blendTable, barsTable, seriesTable, sliderName, accessibleNames, renameControls, sweep, tableHtml, renderOpen,
  };
});
