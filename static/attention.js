/*
 * One attention head in the browser: a port of core/attention.py, core/options.py (checking an option
 * against the table of switches), core/trace.py and widgets/viewdata.py, so the static page shows
 * exactly what the served widget shows.  tests/test_parity.py holds the two together (numbers and
 * strings identical), so change both sides together.
 *
 * The switches are not listed here: `attend` takes the table core.options.table_json() makes (the
 * page's config.switches) and reads every option's name, default and limits from it.
 *
 * Plain ES2020, on static/pyformat.js (Python's number formatting: the page's one formatter and one
 * HTML escaper).  In a page it defines the global `AttentionHead` (after PyFormat); in Node, require()
 * returns the same object.
 */
(function (root, factory) {
  const node = typeof module === 'object' && module.exports;
  const api = node ? factory(require('./pyformat.js')) : factory(root.PyFormat);
  api.factory = factory; // its source goes into the lab trainer's Web Worker (static/train.js)
  if (node) module.exports = api;
  else root.AttentionHead = api;
})(typeof self !== 'undefined' ? self : this, function (PyFormat) {
  'use strict';

  const LARGEST_ENTRY = 1e100; // as core.options: beyond this Q·Kᵀ overflows
  // as core.attention.SCORES_OVERFLOW
  const SCORES_OVERFLOW =
    'X, the W matrices and the X multiplier are too large together: the scores overflow to infinity';
  const EXPONENT_FROM = 1e6; // as core.trace: print huge numbers as 1.23e+06
  const EXP_SHOWN_UP_TO = 50; // as core.trace: larger rows show exp(s − max)
  const MIN_SCORE_LIMIT = 1; // as widgets.viewdata: colour range never narrower
  const VECTOR = /\[[^\[\]]*\]/g; // as widgets.viewdata: a printed vector, kept on one line

  class AttentionError extends Error {
    constructor(message) {
      super(message);
      this.name = 'AttentionError';
    }
  }

  // --- arithmetic, in numpy's order ------------------------------------------

  // numpy's pairwise sum: plain running sum below 8 items, else 8 interleaved
  // partial sums.  Matching it keeps sums bit-for-bit equal for T ≤ 16.
  function sum(a) {
    const n = a.length;
    if (n < 8) {
      let s = 0;
      for (let k = 0; k < n; k++) s += a[k];
      return s;
    }
    const r = a.slice(0, 8);
    let k = 8;
    for (; k < n - (n % 8); k += 8) for (let j = 0; j < 8; j++) r[j] += a[k + j];
    let s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; k < n; k++) s += a[k];
    return s;
  }

  function matmul(A, B) {
    return A.map((row) =>
      B[0].map((_, j) => {
        let s = 0;
        for (let k = 0; k < row.length; k++) s += row[k] * B[k][j];
        return s;
      })
    );
  }

  // --- e^x as fdlibm computes it, in the float steps core.attention.exp takes (so both get the same bits) ---

  const WORDS = new DataView(new ArrayBuffer(8)); // one buffer for every call: exp is hot in the trainer

  function fromWords(high) {
    WORDS.setUint32(0, high);
    WORDS.setUint32(4, 0);
    return WORDS.getFloat64(0);
  }

  const POW2 = Float64Array.from({ length: 2046 }, (_, n) => fromWords((n + 1) * 0x100000)); // 2^-1022 … 2^1023

  function pow2(k) { // exactly 2^k for -1022 ≤ k ≤ 1023
    return POW2[k + 1022];
  }

  const HALF_LN2 = fromWords(0x3fd62e43);
  const THREE_HALVES_LN2 = fromWords(0x3ff0a2b2);
  const LN2_HI = 6.93147180369123816490e-01;
  const LN2_LO = 1.90821492927058770002e-10;
  const INV_LN2 = 1.44269504088896338700e00;
  const P = [1.66666666666666019037e-01, -2.77777777770155933842e-03, 6.61375632143793436117e-05,
    -1.65339022054652515390e-06, 4.13813679705723846039e-08];
  const OVER = 7.09782712893383973096e02;
  const UNDER = -7.45133219101941108420e02;

  function exp(x) {
    if (Number.isNaN(x)) return NaN;
    if (x > OVER) return Infinity;
    if (x < UNDER) return 0;
    const a = Math.abs(x);
    if (a < 2 ** -28) return 1 + x;
    let k = 0;
    let hi = x;
    let lo = 0;
    if (a >= THREE_HALVES_LN2) {
      k = Math.trunc(INV_LN2 * x + (x < 0 ? -0.5 : 0.5));
      hi = x - k * LN2_HI;
      lo = k * LN2_LO;
    } else if (a >= HALF_LN2) {
      k = x < 0 ? -1 : 1;
      hi = x - (x < 0 ? -LN2_HI : LN2_HI);
      lo = x < 0 ? -LN2_LO : LN2_LO;
    }
    const r = k !== 0 ? hi - lo : x;
    const t = r * r;
    const c = r - t * (P[0] + t * (P[1] + t * (P[2] + t * (P[3] + t * P[4]))));
    if (k === 0) return 1 - ((r * c) / (c - 2) - r);
    const y = 1 - ((lo - (r * c) / (2 - c)) - hi);
    if (k > 1023) return y * 2 * pow2(k - 1);
    return k >= -1021 ? y * pow2(k) : y * pow2(k + 1000) * pow2(-1000);
  }

  const transpose = (A) => A[0].map((_, j) => A.map((row) => row[j]));
  const allFinite = (A) => A.every((row) => row.every(Number.isFinite));
  const copy = (A) => A.map((row) => row.slice());
  const maxOf = (a) => a.reduce((m, v) => (v > m ? v : m), -Infinity);
  const minOf = (a) => a.reduce((m, v) => (v < m ? v : m), Infinity);

  // First index of the largest entry, like np.argmax (so ties go to the earliest key).
  function argmax(a) {
    let best = 0;
    for (let k = 1; k < a.length; k++) if (a[k] > a[best]) best = k;
    return best;
  }

  // --- formatting: static/pyformat.js, as core.trace.fmt uses Python's f"{x:.2f}" / f"{x:.2e}" ----------

  /** One number for display: −∞ for masked, no "-0.00", exponent form when huge. */
  function fmt(x, digits = 2) {
    x = Number(x);
    if (x === Infinity) return '∞';
    if (x === -Infinity) return '−∞';
    if (Number.isNaN(x)) return 'NaN';
    let text = Math.abs(x) >= EXPONENT_FROM ? PyFormat.expo(x, digits) : PyFormat.fixed(x, digits);
    if (text[0] === '-' && Number(text) === 0) text = text.slice(1);
    return text;
  }

  function fmtVector(values, digits = 2) {
    return '[' + Array.from(values, (v) => fmt(v, digits)).join(', ') + ']';
  }

  const escapeHtml = PyFormat.escapeHtml; // Python's html.escape(s, quote=True)

  // --- input checks -------------------------------------------------------------

  function asMatrix(name, values) {
    const isRow = (r) => Array.isArray(r) || ArrayBuffer.isView(r);
    if (!isRow(values) || !Array.from(values).every(isRow)) {
      throw new AttentionError(`${name} must be a matrix of numbers (an array of rows)`);
    }
    const rows = Array.from(values, (r) => Array.from(r));
    if (rows.length < 1 || rows[0].length < 1) {
      throw new AttentionError(`${name} needs at least one row and one column`);
    }
    rows.forEach((r, i) => {
      if (r.length !== rows[0].length) {
        throw new AttentionError(`${name} row ${i} has ${r.length} entries; row 0 has ${rows[0].length}`);
      }
      r.forEach((v, j) => {
        if (typeof v !== 'number') throw new AttentionError(`${name}[${i}, ${j}] is not a number`);
        if (!Number.isFinite(v)) {
          throw new AttentionError(
            `${name}[${i}, ${j}] is ${PyFormat.reprFloat(v)}; every entry must be a finite number`);
        }
        if (Math.abs(v) > LARGEST_ENTRY) {
          throw new AttentionError(`${name}[${i}, ${j}] is ${PyFormat.general(v)}; entries must lie within ` +
            `±${PyFormat.general(LARGEST_ENTRY)}`);
        }
      });
    });
    return rows;
  }

  // --- an option against its row of the table (core.options), with Python's messages -----------------

  const PLAIN_NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
  const SPECIAL_NUMBER = /^[+-]?(inf|infinity|nan)$/i;

  /** Python's float(value) for what a control can send; null when Python would raise. */
  function pyFloat(value) {
    if (typeof value === 'boolean') return value ? 1 : 0;
    if (typeof value === 'number') return value;
    if (typeof value !== 'string') return null;
    const t = value.trim();
    if (PLAIN_NUMBER.test(t)) return Number(t);
    if (SPECIAL_NUMBER.test(t)) {
      const neg = t[0] === '-';
      return /nan/i.test(t) ? NaN : neg ? -Infinity : Infinity;
    }
    return null;
  }

  /** repr() of what a control can send: None, a bool, a float or a string. */
  function pyRepr(v) {
    if (v === null || v === undefined) return 'None';
    if (v === true) return 'True';
    if (v === false) return 'False';
    if (typeof v === 'number') return PyFormat.reprFloat(v);
    const s = String(v);
    const q = s.indexOf("'") >= 0 && s.indexOf('"') < 0 ? '"' : "'";
    const body = s
      .replace(/\\/g, '\\\\')
      .replace(/\n/g, '\\n')
      .replace(/\r/g, '\\r')
      .replace(/\t/g, '\\t')
      .split(q)
      .join('\\' + q);
    return q + body + q;
  }

  /** core.options.as_finite_number: `value` as a number, or AttentionError if it is not a usable one. */
  function asFiniteNumber(name, value) {
    const x = pyFloat(value);
    if (x === null) throw new AttentionError(`${name} is ${pyRepr(value)}; expected a number`);
    if (!Number.isFinite(x)) {
      throw new AttentionError(`${name} is ${PyFormat.reprFloat(x)}; expected a finite number`);
    }
    if (Math.abs(x) > LARGEST_ENTRY) {
      const g = PyFormat.general;
      throw new AttentionError(`${name} is ${g(x)}; it must lie within ±${g(LARGEST_ENTRY)}`);
    }
    return x;
  }

  /** core.options.check_option: the value option `name` takes, by its row of `switches` (the table). */
  function checkOption(switches, name, value) {
    const s = switches.find((row) => row.name === name);
    if (s === undefined) throw new AttentionError(`there is no option called ${pyRepr(name)}`);
    if (s.kind === 'toggle') return Boolean(value);
    if (s.kind === 'choice') {
      if (s.choices.indexOf(value) < 0) {
        throw new AttentionError(`${name} is ${pyRepr(value)}; expected one of ${s.choices.join(', ')}`);
      }
      return value;
    }
    const x = asFiniteNumber(name, value);
    if (!(s.low <= x && x <= s.high)) {
      const g = PyFormat.general;
      throw new AttentionError(`${name} is ${g(x)}; expected a number from ${g(s.low)} to ${g(s.high)}`);
    }
    return x;
  }

  /** Every option of the table: the given ones checked (as Options().replace), the others at their default. */
  function optionsFrom(switches, given) {
    if (!Array.isArray(switches)) {
      throw new TypeError('attend() needs the table of switches (core.options.table_json())');
    }
    const unknown = Object.keys(given).filter((k) => !switches.some((s) => s.name === k));
    if (unknown.length) throw new TypeError(`attend() got unknown options: ${unknown.sort().join(', ')}`);
    return Object.fromEntries(switches.map((s) =>
      [s.name, given[s.name] === undefined ? s.default : checkOption(switches, s.name, given[s.name])]));
  }

  const shape = (A) => `(${A.length}, ${A[0].length})`;

  // --- the head -------------------------------------------------------------------

  function softmaxRow(s) {
    // Subtract the largest visible score so exp() stays in range; −∞ gets exactly 0.
    let top = maxOf(s.filter(Number.isFinite));
    if (!Number.isFinite(top)) top = 0;
    const e = s.map((v) => (Number.isFinite(v) ? exp(v - top) : 0));
    const total = sum(e);
    return e.map((v) => (total > 0 ? v / total : 0));
  }

  function normaliseRow(s, normaliser) {
    if (normaliser === 'raw') return s.map((v) => (Number.isFinite(v) ? v : 0));
    if (normaliser === 'top1') {
      const j = argmax(s);
      return s.map((_, k) => (k === j ? 1 : 0));
    }
    return softmaxRow(s);
  }

  /**
   * Run one head on token vectors X [T, C]; keep every step, like core.attention.attend.
   * options: {name: value} for any of the table's switches (scaling, causal, tied_qk, normaliser, x_scale,
   * temperature, as `switches`, core.options.table_json(), declares them); one left out takes its default.
   */
  function attend(X, W_Q, W_K, W_V, options, switches) {
    const o = optionsFrom(switches, options || {});
    X = asMatrix('X', X);
    W_Q = asMatrix('W_Q', W_Q);
    W_K = asMatrix('W_K', W_K);
    W_V = asMatrix('W_V', W_V);
    const T = X.length;
    const C = X[0].length;
    if (W_Q.length !== C) {
      throw new AttentionError(`W_Q has shape ${shape(W_Q)}; expected (${C}, d) to match X's ${C} columns`);
    }
    const d = W_Q[0].length;
    for (const [name, W] of [['W_K', W_K], ['W_V', W_V]]) {
      if (W.length !== C || W[0].length !== d) {
        throw new AttentionError(`${name} has shape ${shape(W)}; expected (${C}, ${d}) to match W_Q`);
      }
    }

    const Xs = X.map((row) => row.map((v) => v * o.x_scale));
    const W_K_used = o.tied_qk ? W_Q : W_K;
    const Q = matmul(Xs, W_Q);
    const K = matmul(Xs, W_K_used);
    const V = matmul(Xs, W_V);
    const scores = matmul(Q, transpose(K));
    if (!allFinite(scores) || !allFinite(V)) throw new AttentionError(SCORES_OVERFLOW);
    const root = Math.sqrt(d);
    let scaled = o.scaling ? scores.map((row) => row.map((v) => v / root)) : copy(scores);
    const tau = o.temperature;
    if (tau !== 1) scaled = scaled.map((row) => row.map((v) => v / tau)); // as core.attention.cool
    if (!allFinite(scaled)) { // only ÷τ with τ < 1 can do it; the softmax would read +∞ as masked
      throw new AttentionError(`${SCORES_OVERFLOW} once divided by τ = ${PyFormat.general(tau)}`);
    }
    const masked = scaled.map((row, i) => row.map((v, j) => (o.causal && j > i ? -Infinity : v)));
    const weights = masked.map((row) => normaliseRow(row, o.normaliser));
    const output = matmul(weights, V);
    if (!allFinite(output)) throw new AttentionError('the output overflows to infinity: use smaller values');
    return {
      X: Xs, W_Q, W_K: W_K_used, W_V, Q, K, V, scores, scaled, masked, weights, output,
      future: masked.map((row) => row.map((v) => v === -Infinity)),
      T, C, d, ...o, options: o,
    };
  }

  // --- the trace: six steps for one query ------------------------------------------

  function rowChecks(head, i) {
    const w = head.weights[i];
    const hidden = head.future[i];
    const isDistribution =
      head.normaliser !== 'raw' || (w.every((v) => v >= 0) && Math.abs(sum(w) - 1) < 1e-9);
    let entropy = null;
    if (isDistribution) {
      const p = w.filter((v) => v > 0);
      entropy = -sum(p.map((v) => v * Math.log(v))) + 0; // + 0 turns −0 into 0, as in Python
    }
    const onHidden = w.filter((_, j) => hidden[j]).map(Math.abs);
    return {
      row_sum: sum(w),
      masked_keys: hidden.filter(Boolean).length,
      masked_max: onHidden.length ? maxOf(onHidden) : 0,
      max_weight: maxOf(w),
      max_key: argmax(w),
      entropy,
      shown_hundredths: shownHundredths(w),
    };
  }

  // as core.trace.shown_hundredths: the weights as printed at two places, added up, in hundredths
  function shownHundredths(w) {
    if (!w.every((v) => Math.abs(v) < 1e6)) return 0;
    return w.reduce((total, v) => total + Number(fmt(v).replace('.', '')), 0);
  }

  // ÷√d (or why not), then ÷τ when the temperature is not 1, as core.trace._scale_lines.
  function scaleLines(head, S, scaled) {
    const tau = head.temperature;
    const root = Math.sqrt(head.d);
    const rooted = tau === 1 ? scaled : head.scaling ? S.map((v) => v / root) : S;
    const first = head.scaling
      ? `divide by √${head.d} = ${fmt(root, 3)}: ${fmtVector(rooted)}`
      : 'scaling is off, so the scores are used as they are';
    if (tau === 1) return [first];
    return [first, `divide by the temperature τ = ${fmt(tau)}: ${fmtVector(scaled)}`];
  }

  function maskLine(head, i, labels) {
    if (!head.causal) return 'the mask is off, so every key stays, later ones too';
    const later = labels.slice(i + 1);
    if (!later.length) return `no token comes after '${labels[i]}', so nothing changes`;
    const names = later.map((k) => `'${k}'`).join(', ');
    return `${names} come${later.length === 1 ? 's' : ''} later: set to −∞`;
  }

  const NORMALISER_NAMES = { softmax: 'softmax', raw: 'no softmax', top1: 'top-1' };

  function normaliserLines(head, masked, w, labels) {
    if (head.normaliser === 'raw') {
      return [`weights = the scores, masked ones 0 = ${fmtVector(w)}, sum ${fmt(sum(w))}`];
    }
    if (head.normaliser === 'top1') {
      return [`all the weight on the largest score, '${labels[argmax(w)]}': ${fmtVector(w)}`];
    }
    const top = maxOf(masked.filter(Number.isFinite));
    // exp of a large score would overflow the page; relative to the max, the ratios still show.
    const plain = top <= EXP_SHOWN_UP_TO;
    const lead = plain ? 'exp →' : `exp(s − ${fmt(top)}) →`;
    const e = masked.map((v) => (Number.isFinite(v) ? exp(plain ? v : v - top) : 0));
    return [`${lead} ${fmtVector(e)}, sum ${fmt(sum(e))}`, `weights = ${fmtVector(w)}`];
  }

  function blendLines(w, V, out) {
    const terms = w
      .map((wj, j) => (wj !== 0 ? `${fmt(wj)}·${fmtVector(V[j])}` : null))
      .filter((t) => t !== null)
      .join(' + ');
    return [terms || '0', `= ${fmtVector(out)}`];
  }

  /** Walk query token i through the head, like core.trace.trace. */
  function trace(head, i, labels) {
    labels = Array.from(labels, String);
    if (labels.length !== head.T) {
      throw new AttentionError(`labels has ${labels.length} entries; expected ${head.T}, one per token`);
    }
    if (!Number.isInteger(i) || i < 0 || i >= head.T) {
      throw new AttentionError(`query is ${i}; expected a token index from 0 to ${head.T - 1}`);
    }
    const me = labels[i];
    const q = head.Q[i];
    const w = head.weights[i];
    const masked = head.masked[i];
    const pairs = (M) => labels.map((k, j) => `${k} ${fmtVector(M[j])}`).join('  ');
    const step = (number, name, lines, values) => ({ number, name, lines, values: values.slice() });
    const steps = [
      step(1, 'project', [`q_${me} = x_${me}·W_Q = ${fmtVector(q)}`, 'keys   ' + pairs(head.K),
        'values ' + pairs(head.V)], q),
      step(2, 'scores', [`q_${me} · k_j = ${fmtVector(head.scores[i])}`], head.scores[i]),
      step(3, 'scale', scaleLines(head, head.scores[i], head.scaled[i]), head.scaled[i]),
      step(4, 'mask', [maskLine(head, i, labels)], masked),
      step(5, NORMALISER_NAMES[head.normaliser], normaliserLines(head, masked, w, labels), w),
      step(6, 'blend', blendLines(w, head.V, head.output[i]), head.output[i]),
    ];
    return { query: i, label: me, steps, checks: rowChecks(head, i) };
  }

  // --- view data: what each figure shows, like widgets.viewdata -------------------------

  /** widgets.viewdata.matrix_cells; `fit` = [font px, cell width px] for the cells' numbers, or null. */
  function matrixCells(M, rowLabels, colLabels, hidden, hiddenText, fit) {
    const cells = { x: [], y: [], value: [], text: [], row: [], col: [] };
    M.forEach((r, i) =>
      r.forEach((v, j) => {
        const value = hidden && hidden[i][j] ? NaN : v;
        cells.x.push(j);
        cells.y.push(i);
        cells.value.push(value);
        cells.text.push(!fit ? '' : cellText(Number.isNaN(value) ? hiddenText : fmt(value), fit[0], fit[1]));
        cells.row.push(rowLabels[i]);
        cells.col.push(colLabels[j]);
      })
    );
    return cells;
  }

  function scoreLimit(M) {
    const finite = M.flat().filter(Number.isFinite).map(Math.abs);
    return Math.max(MIN_SCORE_LIMIT, finite.length ? maxOf(finite) : 0);
  }

  function heatmaps(head, labels) {
    const dims = head.Q[0].map((_, k) => String(k));
    const symmetric = (limit) => [-limit, limit];
    const W = head.weights.flat();
    const qkv = symmetric(scoreLimit(head.Q.concat(head.K, head.V)));
    const layout = heatmapLayouts(labels, head.d);
    const fit = {};
    for (const [figure, spec] of Object.entries(HEATMAPS)) {
      for (const block of spec.blocks) fit[block] = layout[figure].font ? [layout[figure].font, layout[figure].cell_width] : null;
    }
    const out = {
      cells: {
        // Raw scores are shown whole; the mask greys out later keys from the scaled scores on.
        scores: matrixCells(head.scores, labels, labels, null, '−∞', fit.scores),
        scaled: matrixCells(head.masked, labels, labels, head.future, '−∞', fit.scaled),
        weights: matrixCells(head.weights, labels, labels, head.future, '0', fit.weights),
        Q: matrixCells(head.Q, labels, dims, null, '−∞', fit.Q),
        K: matrixCells(head.K, labels, dims, null, '−∞', fit.K),
        V: matrixCells(head.V, labels, dims, null, '−∞', fit.V),
      },
      limits: {
        scores: symmetric(scoreLimit(head.scores)),
        scaled: symmetric(scoreLimit(head.masked)),
        weights: [Math.min(0, minOf(W)), Math.max(1, maxOf(W))],
        Q: qkv.slice(),
        K: qkv.slice(),
        V: qkv.slice(),
      },
      layout,
    };
    // a figure with numbers says so when some are left out (widgets/viewdata.py heatmaps; the layouts are
    // shared: a copy that says it)
    out.layout = Object.assign({}, layout);
    for (const [figure, spec] of Object.entries(HEATMAPS)) {
      if (layout[figure].font && spec.blocks.some((b) => out.cells[b].text.some((t) => !t))) {
        out.layout[figure] = Object.assign({}, layout[figure], { note: SOME_NUMBERS });
      }
    }
    return out;
  }

  /** Andrew's monotone chain, as widgets.viewdata.convex_hull: collinear points and duplicates dropped. */
  function convexHull(xs, ys) {
    const byXY = (p, q) => (p[0] !== q[0] ? (p[0] < q[0] ? -1 : 1) : p[1] < q[1] ? -1 : p[1] > q[1] ? 1 : 0);
    const pts = xs
      .map((x, k) => [x, ys[k]])
      .sort(byXY)
      .filter((p, k, all) => k === 0 || byXY(all[k - 1], p) !== 0);
    if (pts.length <= 2) return [pts.map((p) => p[0]), pts.map((p) => p[1])];
    const cross = (o, a, b) => (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
    const chain = (points) => {
      const out = [];
      for (const p of points) {
        while (out.length >= 2 && cross(out[out.length - 2], out[out.length - 1], p) <= 0) out.pop();
        out.push(p);
      }
      return out.slice(0, -1);
    };
    const hull = chain(pts).concat(chain(pts.slice().reverse()));
    return [hull.map((p) => p[0]), hull.map((p) => p[1])];
  }

  /** The two value coordinates to plot; with d = 1 there is only one (b is null). */
  function blendDims(d, dims = [0, 1]) {
    const index = (v) => {
      const n = Math.trunc(Number(v)); // Python's int(): towards zero
      if (!Number.isFinite(n)) throw new AttentionError(`dims has ${String(v)}; expected whole numbers`);
      return Math.min(Math.max(n, 0), d - 1) + 0; // + 0: no −0
    };
    const a = index(dims[0]);
    if (d === 1) return [a, null];
    const b = index(dims[1]);
    return [a, b !== a ? b : (a + 1) % d];
  }

  function blend(head, i, labels, dims) {
    const [a, b] = blendDims(head.d, dims);
    const vx = head.V.map((row) => row[a]);
    const vy = head.V.map((row) => (b === null ? 0 : row[b]));
    const out = head.output[i];
    const ox = out[a];
    const oy = b === null ? 0 : out[b];
    const w = head.weights[i];
    const strength = w.map((v) => Math.min(Math.max(Math.abs(v), 0), 1));
    const [hx, hy] = convexHull(vx, vy);
    const texts = w.map((v) => fmt(v));
    return {
      values: { x: vx, y: vy, label: labels.slice(), named: namedValues(labels, texts, i), weight: w.slice(), text: texts },
      hull: { x: hx, y: hy },
      output: { x: [ox], y: [oy], label: [`output of ${labels[i]}`], text: [fmtVector(out)] },
      links: {
        x0: vx.map(() => ox),
        y0: vx.map(() => oy),
        x1: vx.slice(),
        y1: vy.slice(),
        alpha: strength.map((s) => 0.08 + 0.92 * s),
        width: strength.map((s) => 1 + 7 * s),
      },
      axes: { x: `value[${a}]`, y: b === null ? '(d = 1)' : `value[${b}]` },
    };
  }

  /** widgets.viewdata.blend_bounds: the box around what the plot draws, its edges on a grid of a round step. */
  function blendBounds(data, margin = 0.15) {
    const xs = data.values.x.concat(data.output.x);
    const ys = data.values.y.concat(data.output.y);
    const [x0, x1, y0, y1] = [minOf(xs), maxOf(xs), minOf(ys), maxOf(ys)];
    const span = Math.max(x1 - x0, y1 - y0, 1, 1e-6 * Math.max(Math.abs(x0), Math.abs(x1), Math.abs(y0), Math.abs(y1)));
    const pad = margin * span;
    const unit = roundStep(span / 8);
    return [Math.floor((x0 - pad) / unit) * unit, Math.ceil((x1 + pad) / unit) * unit,
      Math.floor((y0 - pad) / unit) * unit, Math.ceil((y1 + pad) / unit) * unit];
  }

  function roundStep(v) {
    let p = 1;
    while (p * 10 <= v) p *= 10;
    while (p > v) p /= 10;
    return [1, 2, 5, 10].map((m) => m * p).find((x) => x >= v);
  }

  // --- text on the figures: widgets/figure_text.py (tests/test_parity.py holds the two equal) ----------
  const CHAR_WIDTHS = [
    318, 402, 460, 838, 636, 950, 890, 275, 390, 390, 500, 838, 318, 361, 318, 337,
    636, 636, 636, 636, 636, 636, 636, 636, 636, 636, 337, 337, 838, 838, 838, 536,
    1000, 722, 735, 765, 802, 730, 694, 799, 872, 395, 401, 747, 664, 1024, 875, 820,
    673, 820, 753, 685, 667, 843, 722, 1028, 712, 660, 695, 390, 337, 390, 838, 500,
    500, 613, 640, 560, 640, 615, 370, 640, 644, 320, 310, 606, 320, 974, 644, 612,
    640, 640, 478, 521, 402, 644, 592, 856, 592, 592, 527, 636, 337, 636, 838,
  ];
  const OTHER_CHAR = 1000;
  const ASTRAL_CHAR = 1100;
  const LINE = 1.2;
  const AXIS_FONT = 11;
  const NUMBER_FONTS = [11, 10, 9];
  const NUMBER_GAP = 3;
  const WIDE_NUMBER = '0.00';
  const SHORT_NUMBER = '.00';
  const TICK_GAP = 3;
  const SLANT = 0.9;
  const BLEND_FONT = 12;
  const CELL_W = 54;
  const CELL_H = 44;
  const MIN_CELL_W = 30;
  const PHONE_COLUMN = 374;
  const BORDERS_BESIDE_LABELS = 112;
  const WIDEST_LABEL_PX = 120;
  const GAP = 1;
  const HEATMAPS = {
    weights: { blocks: ['weights'], max_width: 260, max_height: 176, least_width: 190, fits_phone: true },
    scores: { blocks: ['scores'], max_width: 260, max_height: 176, least_width: 150, fits_phone: true },
    scaled: { blocks: ['scaled'], max_width: 260, max_height: 176, least_width: 130, fits_phone: true },
    qkv: { blocks: ['Q', 'K', 'V'], max_width: 770, max_height: 220, least_width: 240, fits_phone: false },
  };
  const NO_NUMBERS = 'Colours only: the numbers are in “… as a table”.';
  const SOME_NUMBERS = 'Numbers too wide for a cell are left out: see “… as a table”.';
  const AXIS_LABEL_CHARS = 10;
  const BLEND_FRAME = 230;
  const POINT_PX = 12;
  const STAR_PX = 18;
  const LABEL_RINGS = [6, 20, 36, 56];
  const DIAGONAL = 0.7;
  const LABEL_MARGIN = 2;
  const NUMBERS_UP_TO = 12;
  const BLEND_NAMED_TOP = 3;

  function textPx(text, size) {
    let total = 0;
    for (const ch of String(text)) {
      const k = ch.codePointAt(0);
      total += k >= 32 && k < 127 ? CHAR_WIDTHS[k - 32] : k > 0xffff ? ASTRAL_CHAR : OTHER_CHAR;
    }
    return (total * size) / 1000;
  }

  function shortLabel(label, width = AXIS_LABEL_CHARS) {
    const chars = Array.from(String(label));
    return chars.length <= width ? chars.join('') : chars.slice(0, width - 1).join('') + '…';
  }

  function cellText(text, font, width) {
    const room = width - NUMBER_GAP;
    if (textPx(text, font) <= room) return text;
    const short = text.startsWith('0.') || text.startsWith('-0.') ? text.replace('0.', '.') : text;
    let shorter = short;
    if (short.indexOf('.') >= 0 && short.indexOf('e') < 0) {
      shorter = short.replace(/0+$/, '').replace(/\.$/, '');
      if (shorter === '' || shorter === '-') shorter = '0';
    }
    for (const candidate of [short, shorter]) {
      if (candidate !== text && textPx(candidate, font) <= room) return candidate;
    }
    return '';
  }

  /** widgets.figure_text.number_font: the largest of NUMBER_FONTS whose number fits a cell; 0: none. */
  function numberFont(cellW, cellH) {
    const fits = (sample) => NUMBER_FONTS.find((f) => textPx(sample, f) + NUMBER_GAP <= cellW && LINE * f <= cellH);
    return fits(WIDE_NUMBER) || fits(SHORT_NUMBER) || 0;
  }

  function ticks(labels, spacing, along) {
    const k = spacing > 0 ? Math.max(1, Math.ceil(along / spacing)) : labels.length;
    const kept = labels.filter((_, n) => n % k === 0);
    return [kept.map(([p]) => p), kept.map(([, t]) => t)];
  }

  // A move keeps the labels and d: the layouts are made once for them (read them only), as in Python.
  const layoutsMade = new Map();
  function heatmapLayouts(labels, d) {
    const key = JSON.stringify([labels, d]);
    let made = layoutsMade.get(key);
    if (made === undefined) {
      made = makeHeatmapLayouts(labels, d);
      layoutsMade.set(key, made);
      if (layoutsMade.size > 32) layoutsMade.delete(layoutsMade.keys().next().value);
    }
    return made;
  }

  function makeHeatmapLayouts(labels, d) {
    labels = labels.map(String);
    const rows = labels.map((t, k) => [k, shortLabel(t)]);
    const labelPx = maxOf(rows.map(([, t]) => textPx(t, AXIS_FONT)));
    const out = {};
    for (const [name, spec] of Object.entries(HEATMAPS)) {
      let cols;
      if (spec.blocks.length === 1) cols = rows;
      else {
        cols = [];
        spec.blocks.forEach((n, k) => { for (let j = 0; j < d; j++) cols.push([k * (d + GAP) + j, `${n}[${j}]`]); });
      }
      const nCols = spec.blocks.length === 1 ? labels.length : d;
      const span = spec.blocks.length * (nCols + GAP) - GAP;
      let frameW, frameH, room, minWidth;
      if (spec.fits_phone) { // one size for every head
        [frameW, frameH] = [spec.max_width, spec.max_height];
        room = Math.floor(PHONE_COLUMN - BORDERS_BESIDE_LABELS - labelPx);
        minWidth = PHONE_COLUMN;
      } else {
        frameW = Math.max(spec.least_width, Math.min(spec.max_width, CELL_W * Math.max(span, 2)));
        frameH = spec.max_height;
        room = MIN_CELL_W * Math.max(span, 2);
      }
      const narrow = Math.min(frameW, Math.max(spec.least_width, room));
      if (minWidth === undefined) minWidth = Math.ceil(narrow + BORDERS_BESIDE_LABELS + WIDEST_LABEL_PX);
      const cellW = narrow / span;
      const cellH = frameH / rows.length;
      const font = numberFont(cellW, cellH);
      const widest = maxOf(cols.map(([, t]) => textPx(t, AXIS_FONT)));
      let flat = widest + TICK_GAP <= cellW;
      const [xTicks, xLabels] = ticks(cols, flat ? cellW : cellW * Math.sin(SLANT), LINE * AXIS_FONT + TICK_GAP);
      if (flat) flat = xTicks.length < 2 || widest + TICK_GAP <= (xTicks[1] - xTicks[0]) * cellW;
      const [yTicks, yLabels] = ticks(rows, cellH, LINE * AXIS_FONT + TICK_GAP);
      out[name] = {
        frame_width: frameW, frame_height: frameH, min_frame_width: narrow, cell_width: cellW, font,
        x_ticks: xTicks, x_labels: xLabels, x_angle: flat ? 0 : SLANT, y_ticks: yTicks, y_labels: yLabels,
        min_width: minWidth, note: font ? '' : NO_NUMBERS,
      };
    }
    return out;
  }

  const box = (cx, cy, w, h) => [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2];
  const meet = (a, b, m = 0) => a[0] < b[2] + m && b[0] < a[2] + m && a[1] < b[3] + m && b[1] < a[3] + m;

  /** widgets.figure_text.place_blend_labels: each named value's place beside its point, leaders, a note. */
  function placeBlendLabels(data, bounds, query) {
    const { x: xs, y: ys, named, weight: weights } = data.values;
    const [x0, x1, y0, y1] = bounds;
    const sx = BLEND_FRAME / (x1 - x0);
    const sy = BLEND_FRAME / (y1 - y0);
    const px = xs.map((x) => (x - x0) * sx);
    const py = ys.map((y) => (y1 - y) * sy);
    const ox = (data.output.x[0] - x0) * sx;
    const oy = (y1 - data.output.y[0]) * sy;
    const marks = px.map((a, k) => box(a, py[k], POINT_PX, POINT_PX));
    const star = box(ox, oy, STAR_PX, STAR_PX);
    const n = xs.length;
    const dx = xs.map(() => 0), dy = xs.map(() => 0), shown = xs.map(() => '');
    const leaders = { x0: [], y0: [], x1: [], y1: [] };
    const placed = [];
    const order = xs.map((_, k) => k).filter((k) => named[k])
      .sort((a, b) => (a !== query) - (b !== query) || Math.abs(weights[b]) - Math.abs(weights[a]) || a - b);
    let leftOff = 0;
    const h = LINE * BLEND_FONT;
    for (const k of order) {
      const w = textPx(named[k], BLEND_FONT);
      let spot = null;
      for (const ring of LABEL_RINGS) {
        const a = ring * DIAGONAL + w / 2, b = ring * DIAGONAL + h / 2;
        const places = [[ring + w / 2, 0], [-ring - w / 2, 0], [0, -ring - h / 2], [0, ring + h / 2],
          [a, -b], [-a, -b], [a, b], [-a, b]];
        for (const [cx, cy] of places) {
          const r = box(px[k] + cx, py[k] + cy, w, h);
          if (!(0 <= r[0] && r[2] <= BLEND_FRAME && 0 <= r[1] && r[3] <= BLEND_FRAME)) continue;
          if (meet(r, star, LABEL_MARGIN) || marks.some((m, j) => j !== k && meet(r, m, LABEL_MARGIN))) continue;
          if (placed.some((p) => meet(r, p, LABEL_MARGIN))) continue;
          spot = [cx, cy, r, ring];
          break;
        }
        if (spot) break;
      }
      if (!spot) {
        leftOff += 1;
        continue;
      }
      const [cx, cy, r, ring] = spot;
      placed.push(r);
      dx[k] = cx;
      dy[k] = cy;
      shown[k] = named[k];
      if (ring !== LABEL_RINGS[0]) {
        const ex = Math.min(Math.max(px[k], r[0]), r[2]);
        const ey = Math.min(Math.max(py[k], r[1]), r[3]);
        leaders.x0.push(xs[k]);
        leaders.y0.push(ys[k]);
        leaders.x1.push(x0 + ex / sx);
        leaders.y1.push(y1 - ey / sy);
      }
    }
    let note = '';
    if (leftOff) note = `${leftOff} name${leftOff !== 1 ? 's' : ''} left off (no room): hover the points.`;
    else if (named.filter((t) => t).length < n) note = `Named: the query and the ${BLEND_NAMED_TOP} it weighs most.`;
    return { text: shown, dx, dy, leaders, note };
  }

  /** widgets.viewdata.named_values: every value's name up to NUMBERS_UP_TO tokens; past that the query's and
   * those of the BLEND_NAMED_TOP largest weights as shown (a tie to the earlier token; none shown as 0). */
  function namedValues(labels, texts, i) {
    if (labels.length <= NUMBERS_UP_TO) return labels.slice();
    const shown = texts.map((t) => Math.abs(Number(t)));
    const ranked = shown.map((_, k) => k).filter((k) => shown[k] !== 0).sort((a, b) => shown[b] - shown[a] || a - b);
    const named = new Set(ranked.slice(0, BLEND_NAMED_TOP).concat([i]));
    return labels.map((label, k) => (named.has(k) ? label : ''));
  }


  const vectorsKept = (line) => escapeHtml(line).replace(VECTOR, '<span class="vec">$&</span>');

  function stepsHtml(t) {
    const rows = t.steps.map(
      (s) =>
        `<tr><th scope="row">${s.number}</th><td class="step-name">${escapeHtml(s.name)}</td>` +
        `<td class="step-lines">${s.lines.map(vectorsKept).join('<br>')}</td></tr>`
    );
    return `<table class="steps">${rows.join('')}</table>`;
  }

  function checksHtml(t, labels) {
    const c = t.checks;
    const sumsToOne = Math.abs(c.row_sum - 1) < 1e-9;
    let total = `row sums to ${fmt(c.row_sum, 6)}`;
    if (sumsToOne && c.shown_hundredths !== 100) { // the chapter's printed weights for 'it' add to 1.01
      const h = c.shown_hundredths;
      total += ` (the weights shown add to ${Math.trunc(h / 100)}.${String(h % 100).padStart(2, '0')}: ` +
        'each is rounded to two places)';
    }
    const items = [
      [sumsToOne, total],
      [
        c.masked_max === 0,
        c.masked_keys
          ? `largest weight on the ${c.masked_keys} masked key${c.masked_keys !== 1 ? 's' : ''}: ` +
            fmt(c.masked_max, 6)
          : 'no key is masked for this query',
      ],
      [true, `largest weight ${fmt(c.max_weight)} on '${labels[c.max_key]}'`],
      [true, 'entropy ' + (c.entropy !== null ? `${fmt(c.entropy, 3)} nats` : 'undefined here')],
    ];
    const lis = items.map(
      ([ok, text]) => `<li class="${ok ? 'ok' : 'warn'}">${ok ? '✓' : '⚠'} ${escapeHtml(text)}</li>`
    );
    return `<ul class="checks">${lis.join('')}</ul>`;
  }

  // --- rows that cannot see the future (widgets/viewdata.py changed_rows, row_marks, moved_html) -----

  const MARK_INSET = 0.16;
  const MOVE_HINT = // as widgets/viewdata.py, under the checks until a slider moves
    '<p class="moved">' + escapeHtml(
      "Move a token's slider: the rows of the weights it leaves unchanged get a dashed frame, those it changes " +
      'a purple one.'
    ) + '</p>';
  const sameRow = (a, b) => a.length === b.length && a.every((x, k) => x === b[k]);

  /** For each query, whether its weights or its output differ from `before`'s in any bit. */
  function changedRows(head, before) {
    return head.weights.map((w, i) => !(sameRow(w, before.weights[i]) && sameRow(head.output[i], before.output[i])));
  }

  function rowRuns(rows) {
    const out = [];
    for (const r of rows) {
      if (out.length && out[out.length - 1][1] === r - 1) out[out.length - 1][1] = r;
      else out.push([r, r]);
    }
    return out;
  }

  /** The weights heatmap's frames around the runs of rows a move left unchanged and those it changed. */
  function rowMarks(changed) {
    const T = changed ? changed.length : 0;
    const frames = (rows) => {
      const blocks = rowRuns(rows);
      return {
        x: blocks.map(() => (T - 1) / 2),
        y: blocks.map(([a, b]) => (a + b) / 2),
        width: blocks.map(() => T - MARK_INSET),
        height: blocks.map(([a, b]) => b - a + 1 - MARK_INSET),
      };
    };
    const which = (want) => (changed || []).map((c, i) => (c === want ? i : -1)).filter((i) => i >= 0);
    return { unchanged: frames(which(false)), changed: frames(which(true)) };
  }

  const rowNames = (labels, rows) =>
    rowRuns(rows).map(([a, b]) => (a === b ? `'${labels[a]}'` : `'${labels[a]}' to '${labels[b]}'`)).join(', ');

  /** What the move of x[token][component] changed, in words: the rows left alone, those changed, and why. */
  function movedHtml(head, labels, token, component, changed) {
    const me = String(labels[token]);
    const same = changed.map((c, i) => (c ? -1 : i)).filter((i) => i >= 0);
    const diff = changed.map((c, i) => (c ? i : -1)).filter((i) => i >= 0);
    const parts = [];
    if (same.length) parts.push(`the rows of ${rowNames(labels, same)} did not change, to the last bit (dashed)`);
    if (diff.length) parts.push(`${rowNames(labels, diff)} changed (purple)`);
    let text = `Moving ${me}[${component}]: ` + parts.join('; ') + '.';
    if (head.causal && token > 0 && changed.slice(0, token).every((c) => !c)) {
      text += ` With the mask on, no token before '${me}' can see it.`;
    } else if (!head.causal && changed.slice(0, token).some((c) => c)) {
      text += ` With the mask off, tokens before '${me}' read it too.`;
    }
    return `<p class="moved">${escapeHtml(text)}</p>`;
  }

  /** Everything the figures and text panels show for query i, as widgets.viewdata.view_data. */
  function viewData(head, i, labels, dims = [0, 1]) {
    const t = trace(head, i, labels);
    labels = Array.from(labels, String);
    const data = heatmaps(head, labels);
    data.outline = { x: [(head.T - 1) / 2], y: [i], width: [head.T], height: [1] };
    data.blend = blend(head, i, labels, dims);
    data.bounds = blendBounds(data.blend);
    const placed = placeBlendLabels(data.blend, data.bounds, i);
    Object.assign(data.blend.values, { named: placed.text, dx: placed.dx, dy: placed.dy });
    data.blend.leaders = placed.leaders;
    data.layout.blend = { note: placed.note };
    data.steps = stepsHtml(t);
    data.checks = checksHtml(t, labels) + MOVE_HINT;
    data.moved = rowMarks(null);
    return data;
  }

  /** view_data after a token slider's move: `moved` = [token, component, value before], `before` the head
   * before it. The marks and their sentence (under the checks) join what `viewData` gave. */
  function withMoves(data, head, labels, moved, before) {
    const changed = changedRows(head, before);
    const said = movedHtml(head, Array.from(labels, String), moved[0], moved[1], changed);
    const checks = data.checks.slice(0, data.checks.length - MOVE_HINT.length) + said;
    return Object.assign({}, data, { moved: rowMarks(changed), checks });
  }

  return {
    AttentionError, attend, trace, viewData, withMoves, fmt, fmtVector, escapeHtml, convexHull, blendDims, exp,
    sum, checkOption, asFiniteNumber, pyFloat, pyRepr, PLAIN_NUMBER, LARGEST_ENTRY, PyFormat, MOVE_HINT,
    textPx, shortLabel, HEATMAPS, BLEND_FRAME, BLEND_FONT,
    // what static/tiles.js lays its strip of cells out with (widgets/figure_text.py's rules)
    cellText, numberFont, ticks, LINE, AXIS_FONT, TICK_GAP, SLANT,
  };
});
