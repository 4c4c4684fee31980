/*
 * Attention in tiles, in the browser: a port of core/tiles.py (the online softmax: one query's row a
 * tile of keys at a time), widgets/tiles_state.py (the tile size and the tiles done) and
 * widgets/tiles_viewdata.py (what the view shows), as pure functions of the head static/attention.js
 * computes.  tests/test_tiles.py holds the two sides equal (numbers to 1e-9, text exactly), so change
 * both together.  The arithmetic is done in Python's order with attention.js's exp and sum, so the
 * numbers agree to the last bit.
 *
 * Plain ES2020.  In a page it defines the global `TilesExplorer` (after static/pyformat.js,
 * static/checks.js and static/attention.js); in Node, require() returns the same object.
 */
(function (root, factory) {
  if (typeof module === 'object' && module.exports) {
    module.exports = factory(require('./attention.js'), require('./checks.js'), require('./pyformat.js'));
  } else {
    root.TilesExplorer = factory(root.AttentionHead, root.InputChecks, root.PyFormat);
  }
})(typeof self !== 'undefined' ? self : this, function (A, C, F) {
  'use strict';

  const { exp, sum, fmt, fmtVector, escapeHtml } = A;
  const UNSEEN_ALPHA = 0;
  const FRAME_INSET = 0.08;
  const MIN_SCORE_LIMIT = 1;
  const FRAME_WIDTH = 250;
  const ROW_HEIGHT = 44;

  // --- core/tiles.py ------------------------------------------------------------------------------------

  function tiles(T, size) {
    const out = [];
    for (let start = 0; start < T; start += size) out.push([start, Math.min(start + size, T)]);
    return out;
  }

  /** Query i's scores against keys start … stop − 1, as the head makes them (÷√d, ÷τ, the mask). */
  function tileScores(head, i, start, stop) {
    const q = head.Q[i];
    const row = [];
    for (let j = start; j < stop; j++) {
      let s = 0;
      for (let k = 0; k < q.length; k++) s += q[k] * head.K[j][k];
      if (head.scaling) s = s / Math.sqrt(head.d);
      if (head.temperature !== 1) s = s / head.temperature;
      row.push(head.causal && j > i ? -Infinity : s);
    }
    return row;
  }

  const startRunning = (d) => ({ maximum: -Infinity, total: 0, blend: new Array(d).fill(0), chosen: -1 });

  /** Σ_j e_j · v_j, summed over j in order (core.attention.matmul's). */
  function weighted(e, values) {
    const out = new Array(values[0].length).fill(0);
    for (let c = 0; c < out.length; c++) {
      let s = 0;
      for (let j = 0; j < e.length; j++) s += e[j] * values[j][c];
      out[c] = s;
    }
    return out;
  }

  function onlineSoftmax(running, scores, values) {
    const m = Math.max(running.maximum, Math.max(...scores));
    const rescale = exp(running.maximum - m);
    const e = scores.map((s) => exp(s - m));
    const tile = weighted(e, values);
    return [{
      maximum: m,
      total: running.total * rescale + sum(e),
      blend: running.blend.map((b, c) => b * rescale + tile[c]),
      chosen: -1,
    }, rescale];
  }

  function runningTop1(running, scores, start) {
    let k = 0;
    for (let j = 1; j < scores.length; j++) if (scores[j] > scores[k]) k = j;
    if (running.chosen >= 0 && !(scores[k] > running.maximum)) return running;
    return { maximum: scores[k], total: 0, blend: running.blend, chosen: start + k };
  }

  function runningRaw(running, scores, values) {
    const tile = weighted(scores.map((s) => (Number.isFinite(s) ? s : 0)), values);
    return { maximum: running.maximum, total: 0, blend: running.blend.map((b, c) => b + tile[c]), chosen: -1 };
  }

  /** Running.output: the row's output if it stopped here. */
  function output(running, normaliser, V) {
    if (normaliser === 'softmax') return running.blend.map((b) => (running.total > 0 ? b / running.total : 0));
    if (normaliser === 'top1') return running.chosen >= 0 ? V[running.chosen].slice() : running.blend.map(() => 0);
    return running.blend.slice();
  }

  function attendInTiles(head, i, size) {
    const steps = [];
    let running = startRunning(head.d);
    for (const [start, stop] of tiles(head.T, size)) {
      const scores = tileScores(head, i, start, stop);
      const visible = scores.filter(Number.isFinite);
      const tileMax = visible.length ? Math.max(...visible) : -Infinity;
      let rescale = 1;
      if (visible.length) {
        const values = head.V.slice(start, stop);
        if (head.normaliser === 'softmax') [running, rescale] = onlineSoftmax(running, scores, values);
        else if (head.normaliser === 'top1') running = runningTop1(running, scores, start);
        else running = runningRaw(running, scores, values);
      }
      steps.push({ start, stop, scores, skipped: !visible.length, tile_max: tileMax, rescale, running });
    }
    return steps;
  }

  function blendedSize(head, i) {
    const terms = head.weights[i].map((w, j) => Math.abs(w) * Math.max(...head.V[j].map(Math.abs)));
    return Math.max(1, sum(terms));
  }

  function tiledDifference(head, i, steps) {
    const out = output(steps[steps.length - 1].running, head.normaliser, head.V);
    return Math.max(...out.map((v, c) => Math.abs(v - head.output[i][c]))) / blendedSize(head, i);
  }

  // --- widgets/tiles_state.py -----------------------------------------------------------------------------

  function settle(size, step, T) {
    size = Math.min(Math.max(size, 1), T);
    const count = Math.ceil(T / size);
    return [size, Math.min(Math.max(step, 0), count), count];
  }

  /** tiles_state.apply: the settings after one action ({do: 'size', value}, {do: 'next'}, {do: 'again'}). */
  function apply(settings, action, T) {
    const [, step, count] = settle(settings.size, settings.step, T);
    if (action.do === 'size') return { size: settle(action.value, 0, T)[0], step: 0 };
    if (action.do === 'next') return { size: settings.size, step: Math.min(step + 1, count) };
    if (action.do === 'again') return { size: settings.size, step: 0 };
    throw new Error(`unknown action ${JSON.stringify(action.do)}`);
  }

  // --- widgets/tiles_viewdata.py --------------------------------------------------------------------------

  function weightsSoFar(normaliser, steps, T) {
    const w = new Array(T).fill(NaN);
    if (!steps.length) return w;
    const r = steps[steps.length - 1].running;
    for (const s of steps) {
      s.scores.forEach((score, k) => {
        const visible = Number.isFinite(score);
        const key = s.start + k;
        if (normaliser === 'softmax') w[key] = visible ? exp(score - r.maximum) / r.total : 0;
        else if (normaliser === 'raw') w[key] = visible ? score : 0;
        else w[key] = key === r.chosen ? 1 : 0;
      });
    }
    return w;
  }

  /** tiles_viewdata.strip_layout: the numbers' font (0: none), a cell's width, the key axis's labels. */
  function stripLayout(labels) {
    const cellW = FRAME_WIDTH / labels.length;
    const cols = labels.map((t, k) => [k, A.shortLabel(t)]);
    const widest = Math.max(...cols.map(([, t]) => A.textPx(t, A.AXIS_FONT)));
    let flat = widest + A.TICK_GAP <= cellW;
    const [xTicks, xLabels] = A.ticks(cols, flat ? cellW : cellW * Math.sin(A.SLANT), A.LINE * A.AXIS_FONT + A.TICK_GAP);
    if (flat) flat = xTicks.length < 2 || widest + A.TICK_GAP <= (xTicks[1] - xTicks[0]) * cellW;
    return {
      font: A.numberFont(cellW, ROW_HEIGHT), cell_width: cellW, x_ticks: xTicks, x_labels: xLabels,
      x_angle: flat ? 0 : A.SLANT,
    };
  }

  function cells(head, labels, stepsAll, step, layout) {
    const T = head.T;
    const done = stepsAll.slice(0, step);
    const reached = done.length ? done[done.length - 1].stop : 0;
    const scores = stepsAll.flatMap((s) => s.scores);
    const weights = weightsSoFar(head.normaliser, done, T);
    const shown = scores.map((_, k) => k < reached);
    const masked = scores.map((s) => !Number.isFinite(s));
    const { font, cell_width: width } = layout;
    const texts = (values, maskedText) => values.map((v, k) => (!shown[k] ? '' : masked[k] ? maskedText : fmt(v)));
    const column = (values, maskedText, y) => ({
      x: values.map((_, k) => k),
      y: values.map(() => y),
      value: values.map((v, k) => (shown[k] && !masked[k] ? v : NaN)),
      text: texts(values, maskedText).map((t) => (font ? A.cellText(t, font, width) : '')),
      alpha: shown.map((seen) => (seen ? 1 : UNSEEN_ALPHA)),
    });
    const scoreCells = Object.assign(column(scores, '−∞', 0), {
      key: labels.slice(), score_text: texts(scores, '−∞'), weight_text: texts(weights, '0'),
    });
    return [scoreCells, column(weights, '0', 1)];
  }

  function frames(spans) {
    return {
      x: spans.map(([a, b]) => (a + b - 1) / 2),
      y: spans.map(() => 0.5),
      width: spans.map(([a, b]) => b - a - FRAME_INSET),
      height: spans.map(() => 2 - FRAME_INSET),
    };
  }

  function scoreLimits(head, i) {
    const finite = head.masked[i].filter(Number.isFinite).map(Math.abs);
    const limit = Math.max(MIN_SCORE_LIMIT, finite.length ? Math.max(...finite) : 0);
    return [-limit, limit];
  }

  function weightLimits(head, i) {
    const w = head.weights[i];
    return [Math.min(0, Math.min(...w)), Math.max(1, Math.max(...w))];
  }

  function keysText(labels, start, stop) {
    const names = labels.slice(start, stop).map((l) => `'${l}'`);
    return names.length === 1 ? names[0] : `${names[0]} to ${names[names.length - 1]}`;
  }

  function runningText(normaliser, s, V, first) {
    const r = s.running;
    const out = fmtVector(output(r, normaliser, V));
    if (normaliser === 'softmax') return [fmt(r.maximum), first ? '—' : fmt(s.rescale, 3), fmt(r.total, 3), out];
    if (normaliser === 'top1') return [fmt(r.maximum), '—', '—', out];
    return ['—', '—', '—', out];
  }

  function tableHtml(head, labels, stepsAll, step) {
    const e = escapeHtml;
    const headRow =
      '<tr><th>tile</th><th>keys</th><th>its largest score</th><th>running max m</th>' +
      '<th>earlier sums × exp(m − m′)</th><th>running sum l</th><th>output so far</th></tr>';
    const rows = stepsAll.slice(0, step).map((s, k) => {
      const where = e(keysText(labels, s.start, s.stop));
      const cellsOf = s.skipped
        ? [`${k + 1}`, where, 'all masked: skipped', '', '', '', '']
        : [`${k + 1}`, where, e(fmt(s.tile_max)), ...runningText(head.normaliser, s, head.V, k === 0).map(e)];
      const mark = k === step - 1 ? " class='now'" : '';
      return `<tr${mark}>` + cellsOf.map((c) => `<td>${c}</td>`).join('') + '</tr>';
    });
    if (step < stepsAll.length) {
      const next = stepsAll[step];
      const where = e(keysText(labels, next.start, next.stop));
      rows.push(`<tr class='next'><td>${step + 1}</td><td>${where}</td><td colspan='5'>Next tile</td></tr>`);
    }
    return `<div class='tiles-scroll'><table class='tiles-table'>${headRow}${rows.join('')}</table></div>`;
  }

  function readoutHtml(config, head, i, labels, size, stepsAll, step) {
    const n = stepsAll.length;
    const me = labels[i];
    const d = head.d;
    const normaliser = head.normaliser;
    const kept = {
      softmax: 'the running max m, the running sum l of exp(s − m) and acc, the sum of exp(s − m) times ' +
        'each value',
      raw: 'acc, the sum of each raw score times its value (raw scores as weights need no max or sum)',
      top1: 'the largest score so far and its key (top-1 needs no sum)',
    }[normaliser];
    const lines = [
      `The row of '${me}': ${head.T} keys in ${n} tile${n !== 1 ? 's' : ''} of ${size}. After each tile only ` +
        `${kept} are kept; the tile's scores are dropped.`,
    ];
    if (step === 0) {
      lines.push('No tile yet: m = −∞, l = 0, acc = 0. Press Next tile.');
    } else {
      const s = stepsAll[step - 1];
      const out = fmtVector(output(s.running, normaliser, head.V));
      lines.push(
        `After tile ${step} of ${n} (${keysText(labels, s.start, s.stop)}` +
          (s.skipped ? ', all after the query: skipped' : '') + `): output so far ${out}.`
      );
    }
    if (step === n) {
      const difference = tiledDifference(head, i, stepsAll);
      const ok = difference <= config.agreement ? '✓' : '✗';
      lines.push(
        `The last tile gives the head's own output, ${fmtVector(head.output[i])}: the two differ by ` +
          `${difference ? C.sci(difference) : '0'} (as a share of the blend's size), within ` +
          `${F.general(config.agreement)} ${ok}.`
      );
    }
    const [count, what] = {
      softmax: [d + 2, `m, l and a ${d}-wide acc`],
      raw: [d, `a ${d}-wide acc`],
      top1: [2, 'the largest score and its key'],
    }[normaliser];
    lines.push(
      `Held at once: one tile of ${size} score${size !== 1 ? 's' : ''} and ${count} running numbers ` +
        `(${what}), never the row's ${head.T} scores; a real model tiles the queries too, and never holds ` +
        'the T × T matrix.'
    );
    return "<div class='tiles-readout'>" + lines.map((line) => `<p>${escapeHtml(line)}</p>`).join('') + '</div>';
  }

  /** widgets/tiles_viewdata.py view_data: everything the view shows for query i of `head`. */
  function viewData(config, head, i, labels, size, step) {
    labels = Array.from(labels, String);
    let count;
    [size, step, count] = settle(size, step, head.T);
    const stepsAll = attendInTiles(head, i, size);
    const layout = stripLayout(labels);
    const [scores, weights] = cells(head, labels, stepsAll, step, layout);
    const spans = stepsAll.map((s) => [s.start, s.stop]);
    return {
      layout,
      scores,
      weights,
      tiles: frames(spans),
      current: frames(step ? spans.slice(step - 1, step) : []),
      score_limits: scoreLimits(head, i),
      weight_limits: weightLimits(head, i),
      size,
      step,
      count,
      T: head.T,
      table: tableHtml(head, labels, stepsAll, step),
      readout: readoutHtml(config, head, i, labels, size, stepsAll, step),
    };
  }

  return { tiles, attendInTiles, tiledDifference, output, settle, apply, viewData };
});
