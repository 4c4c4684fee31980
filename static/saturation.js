/*
 * The "Why ÷√d" explorer in the browser: a port of core/rng.py,
 * core/saturation.py (with the softmax's gradient and the worked row),
 * widgets/saturation_state.py (the checks and their messages) and
 * widgets/saturation_viewdata.py (with core/notes.py saturation_note, in its
 * footnote, whose many-row figures Python measures and passes in the
 * configuration), as pure functions.
 * tests/test_explorer_parity.py holds the two sides equal (numbers to 1e-9,
 * text exactly), so change both together.  The random heads come from the
 * same generator as in Python (mulberry32 + Box-Muller, core/rng.py), so a
 * seed gives the same queries and keys on both sides.
 *
 * The limits are not repeated here: the page passes the configuration Python
 * made (widgets/saturation_state.py js_config) to each function.
 *
 * Plain ES2020.  In a page it defines the global `SaturationExplorer` (and
 * needs static/pyformat.js and static/checks.js loaded first); in Node,
 * require() returns the same object.
 */
(function (root, factory) {
  if (typeof module === 'object' && module.exports) {
    module.exports = factory(require('./pyformat.js'), require('./checks.js'), require('./rng.js'));
  } else {
    root.SaturationExplorer = factory(root.PyFormat, root.InputChecks, root.SeededRandom);
  }
})(typeof self !== 'undefined' ? self : this, function (F, C, R) {
  'use strict';

  const { AttentionError, asCount, refuse } = C;
  const { mulberry32, TWO_32 } = R; // core/rng.py's generator (static/rng.js)

  const RAW = '#B84A00';
  const SCALED = '#0072B2';
  const INPUTS = ['d', 'seed', 'T', 'trials', 'row'];
  const CURVE_COLUMNS = [
    'd', 'sqrt_d', 'score_std', 'scaled_score_std', 'max_weight_raw', 'max_weight_scaled', 'entropy_raw',
    'entropy_scaled', 'gradient_raw', 'gradient_scaled', 'gradient_raw_low', 'gradient_raw_high',
    'gradient_scaled_low', 'gradient_scaled_high', 'stuck_raw', 'stuck_scaled',
  ];
  const TOP_WEIGHTS = 3; // as widgets/saturation_viewdata.py

  // --- core/rng.py's normals ------------------------------------------------------

  /** Normals start … start + out.length − 1 of the seed's sequence, written into `out`. */
  function normalsInto(seed, start, out) {
    const stop = start + out.length;
    const TWO_PI = 2 * Math.PI;
    for (let p = Math.floor(start / 2); 2 * p < stop; p++) {
      // uniform(k) = (mulberry32(seed, k) + 0.5) / 2³², for k = 2p and 2p + 1 (written out: this loop is hot)
      const u1 = (mulberry32(seed, 2 * p) + 0.5) / TWO_32;
      const u2 = (mulberry32(seed, 2 * p + 1) + 0.5) / TWO_32;
      const r = Math.sqrt(-2 * Math.log(u1));
      const theta = TWO_PI * u2;
      if (2 * p >= start) out[2 * p - start] = r * Math.cos(theta);
      if (2 * p + 1 < stop) out[2 * p + 1 - start] = r * Math.sin(theta);
    }
    return out;
  }

  // --- core/saturation.py --------------------------------------------------------

  // Softmax of `scores` into `weights`; returns [largest weight, entropy in nats].
  function softmaxStats(scores, weights) {
    let top = -Infinity;
    for (let k = 0; k < scores.length; k++) if (scores[k] > top) top = scores[k];
    let total = 0;
    for (let k = 0; k < scores.length; k++) total += (weights[k] = Math.exp(scores[k] - top));
    let largest = 0;
    let plogp = 0;
    for (let k = 0; k < scores.length; k++) {
      const w = (weights[k] = weights[k] / total);
      if (w > largest) largest = w;
      if (w > 0) plogp += w * Math.log(w);
    }
    return [largest, -plogp];
  }

  /** others: for each entry, the sum of the others, added from both ends (never total − entry). */
  function others(w) {
    const n = w.length;
    const out = new Float64Array(n);
    let before = 0;
    for (let k = 0; k < n; k++) {
      out[k] = before;
      before += w[k];
    }
    let after = 0;
    for (let k = n - 1; k >= 0; k--) {
      out[k] += after;
      after += w[k];
    }
    return out;
  }

  /** jacobian_size: the Frobenius norm of one row's softmax Jacobian diag(w) − w wᵀ. */
  function jacobianSize(w) {
    const rest = others(w);
    const squares = w.map((x) => x * x);
    const restSq = others(squares);
    let total = 0;
    for (let k = 0; k < w.length; k++) total += squares[k] * (rest[k] * rest[k] + restSq[k]);
    return Math.sqrt(total);
  }

  /** quantile: linear interpolation between the sorted values, numpy's default rule. */
  function quantile(values, q) {
    const a = Float64Array.from(values).sort();
    const h = (a.length - 1) * q;
    const lo = Math.floor(h);
    const hi = Math.min(lo + 1, a.length - 1);
    return a[lo] + (h - lo) * (a[hi] - a[lo]);
  }

  /** mean_and_spread: the mean and the population standard deviation. */
  function meanAndSpread(values) {
    let total = 0;
    for (const v of values) total += v;
    const mean = total / values.length;
    let sq = 0;
    for (const v of values) sq += (v - mean) * (v - mean);
    return [mean, Math.sqrt(sq / values.length)];
  }

  /** row_gradient: a row's weights and its Jacobian's largest and smallest entries (ties: the earlier key). */
  function rowGradient(w) {
    const rest = others(w);
    let i = 0;
    for (let k = 1; k < w.length; k++) if (w[k] * rest[k] > w[i] * rest[i]) i = k;
    const size = jacobianSize(w);
    if (w.length < 2) return { weights: w, largest: w[0] * rest[0], largest_at: 0, smallest: 0, smallest_at: [0, 0], size };
    let a = 0;
    for (let k = 1; k < w.length; k++) if (w[k] > w[a]) a = k;
    let b = a === 0 ? 1 : 0;
    for (let k = 0; k < w.length; k++) if (k !== a && w[k] > w[b]) b = k;
    return { weights: w, largest: w[i] * rest[i], largest_at: i, smallest: -w[a] * w[b], smallest_at: [a, b], size };
  }

  function softmaxOf(scores) {
    const w = new Float64Array(scores.length);
    softmaxStats(scores, w);
    return w;
  }

  /** worked_row: trial `row` (from 0) of the sweep at width d, its softmax without and with ÷√d. */
  function workedRow(d, seed, T, row) {
    const block = normalsInto(seed, row * (T + 1) * d, new Float64Array((T + 1) * d));
    const S = new Float64Array(T);
    for (let t = 0; t < T; t++) {
      let s = 0;
      for (let i = 0; i < d; i++) s += block[(t + 1) * d + i] * block[i];
      S[t] = s;
    }
    const sqrtD = Math.sqrt(d);
    return {
      d, T, seed, row, scores: S,
      raw: rowGradient(softmaxOf(S)),
      scaled: rowGradient(softmaxOf(S.map((s) => s / sqrtD))),
    };
  }

  /** saturation_point: spread of q·k and the softmax's sharpness for a random head of width d. */
  function saturationPoint(d, seed, T, trials, stuck, quantiles) {
    const sqrtD = Math.sqrt(d);
    const block = new Float64Array((T + 1) * d);
    const S = new Float64Array(T);
    const scaled = new Float64Array(T);
    const W = new Float64Array(T);
    let total = 0;
    let totalSq = 0;
    const maxRaw = new Float64Array(trials);
    const maxScaled = new Float64Array(trials);
    const gradRaw = new Float64Array(trials);
    const gradScaled = new Float64Array(trials);
    let entRaw = 0;
    let entScaled = 0;
    for (let j = 0; j < trials; j++) {
      normalsInto(seed, j * block.length, block); // trial j: its query, then its T keys
      for (let t = 0; t < T; t++) {
        let s = 0;
        const key = (t + 1) * d;
        for (let i = 0; i < d; i++) s += block[i] * block[key + i];
        S[t] = s;
        scaled[t] = s / sqrtD;
        total += s;
        totalSq += s * s;
      }
      const [mr, er] = softmaxStats(S, W);
      gradRaw[j] = jacobianSize(W);
      const [ms, es] = softmaxStats(scaled, W);
      gradScaled[j] = jacobianSize(W);
      maxRaw[j] = mr;
      entRaw += er;
      maxScaled[j] = ms;
      entScaled += es;
    }
    const n = trials * T;
    const mean = total / n;
    const scoreStd = Math.sqrt(Math.max(totalSq / n - mean * mean, 0));
    const [maxRawMean, maxRawSpread] = meanAndSpread(maxRaw);
    const [maxScaledMean, maxScaledSpread] = meanAndSpread(maxScaled);
    const [gRaw, gRawSpread] = meanAndSpread(gradRaw);
    const [gScaled, gScaledSpread] = meanAndSpread(gradScaled);
    const share = (a) => a.filter((g) => g < stuck).length / a.length;
    let least = 0;
    for (let j = 1; j < trials; j++) if (gradRaw[j] < gradRaw[least]) least = j;
    return {
      d, T, trials, seed,
      sqrt_d: sqrtD,
      score_std: scoreStd,
      scaled_score_std: scoreStd / sqrtD,
      max_weight_raw: maxRawMean,
      max_weight_scaled: maxScaledMean,
      entropy_raw: entRaw / trials,
      entropy_scaled: entScaled / trials,
      uniform_entropy: Math.log(T),
      max_weight_raw_spread: maxRawSpread,
      max_weight_scaled_spread: maxScaledSpread,
      gradient_raw: gRaw,
      gradient_scaled: gScaled,
      gradient_raw_spread: gRawSpread,
      gradient_scaled_spread: gScaledSpread,
      gradient_raw_low: quantile(gradRaw, quantiles[0]),
      gradient_raw_high: quantile(gradRaw, quantiles[1]),
      gradient_scaled_low: quantile(gradScaled, quantiles[0]),
      gradient_scaled_high: quantile(gradScaled, quantiles[1]),
      stuck_raw: share(gradRaw),
      stuck_scaled: share(gradScaled),
      uniform_gradient: Math.sqrt(T - 1) / T,
      least_gradient_row: least,
    };
  }

  /** saturation_curve over `widths`, as columns (SaturationCurve.columns). */
  function saturationCurve(config, seed, T, trials) {
    const points = config.widths.map((d) => saturationPoint(d, seed, T, trials, config.stuck, config.quantiles));
    const columns = {};
    for (const name of CURVE_COLUMNS) columns[name] = points.map((p) => p[name]);
    return { columns, T, trials, seed, points };
  }

  // --- widgets/saturation_state.py -----------------------------------------------

  function asSeed(value, largest) {
    const expected = `expected a whole number from 0 to ${F.commas(largest)}`;
    if (typeof value !== 'number' || !Number.isInteger(value) || !(value >= 0 && value <= largest)) {
      throw new AttentionError(`seed is ${F.repr(value)}; ${expected}`);
    }
    return value;
  }

  /** check_inputs: the four inputs, or AttentionError naming the one that cannot be used. */
  function checkInputs(config, v) {
    const c = config;
    const sumWidths = c.widths.reduce((a, b) => a + b, 0);
    const d = asCount('d', v.d, c.max_d);
    if (d < c.min_d) throw new AttentionError(`d is ${d}; pick a head width from ${c.min_d} to ${c.max_d}`);
    const seed = asSeed(v.seed, c.largest_seed);
    const T = asCount('T', v.T, c.max_T);
    if (T < c.min_T) {
      throw new AttentionError(
        `T is ${T}; a softmax over one key is always 1, so use ${c.min_T} to ${c.max_T} keys`
      );
    }
    const trials = asCount('trials', v.trials, c.max_trials);
    if (trials * (T + 1) * sumWidths > c.sweep_budget) {
      throw new AttentionError(
        `trials × (T + 1) = ${F.commas(trials * (T + 1))} is too much to redraw quickly ` +
          `(at most ${F.commas(Math.floor(c.sweep_budget / sumWidths))}); use fewer trials or fewer keys`
      );
    }
    const row = Math.min(asCount('row', v.row, c.max_trials), trials);
    return { d, seed, T, trials, row };
  }

  const sameSweep = (a, b) => a.seed === b.seed && a.T === b.T && a.trials === b.trials;

  /**
   * The settings a page opens on (config.start), measured.  The static page gets the start's
   * sweep from Python (config.start_curve, the same numbers) so that opening it costs nothing.
   */
  function initial(config) {
    const inputs = Object.assign({}, config.start);
    const curve = config.start_curve || saturationCurve(config, inputs.seed, inputs.T, inputs.trials);
    return { inputs, message: '', curve, point: measure(config, inputs, curve), worked: work(inputs) };
  }

  function measure(config, inputs, curve) {
    const k = config.widths.indexOf(inputs.d);
    return k >= 0 ? curve.points[k]
      : saturationPoint(inputs.d, inputs.seed, inputs.T, inputs.trials, config.stuck, config.quantiles);
  }

  const work = (v) => workedRow(v.d, v.seed, v.T, v.row - 1);

  /**
   * SaturationSettings.apply: the next state, and whether the change was taken.  The sweep is
   * redrawn only when the seed, T or the trials change (a new d only moves the marker).
   */
  function apply(config, state, changes) {
    let inputs;
    try {
      inputs = checkInputs(config, Object.assign({}, state.inputs, changes));
    } catch (err) {
      if (!(err instanceof AttentionError)) throw err;
      return refuse(state, err.message);
    }
    const curve = sameSweep(inputs, state.inputs)
      ? state.curve : saturationCurve(config, inputs.seed, inputs.T, inputs.trials);
    const point = measure(config, inputs, curve);
    return { state: { inputs, message: '', curve, point, worked: work(inputs) }, taken: true };
  }

  /** Refusing.refuse_empty's message (widgets/refusal.py): an emptied number box. */
  function needsNumber(state, name) {
    return C.needsNumber(name, F.commas(state.inputs[name]));
  }

  // --- widgets/saturation_viewdata.py --------------------------------------------

  /** core/notes.py percent: a share of rows, 0.297 → '30%'. */
  const percent = (share) => `${F.fixed(100 * share, 0)}%`;

  /**
   * core/notes.py saturation_note: the chapter's "one-hot" at d = 128 against the mean over many rows
   * (config.many_rows, as Python measured it) with their spread ('' at other widths).
   */
  function saturationNote(config, p) {
    if (p.d !== config.saturation_d) return '';
    const m = config.many_rows;
    const [mean, spread] = m.max_weight_raw;
    return (
      `The chapter calls the softmax of unscaled scores at d = ${config.saturation_d} one-hot. Over ` +
      `${F.commas(m.rows)} random rows of ${m.T} keys its largest weight averages ${F.fixed(mean, 2)}, and rows ` +
      `spread ± ${F.fixed(spread, 2)} about that: ` +
      (mean >= 0.75 ? 'nearly all of it on one key, but not one-hot' : 'not one-hot yet') +
      `; ${percent(m.stuck_raw)} of those rows pass back a gradient smaller than ${F.general(config.stuck)} ` +
      `(${percent(m.stuck_scaled)} with ÷√d).`
    );
  }

  function readoutHtml(config, p) {
    const e = F.escapeHtml;
    const f = F.fixed;
    const verdict =
      p.max_weight_raw >= 0.75 ? 'nearly all of it on one key'
        : p.max_weight_raw >= 0.3 ? 'a large share on one key' : 'still spread out';
    const stuck = F.general(config.stuck);
    const lines = [
      `<b>d = ${p.d}</b>: raw scores q·k spread about <b>${f(p.score_std, 1)}</b> ` +
        `(√d = ${f(p.sqrt_d, 1)}); after ÷√d about <b>${f(p.scaled_score_std, 2)}</b>.`,
      `<span style='color:${RAW}'>Without ÷√d</span> the biggest weight averages ` +
        `<b>${f(p.max_weight_raw, 2)}</b> ± ${f(p.max_weight_raw_spread, 2)} (${e(verdict)}); entropy ` +
        `${f(p.entropy_raw, 2)} nats.`,
      `<span style='color:${SCALED}'>With ÷√d</span> the biggest weight is ` +
        `<b>${f(p.max_weight_scaled, 2)}</b> ± ${f(p.max_weight_scaled_spread, 2)} and the entropy ` +
        `${f(p.entropy_scaled, 2)} of a possible ${f(p.uniform_entropy, 2)} (all ${p.T} keys equal, each ` +
        `${f(1 / p.T, 3)}).`,
      `Gradient: a row passes back ‖∂w/∂z‖ = <b>${f(p.gradient_raw, 2)}</b> ± ${f(p.gradient_raw_spread, 2)} ` +
        `<span style='color:${RAW}'>without ÷√d</span>, and <b>${percent(p.stuck_raw)}</b> of rows less than ` +
        `${stuck}; <b>${f(p.gradient_scaled, 2)}</b> ± ${f(p.gradient_scaled_spread, 2)} ` +
        `<span style='color:${SCALED}'>with it</span> (${percent(p.stuck_scaled)} below ${stuck}).`,
      'Watch: as d grows the vermillion lines run to one-hot (weight → 1, entropy → 0) and more and more ' +
        'rows pass no gradient back, while the blue ones stay put. That flatness is what the division buys.',
    ];
    let foot =
      `Averages over ${p.trials} random queries, each against ${p.T} random keys; seed ${p.seed}; ± is how ` +
      'much the rows differ (their standard deviation). ‖∂w/∂z‖ is the size of the softmax\'s Jacobian ' +
      'per unit of the score z it is given: with ÷√d that is q·k/√d, so per unit of q·k it is ' +
      `${f(p.sqrt_d, 1)} times smaller again; what the division removes is the rows that pass back nothing.`;
    const chapter = saturationNote(config, p);
    if (chapter) foot += ' ' + chapter;
    const body = lines.map((line) => `<p>${line}</p>`).join('');
    return `<div class='saturation-readout'>${body}<p class='foot'>${e(foot)}</p></div>`;
  }

  /** widgets/saturation_viewdata.py small: two decimals, or ×10ⁿ once they would show 0. */
  const small = (x) => (Math.abs(x) >= 0.005 ? F.fixed(x, 2).replace('-', '−') : C.sci(x));

  function weightsText(g) {
    const order = Array.from(g.weights.keys()).sort((a, b) => g.weights[b] - g.weights[a] || a - b);
    return order.slice(0, TOP_WEIGHTS).map((k) => `${small(g.weights[k])} on key ${k + 1}`).join(', ');
  }

  /** widgets/saturation_viewdata.py worked_row_html. */
  function workedRowHtml(r, p) {
    const e = F.escapeHtml;
    const at = (g) => `keys ${g.smallest_at[0] + 1}, ${g.smallest_at[1] + 1}`;
    const rows = [
      ['largest weights', weightsText(r.raw), weightsText(r.scaled)],
      [
        'Jacobian\'s largest entry, w_i (1 − w_i)',
        `${small(r.raw.largest)} (i = key ${r.raw.largest_at + 1})`,
        `${small(r.scaled.largest)} (i = key ${r.scaled.largest_at + 1})`,
      ],
      ['its smallest, −w_i w_j', `${small(r.raw.smallest)} (${at(r.raw)})`, `${small(r.scaled.smallest)} (${at(r.scaled)})`],
      ['its size ‖∂w/∂z‖', small(r.raw.size), small(r.scaled.size)],
    ];
    const body = rows.map(([a, b, c]) => `<tr><td>${e(a)}</td><td>${e(b)}</td><td>${e(c)}</td></tr>`).join('');
    const head =
      `<tr><th>row ${r.row + 1} of ${p.trials}, d = ${r.d}</th>` +
      `<th style='color:${RAW}'>without ÷√d</th><th style='color:${SCALED}'>with ÷√d</th></tr>`;
    const quiet = p.least_gradient_row + 1;
    const foot =
      'Every entry of ∂w/∂z is w_i (1 − w_i) or −w_i w_j: in a one-hot row (one weight 1, the rest 0) ' +
      'each is 0, so moving any score moves no weight and no gradient reaches q or k. ' +
      (quiet !== r.row + 1
        ? `Of these ${p.trials} rows, row ${quiet} passes back least without ÷√d: type it in the row box.`
        : `Of these ${p.trials} rows, this one passes back least without ÷√d.`);
    return `<div class='saturation-row'><table>${head}${body}</table><p class='foot'>${e(foot)}</p></div>`;
  }

  /** widgets/saturation_viewdata.py view_data: everything the page shows for one state. */
  function viewData(config, state) {
    const { curve, point: p } = state;
    const T = curve.T;
    const columns = Object.assign({}, curve.columns, { uniform_weight: curve.columns.d.map(() => 1 / T) });
    const xs = config.reference_steps.map((k) => 2 ** k);
    return {
      curve: columns,
      reference: {
        d: xs,
        sqrt_d: xs.map(Math.sqrt),
        uniform_weight: xs.map(() => 1 / T),
        uniform_entropy: xs.map(() => Math.log(T)),
        uniform_gradient: xs.map(() => Math.sqrt(T - 1) / T),
      },
      marker: {
        d: [p.d, p.d],
        spread: [p.score_std, p.scaled_score_std],
        max_weight: [p.max_weight_raw, p.max_weight_scaled],
        entropy: [p.entropy_raw, p.entropy_scaled],
        gradient: [p.gradient_raw, p.gradient_scaled],
        which: ['raw q·k', 'q·k ÷ √d'],
      },
      entropy_range: [-0.05 * Math.log(T), 1.08 * Math.log(T)],
      chosen: p.d,
      readout: readoutHtml(config, p),
      row: workedRowHtml(state.worked, p),
    };
  }

  return {
    INPUTS, AttentionError, mulberry32, normalsInto, saturationPoint, saturationCurve, checkInputs, initial,
    apply, needsNumber, viewData, workedRow, jacobianSize, quantile,
  };
});
