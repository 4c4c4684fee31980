/*
 * The training lab, in both pages: pure DOM, drawn from the shipped runs (static/lab/*.json). The static
 * export inlines them with this file (app/export_lab.py); the served page sends them once, when its tab is
 * first opened, to a Panel JSComponent that carries this file (widgets/lab_view.py). Either way a run or
 * seed switch or a snapshot move is drawn here, in the browser, with no server. Each run holds one record
 * per seed (every snapshot for the first seed, the trained head for the others). The shown head is
 * recomputed at each snapshot by the JavaScript port of the core (static/attention.js, `AttentionHead.attend`
 * and `viewData`), held equal to numpy by tests/test_parity.py and tests/test_lab_parity.py; the claim,
 * the verdicts counted over the seeds, the findings and each seed's note come made by Python
 * (widgets/lab_data.describe and seed_note), inside the data.
 *
 * Every heatmap is a real table (row and column headers are the token labels or the stream and head
 * components; masked cells and the query's row are said in words), so a screen reader reads its numbers.
 *
 * In a page it defines the global `TrainingLab`; in Node, require() returns the same object.
 */
(function (root, factory) {
  if (typeof module === 'object' && module.exports) module.exports = factory(require('./attention.js'));
  else root.TrainingLab = factory(root.AttentionHead);
})(typeof self !== 'undefined' ? self : this, function (AttentionHead) {
  'use strict';

  const ALPHABET = 'abcdefghijklmnopqrstuvwxyz';
  const LINES = [ // as widgets/lab_view.py LINES: source, label, colour, dash
    ['train', 'this run: training loss', '#1f77b4', ''],
    ['eval', 'this run: held-out loss', '#1f77b4', '6 4'],
    ['full train', 'reference run: training loss', '#7f7f7f', ''],
    ['full eval', 'reference run: held-out loss', '#7f7f7f', '6 4'],
    ['honest', 'generated one token at a time', '#d62728', '2 3'],
    ['uniform', 'uniform guess, ln V', '#2ca02c', '8 3 2 3'],
  ];

  // --- data ------------------------------------------------------------------

  function halfToFloat(h) {
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >> 10) & 0x1f;
    const frac = h & 0x3ff;
    if (exp === 0) return sign * Math.pow(2, -14) * (frac / 1024);
    if (exp === 31) return frac ? NaN : sign * Infinity;
    return sign * Math.pow(2, exp - 15) * (1 + frac / 1024);
  }

  /** A matrix shipped as {shape, f16: base64 of little-endian halves} (core.train.f16), as rows. */
  function unf16(m) {
    const bytes = typeof atob === 'function' ? atob(m.f16) : Buffer.from(m.f16, 'base64').toString('binary');
    const [rows, cols] = m.shape;
    const out = [];
    for (let i = 0; i < rows; i++) {
      const r = [];
      for (let j = 0; j < cols; j++) {
        const k = 2 * (i * cols + j);
        r.push(halfToFloat(bytes.charCodeAt(k) | (bytes.charCodeAt(k + 1) << 8)));
      }
      out.push(r);
    }
    return out;
  }

  function tokenLabels(probe) {
    return probe.map((t) => ALPHABET[t]);
  }

  function causalFuture(T, causal) {
    return Array.from({ length: T }, (_, i) => Array.from({ length: T }, (_, j) => causal && j > i));
  }

  /** What the lab shows for seed record s (an index into run.seeds), snapshot k, query i: the numbers
   * tests/test_lab_parity.py holds equal to the numpy core's head (widgets/lab_data.head_at). `switches` is
   * the table of switches (core.options.table_json(), in the lab's data) the core's port reads its options by. */
  function labViewData(run, s, k, i, switches) {
    const record = run.seeds[s];
    const labels = tokenLabels(record.probe);
    const T = labels.length;
    const snap = record.snapshots[k];
    const sw = run.switches;
    const out = { labels: labels, step: snap.step, query: i, seed: record.seed };
    if (snap.W_Q) {
      // the run's switches, every one the explorer has (core.options.SWITCHES), as attend takes them
      const head = AttentionHead.attend(unf16(snap.X), unf16(snap.W_Q), unf16(snap.W_K), unf16(snap.W_V), sw, switches);
      const data = AttentionHead.viewData(head, i, labels);
      out.weights = head.weights;
      out.future = head.future;
      // the checks without the explorer's hint about its sliders (a trained head has none to move)
      out.steps = data.steps + data.checks.replace(AttentionHead.MOVE_HINT, '');
      out.W = { W_Q: head.W_Q, W_K: head.W_K };
    } else {
      const A = unf16(snap.maps[String(run.shown_layer)]);
      out.weights = A;
      out.future = causalFuture(T, sw.causal);
      const shown = A[i].slice(0, sw.causal ? i + 1 : T).map((w) => AttentionHead.fmt(w)).join(', ');
      out.steps = `<p>This head is ${run.shape.d} wide: its W_Q and W_K (${run.shape.C} × ${run.shape.d}) ` +
        `are not shipped (too large to read or to inline), only its weights on the probe. Row ${i} ` +
        `(${labels[i]}): ${shown}.</p>`;
      out.W = null;
    }
    out.layer0 = run.shape.layers > 1 ? unf16(snap.maps['0']) : null;
    return out;
  }

  /** The loss curves of seed record s, beside those of the same seed of the run it is set against. */
  function curves(run, s, runs) {
    const none = { x: [], y: [] };
    const record = run.seeds[s];
    // a point of the training curve is drawn at the end of its window of `every` steps (core.lab.encoding)
    const lines = (r, steps) => ({
      train: { x: r.curve.loss.map((_, j) => Math.min((j + 1) * r.curve.every, steps)), y: r.curve.loss },
      eval: { x: r.held_out.step, y: r.held_out.loss },
    });
    const own = lines(record, run.steps);
    // the same seed of the run it is set against (a student's run at another seed: that run's first)
    const against = runs[run.compare] && runs[run.compare].seeds;
    const compared = against && (against.find((r) => r.seed === record.seed) || against[0]);
    const within = (l) => { const n = l.x.filter((x) => x <= run.steps).length; return { x: l.x.slice(0, n), y: l.y.slice(0, n) }; };
    const other = compared ? lines(compared, runs[run.compare].steps) : { train: none, eval: none };
    // over this run's steps only (a student's run may be shorter than the run it is set against)
    other.train = within(other.train);
    other.eval = within(other.eval);
    const honest = record.held_out.honest ? { x: record.held_out.step, y: record.held_out.honest } : none;
    const lnV = Math.log(run.shape.V);
    return {
      train: own.train, eval: own.eval, 'full train': other.train, 'full eval': other.eval, honest: honest,
      uniform: { x: [0, run.steps], y: [lnV, lnV] },
    };
  }

  // --- drawing -----------------------------------------------------------------

  function el(tag, attrs = {}, children = []) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (k === 'text') e.textContent = v;
      else if (k === 'html') e.innerHTML = v;
      else e.setAttribute(k, v);
    }
    children.forEach((c) => e.appendChild(c));
    return e;
  }

  function blue(w) { // 0 → white, 1 → dark blue (weights beyond 0..1, from raw scores, are clipped)
    const t = Math.max(0, Math.min(1, w));
    const mix = (a, b) => Math.round(a + (b - a) * t);
    return `rgb(${mix(247, 8)},${mix(251, 48)},${mix(255, 107)})`;
  }

  function diverging(v, limit) { // blue for negative, red for positive, white at 0
    const t = Math.max(-1, Math.min(1, v / limit));
    const a = Math.abs(t);
    const mix = (x, y) => Math.round(x + (y - x) * a);
    return t < 0 ? `rgb(${mix(247, 33)},${mix(247, 102)},${mix(247, 172)})` : `rgb(${mix(247, 178)},${mix(247, 24)},${mix(247, 43)})`;
  }

  // WCAG relative luminance of an "rgb(r, g, b)" colour, and whether black text reads better on it than
  // white. Black, not a softer dark grey: with #1a1a1a, cells of luminance ~0.16-0.23 (mid blues) reach
  // 4.5 : 1 with neither; with black every colour reaches it with one of the two (axe-core found the gap).
  function luminance(rgb) {
    const [r, g, b] = rgb.match(/\d+/g).slice(0, 3).map((c) => {
      const v = Number(c) / 255;
      return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  }
  const DARK_INK = 0; // black
  function darkText(background) {
    const L = luminance(background);
    return (L + 0.05) / (DARK_INK + 0.05) >= 1.05 / (L + 0.05);
  }
  /** The contrast of a cell's number (in the ink darkText picks) against the cell's colour. */
  function inkContrast(background) {
    const L = luminance(background);
    return darkText(background) ? (L + 0.05) / (DARK_INK + 0.05) : 1.05 / (L + 0.05);
  }

  const CORNER_PX = 76, CELL_PX = 40; // as static/lab.css's table.lab-heatmap th.corner and td (with borders)

  /** A matrix as a table of coloured cells with their numbers; `outlineRow` frames the query's row.
   * A table of the same size is kept, and of its cells only what changed is written: what each cell shows
   * is remembered here (`table.shown`), not read back from the DOM, so a run switch or a snapshot move
   * costs the browser no new elements and no attribute writes (bench/RESULTS-lab.md). */
  function heatmap(table, M, rowLabels, colLabels, options) {
    const { hidden = null, colour, outlineRow = -1, name, corner = '' } = options;
    const nCols = colLabels.length;
    if (table.rows.length !== M.length + 1 || table.rows[0].cells.length !== nCols + 1) {
      table.textContent = '';
      table.className = 'lab-heatmap';
      // a fixed table layout: its columns' widths are set here, so new numbers never make the browser
      // measure every cell again (CSS: CORNER_PX for the first column, CELL_PX for each other)
      table.style.width = `${CORNER_PX + CELL_PX * nCols}px`;
      // the corner names what the rows and columns are (a header cell, so no cell of the table is blank)
      table.appendChild(el('tr', {}, [el('th', { class: 'corner' })].concat(
        colLabels.map(() => el('th', { scope: 'col' })))));
      M.forEach(() => table.appendChild(el('tr', {}, [el('th', { scope: 'row' })].concat(
        colLabels.map(() => el('td'))))));
      // per cell: [text, background, ink], as last written ('' = nothing yet)
      table.shown = M.map((r) => r.map(() => ['', '', '']));
      table.outlined = -1;
    }
    table.dataset.name = name;
    const setText = (node, text) => { if (node.textContent !== text) node.textContent = text; };
    const head = table.rows[0].cells;
    setText(head[0], corner);
    colLabels.forEach((c, j) => setText(head[j + 1], c));
    if (table.outlined !== outlineRow) {
      if (table.outlined >= 0) table.rows[table.outlined + 1].className = '';
      if (outlineRow >= 0) table.rows[outlineRow + 1].className = 'query-row';
    }
    M.forEach((r, i) => {
      const tr = table.rows[i + 1];
      const rowHead = tr.cells[0];
      if (i === outlineRow || i === table.outlined || rowHead.firstChild === null || rowHead.firstChild.data !== rowLabels[i]) {
        rowHead.textContent = rowLabels[i];
        if (i === outlineRow) rowHead.appendChild(el('span', { class: 'lab-sr-only', text: ' (the query)' }));
      }
      const shown = table.shown[i];
      r.forEach((v, j) => {
        const td = tr.cells[j + 1], was = shown[j];
        if (hidden && hidden[i][j]) { // shows 0 and is heard as "masked"
          if (was[0] !== 'masked') {
            td.textContent = '';
            td.appendChild(el('span', { 'aria-hidden': 'true', text: '0' }));
            td.appendChild(el('span', { class: 'lab-sr-only', text: 'masked' }));
            td.style.backgroundColor = '#d4d4d4';
            td.style.color = '';
            shown[j] = ['masked', '#d4d4d4', ''];
          }
          return;
        }
        const text = AttentionHead.fmt(v), background = colour(v);
        if (was[0] !== text) td.textContent = text; // also replaces a masked cell's two spans
        if (was[1] !== background) td.style.backgroundColor = background;
        const ink = was[1] === background ? was[2] : (darkText(background) ? '#000' : '#fff');
        if (was[2] !== ink) td.style.color = ink;
        shown[j] = [text, background, ink];
      });
    });
    table.outlined = outlineRow;
  }

  // The loss chart is drawn at the width of its box, between these (px): its text stays 11 px on a phone.
  // Below LEGEND_BESIDE_FROM px the legend goes under the plot instead of beside it.
  const CHART_MIN = 300, CHART_MAX = 880, LEGEND_BESIDE_FROM = 620;

  function lossChart(svg, lines, steps, width) {
    const W = Math.round(Math.max(CHART_MIN, Math.min(CHART_MAX, width || CHART_MAX)));
    const beside = W >= LEGEND_BESIDE_FROM;
    const L = 50, R = beside ? 250 : 14, T = 20, B = 40, plotH = 240;
    const H = T + plotH + B + (beside ? 0 : 8 + 18 * LINES.length);
    const ys = [].concat(...Object.values(lines).map((l) => l.y)).filter((y) => y !== null && y !== undefined);
    const top = 1.1 * Math.max(1, ...ys);
    const x = (s) => L + (W - L - R) * (s / steps);
    const y = (v) => T + plotH * (1 - v / top);
    const parts = [`<rect x="${L}" y="${T}" width="${W - L - R}" height="${plotH}" fill="none" stroke="#ccc"/>`];
    for (let k = 0; k <= 4; k++) {
      const v = (top * k) / 4;
      parts.push(`<text x="${L - 6}" y="${y(v) + 4}" text-anchor="end" font-size="11">${AttentionHead.fmt(v, 1)}</text>`);
      const s = Math.round((steps * k) / 4);
      parts.push(`<text x="${x(s)}" y="${T + plotH + 16}" text-anchor="middle" font-size="11">${s}</text>`);
    }
    parts.push(`<text x="${(L + W - R) / 2}" y="${T + plotH + B - 4}" text-anchor="middle" font-size="12">step</text>`);
    LINES.forEach(([name, label, colour, dash], n) => {
      const l = lines[name];
      if (l.x.length) {
        const tenth = (v) => Math.round(v * 10) / 10; // an SVG coordinate, to a tenth of a pixel
        const pts = l.x.map((s, k) => `${tenth(x(s))},${tenth(y(l.y[k]))}`).join(' ');
        parts.push(`<polyline data-line="${name}" points="${pts}" fill="none" stroke="${colour}" stroke-width="2" stroke-dasharray="${dash}"/>`);
      }
      const lx = beside ? W - R + 10 : L, ly = (beside ? T + 14 : T + plotH + B + 8) + 18 * n;
      parts.push(`<line x1="${lx}" x2="${lx + 30}" y1="${ly}" y2="${ly}" stroke="${colour}" stroke-width="2" stroke-dasharray="${dash}"/>`);
      parts.push(`<text x="${lx + 36}" y="${ly + 4}" font-size="11"${l.x.length ? '' : ' fill="#aaa"'}>${AttentionHead.escapeHtml(label)}</text>`);
    });
    svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
    svg.setAttribute('width', W);
    svg.setAttribute('height', H);
    svg.innerHTML = parts.join('');
  }

  /** Build the lab into `container` from `lab` = {runs: {name: run}, order: [...], described: {name: html}}. */
  function mount(container, lab) {
    // s: which of the run's seeds is drawn (an index into run.seeds; every shipped run has the same seeds)
    const state = { run: lab.order[0], s: 0, k: -1, i: -1 };
    const runSelect = el('select', { 'aria-label': 'Run', class: 'lab-run' },
      lab.order.map((n) => el('option', { value: n, text: n })));
    const seedSelect = el('select', { 'aria-label': 'Seed', class: 'lab-seed' },
      lab.runs[lab.order[0]].seeds.map((r, s) => el('option', { value: String(s), text: String(r.seed) })));
    const slider = el('input', { type: 'range', min: '0', step: '1', class: 'lab-snapshot', 'aria-label': 'Snapshot' });
    const sliderLabel = el('span', { class: 'lab-snapshot-label' });
    const querySelect = el('select', { 'aria-label': 'Query token', class: 'lab-query' });
    const text = el('div', { class: 'lab-text' });
    // each table is named by the heading above it
    let ids = 0;
    const uid = (what) => `lab-${what}-${++ids}-${Math.random().toString(36).slice(2, 8)}`;
    const figureBox = (title, table, cls = 'lab-figure') => {
      const id = uid('title');
      table.setAttribute('aria-labelledby', id);
      // the table keeps its width (fixed layout, 40 px a column) and scrolls sideways in this box when the
      // page is narrower: a table made a scroll box itself would squeeze its columns under the numbers
      return el('div', { class: cls }, [el('h3', { text: title, id: id }), el('div', { class: 'lab-scroll' }, [table])]);
    };
    const weights = el('table'), layer0 = el('table'), wq = el('table'), wk = el('table');
    const weightsBox = figureBox("The learned head's weights on the probe", weights);
    const layer0Box = figureBox("Layer 0's weights on the probe", layer0);
    const wBox = el('div', { class: 'lab-figure' }, [
      figureBox('Learned W_Q (rows: stream, columns: head)', wq, 'lab-w'), figureBox('Learned W_K', wk, 'lab-w')]);
    // it scrolls sideways for long vectors: a named Tab stop, so a keyboard can scroll it too
    const steps = el('div', { class: 'lab-steps', tabindex: '0', role: 'region', 'aria-label': 'Training lab: the steps for the chosen query' });
    const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
    svg.setAttribute('class', 'lab-curves');
    container.appendChild(el('div', { class: 'lab-controls' }, [
      el('label', {}, [document.createTextNode('Run '), runSelect]),
      el('label', {}, [document.createTextNode('Seed '), seedSelect]),
      el('label', {}, [sliderLabel, slider]),
      el('label', {}, [document.createTextNode('Query token '), querySelect]),
    ]));
    container.appendChild(text);
    container.appendChild(el('div', { class: 'lab-row' }, [weightsBox, layer0Box]));
    container.appendChild(el('div', { class: 'lab-row' }, [
      el('div', { class: 'lab-figure lab-steps-box' }, [el('h3', { text: 'The steps for the chosen query' }), steps]), wBox]));
    const chartBox = el('div', { class: 'lab-figure lab-loss' }, [el('h3', { text: 'Loss during training' }), svg]);
    container.appendChild(chartBox);
    let chart = null; // the run's curves, kept to redraw the chart when its box changes width
    // The box's width as the ResizeObserver last said (never read from the element in a draw: that would
    // lay the page out once more, mid-draw); until it has said, the chart is drawn at its widest.
    let chartWidth = 0;
    const drawChart = () => { if (chart) lossChart(svg, chart.lines, chart.steps, chartWidth); };
    if (typeof ResizeObserver !== 'undefined') {
      new ResizeObserver((entries) => {
        const width = Math.round(entries[entries.length - 1].contentRect.width);
        if (width !== chartWidth) { chartWidth = width; drawChart(); }
      }).observe(chartBox);
    }

    // The lab is as tall as the run it shows. A switch to a shorter run would shorten the page under a
    // reader scrolled near its end, and the browser would pull the page down to its new end: the lab keeps
    // its old height only until that room is out of sight (below the window, where dropping it moves
    // nothing on screen), then follows its run again. No room is kept for runs not shown (issue 26: a blank
    // band of up to 2,000 px below a short run).
    let keptFor = null; // the scroll listener while the old height is kept
    function keepHeight(change) {
      // held before the change: the layout that a shorter run's first read forces would pull the page already
      container.style.minHeight = `${Math.ceil(container.getBoundingClientRect().height)}px`;
      change();
      if (!keptFor) {
        keptFor = () => {
          const top = container.getBoundingClientRect().top;
          const content = Array.from(container.children).reduce((bottom, child) =>
            Math.max(bottom, child.getBoundingClientRect().bottom), top);
          if (content < window.innerHeight && container.offsetParent !== null) return; // the room is in sight
          container.style.minHeight = '';
          window.removeEventListener('scroll', keptFor);
          keptFor = null;
        };
        window.addEventListener('scroll', keptFor, { passive: true });
      }
      keptFor(); // a taller run, or the room out of sight already: at once
    }

    function draw(reshape) {
      const run = lab.runs[state.run];
      const s = Math.min(state.s, run.seeds.length - 1), record = run.seeds[s];
      const n = record.snapshots.length;
      const k = ((state.k % n) + n) % n;
      const i = ((state.i % record.probe.length) + record.probe.length) % record.probe.length;
      const data = labViewData(run, s, k, i, lab.switches);
      const labels = data.labels;
      if (reshape) {
        text.innerHTML = lab.described[state.run] + lab.at_seed[state.run][s];
        const seeds = run.seeds.map((r) => String(r.seed)); // a student's run has its own seed
        if (Array.from(seedSelect.options, (o) => o.text).join() !== seeds.join()) {
          seedSelect.textContent = '';
          seeds.forEach((t, n) => seedSelect.appendChild(el('option', { value: String(n), text: t })));
        }
        seedSelect.value = String(s);
        slider.max = String(n - 1);
        slider.disabled = n === 1; // only the trained head ships for this seed (its note says so)
        querySelect.textContent = '';
        labels.forEach((t, q) => querySelect.appendChild(el('option', { value: String(q), text: `${q}: ${t}` })));
        chart = { lines: curves(run, s, lab.runs), steps: run.steps };
        drawChart();
      }
      slider.value = String(k);
      querySelect.value = String(i);
      sliderLabel.textContent = `Snapshot ${k + 1} of ${n}: step ${data.step} `;
      slider.setAttribute('aria-valuetext', `step ${data.step}, snapshot ${k + 1} of ${n}`);
      const corner = 'query \\ key';
      heatmap(weights, data.weights, labels, labels, { hidden: data.future, colour: blue, outlineRow: i, name: 'weights', corner });
      layer0Box.style.display = data.layer0 ? '' : 'none';
      if (data.layer0) heatmap(layer0, data.layer0, labels, labels, { hidden: causalFuture(labels.length, run.switches.causal), colour: blue, name: 'layer0', corner });
      wBox.style.display = data.W ? '' : 'none';
      if (data.W) {
        const limit = Math.max(1, ...data.W.W_Q.flat().map(Math.abs), ...data.W.W_K.flat().map(Math.abs));
        const rows = data.W.W_Q.map((_, c) => String(c)), cols = data.W.W_Q[0].map((_, c) => String(c));
        const wCorner = 'stream \\ head';
        heatmap(wq, data.W.W_Q, rows, cols, { colour: (v) => diverging(v, limit), name: 'W_Q', corner: wCorner });
        heatmap(wk, data.W.W_K, rows, cols, { colour: (v) => diverging(v, limit), name: 'W_K', corner: wCorner });
      }
      steps.innerHTML = data.steps;
      container.dataset.run = state.run;
      container.dataset.seed = String(record.seed);
      container.dataset.snapshot = String(k);
    }

    runSelect.addEventListener('change', () => keepHeight(() => { state.run = runSelect.value; state.k = -1; state.i = -1; draw(true); }));
    seedSelect.addEventListener('change', () => keepHeight(() => { state.s = Number(seedSelect.value); state.k = -1; draw(true); }));
    slider.addEventListener('input', () => { state.k = Number(slider.value); draw(false); });
    querySelect.addEventListener('change', () => { state.i = Number(querySelect.value); draw(false); });
    draw(true);

    /** Add a run to the picker (a student's, static/lab_train.js), and draw it if `show`: `described` and
     * `atSeed` are its text, as lab.described and lab.at_seed hold them for a shipped run. */
    function addRun(name, label, run, described, atSeed, show = true) {
      if (!lab.runs[name]) runSelect.appendChild(el('option', { value: name, text: label }));
      lab.runs[name] = run;
      lab.described[name] = described;
      lab.at_seed[name] = [atSeed];
      if (!show) return;
      runSelect.value = name;
      keepHeight(() => { state.run = name; state.s = 0; state.k = -1; state.i = -1; draw(true); });
    }
    return { state, draw, addRun, container, runSelect, seedSelect };
  }

  /** Fill the lab's `section` (its introduction, then the lab) from `lab`, which also carries `intro`. */
  function fill(section, lab) {
    section.innerHTML = lab.intro;
    const body = el('div', { class: 'lab-body' });
    section.appendChild(body);
    return mount(body, lab);
  }

  return { unf16, labViewData, curves, mount, fill, tokenLabels, blue, diverging, inkContrast, heatmap, lossChart, el };
});
