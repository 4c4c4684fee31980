/*
 * The "Why ÷√d" explorer in the browser: a port of core/rng.py,
 * core/saturation.py, widgets/saturation_state.py (the checks and their
 * messages) and widgets/saturation_viewdata.py (with core/notes.py
 * saturation_note, in its footnote), as pure functions.
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
    module.exports = factory(require('./pyformat.js'), require('./checks.js'));
  } else {
    root.SaturationExplorer = factory(root.PyFormat, root.InputChecks);
  }
})(typeof self !== 'undefined' ? self : this, function (F, C) {
  'use strict';

  const { AttentionError, asCount, refuse } = C;

  const GOLDEN = 0x6d2b79f5; // mulberry32's step
  const TWO_32 = 4294967296;
  const RAW = '#B84A00';
  const SCALED = '#0072B2';
  const INPUTS = ['d', 'seed', 'T', 'trials'];
  const CURVE_COLUMNS = [
    'd', 'sqrt_d', 'score_std', 'scaled_score_std', 'max_weight_raw', 'max_weight_scaled', 'entropy_raw',
    'entropy_scaled',
  ];

  // --- core/rng.py ---------------------------------------------------------------

  /** The k-th 32-bit output of mulberry32 started from `seed` (its state after k + 1 steps, mixed). */
  function mulberry32(seed, k) {
    const a = (seed + Math.imul(k + 1, GOLDEN)) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t = (t + Math.imul(t ^ (t >>> 7), t | 61)) ^ t;
    return (t ^ (t >>> 14)) >>> 0;
  }

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

  /** saturation_point: spread of q·k and the softmax's sharpness for a random head of width d. */
  function saturationPoint(d, seed, T, trials) {
    const sqrtD = Math.sqrt(d);
    const block = new Float64Array((T + 1) * d);
    const S = new Float64Array(T);
    const scaled = new Float64Array(T);
    const W = new Float64Array(T);
    let total = 0;
    let totalSq = 0;
    let maxRaw = 0;
    let maxScaled = 0;
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
      const [ms, es] = softmaxStats(scaled, W);
      maxRaw += mr;
      entRaw += er;
      maxScaled += ms;
      entScaled += es;
    }
    const n = trials * T;
    const mean = total / n;
    const scoreStd = Math.sqrt(Math.max(totalSq / n - mean * mean, 0));
    return {
      d, T, trials, seed,
      sqrt_d: sqrtD,
      score_std: scoreStd,
      scaled_score_std: scoreStd / sqrtD,
      max_weight_raw: maxRaw / trials,
      max_weight_scaled: maxScaled / trials,
      entropy_raw: entRaw / trials,
      entropy_scaled: entScaled / trials,
      uniform_entropy: Math.log(T),
    };
  }

  /** saturation_curve over `widths`, as columns (SaturationCurve.columns). */
  function saturationCurve(widths, seed, T, trials) {
    const points = widths.map((d) => saturationPoint(d, seed, T, trials));
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
    return { d, seed, T, trials };
  }

  const sameSweep = (a, b) => a.seed === b.seed && a.T === b.T && a.trials === b.trials;

  /**
   * The settings a page opens on (config.start), measured.  The static page gets the start's
   * sweep from Python (config.start_curve, the same numbers) so that opening it costs nothing.
   */
  function initial(config) {
    const inputs = Object.assign({}, config.start);
    const curve = config.start_curve || saturationCurve(config.widths, inputs.seed, inputs.T, inputs.trials);
    return { inputs, message: '', curve, point: measure(config, inputs, curve) };
  }

  function measure(config, inputs, curve) {
    const k = config.widths.indexOf(inputs.d);
    return k >= 0 ? curve.points[k] : saturationPoint(inputs.d, inputs.seed, inputs.T, inputs.trials);
  }

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
      ? state.curve : saturationCurve(config.widths, inputs.seed, inputs.T, inputs.trials);
    return { state: { inputs, message: '', curve, point: measure(config, inputs, curve) }, taken: true };
  }

  /** Refusing.refuse_empty's message (widgets/refusal.py): an emptied number box. */
  function needsNumber(state, name) {
    return C.needsNumber(name, F.commas(state.inputs[name]));
  }

  // --- widgets/saturation_viewdata.py --------------------------------------------

  /** core/notes.py saturation_note: the chapter's "one-hot" at d = 128 against what is measured ('' elsewhere). */
  function saturationNote(config, p) {
    if (p.d !== config.saturation_d) return '';
    return (
      `The chapter calls the softmax of unscaled scores at d = 128 one-hot; here, at d = ${p.d} over ` +
      `${p.T} keys, its largest weight averages ${F.fixed(p.max_weight_raw, 2)}: ` +
      (p.max_weight_raw >= 0.75 ? 'nearly all of it on one key.' : 'not one-hot yet.')
    );
  }

  function readoutHtml(config, p) {
    const e = F.escapeHtml;
    const f = F.fixed;
    const verdict =
      p.max_weight_raw >= 0.75 ? 'nearly all of it on one key'
        : p.max_weight_raw >= 0.3 ? 'a large share on one key' : 'still spread out';
    const lines = [
      `<b>d = ${p.d}</b>: raw scores q·k spread about <b>${f(p.score_std, 1)}</b> ` +
        `(√d = ${f(p.sqrt_d, 1)}); after ÷√d about <b>${f(p.scaled_score_std, 2)}</b>.`,
      `<span style='color:${RAW}'>Without ÷√d</span> the biggest weight averages ` +
        `<b>${f(p.max_weight_raw, 2)}</b> (${e(verdict)}); entropy ${f(p.entropy_raw, 2)} nats.`,
      `<span style='color:${SCALED}'>With ÷√d</span> the biggest weight is ` +
        `<b>${f(p.max_weight_scaled, 2)}</b> and the entropy ${f(p.entropy_scaled, 2)} ` +
        `of a possible ${f(p.uniform_entropy, 2)} (all ${p.T} keys equal, each ${f(1 / p.T, 3)}).`,
      'Watch: as d grows the vermillion lines run to one-hot (weight → 1, entropy → 0) ' +
        'while the blue ones stay put. That flatness is what the division buys.',
    ];
    let foot = `Averages over ${p.trials} random queries, each against ${p.T} random keys; seed ${p.seed}.`;
    const chapter = saturationNote(config, p);
    if (chapter) foot += ' ' + chapter;
    const body = lines.map((line) => `<p>${line}</p>`).join('');
    return `<div class='saturation-readout'>${body}<p class='foot'>${e(foot)}</p></div>`;
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
      },
      marker: {
        d: [p.d, p.d],
        spread: [p.score_std, p.scaled_score_std],
        max_weight: [p.max_weight_raw, p.max_weight_scaled],
        entropy: [p.entropy_raw, p.entropy_scaled],
        which: ['raw q·k', 'q·k ÷ √d'],
      },
      entropy_range: [-0.05 * Math.log(T), 1.08 * Math.log(T)],
      chosen: p.d,
      readout: readoutHtml(config, p),
    };
  }

  return {
    INPUTS, AttentionError, mulberry32, normalsInto, saturationPoint, saturationCurve, checkInputs, initial,
    apply, needsNumber, viewData,
  };
});
