/*
 * The long-context cost explorer in the browser: a port of core/cost.py,
 * widgets/cost_state.py (the checks and their messages) and
 * widgets/cost_viewdata.py (with core/notes.py gpu_note, its footnote), as pure functions.  tests/test_explorer_parity.py
 * holds the two sides equal (numbers to 1e-9, text exactly), so change both
 * together.
 *
 * The limits and the presets are not repeated here: the page passes the
 * configuration Python made (widgets/cost_state.py js_config) to make(config).
 * Counts are exact integers in Python, so they are BigInts here; a BigInt
 * turns into the same nearest double as Python's float(int).
 *
 * Plain ES2020.  In a page it defines the global `CostExplorer` (and needs
 * static/pyformat.js and static/checks.js loaded first); in Node, require()
 * returns the same object.
 */
(function (root, factory) {
  if (typeof module === 'object' && module.exports) {
    module.exports = factory(require('./pyformat.js'), require('./checks.js'));
  } else {
    root.CostExplorer = factory(root.PyFormat, root.InputChecks);
  }
})(typeof self !== 'undefined' ? self : this, function (F, C) {
  'use strict';

  const { AttentionError, asCount, refuse } = C;

  const LINE_POINTS = 41;
  const QK = '#D55E00';
  const PROJ = '#0072B2';
  const PROJ_MHA = '#56B4E9';
  const SHAPE = ['T', 'd', 'heads', 'kv_heads', 'layers', 'C', 'element_bytes'];
  const INPUTS = [...SHAPE, 'gpu_gb', 'tile'];
  const BYTE_UNITS = ['B', 'kB', 'MB', 'GB', 'TB', 'PB', 'EB', 'ZB', 'YB'];
  const BYTE_SCALE = [1, 1e3, 1e6, 1e9, 1e12, 1e15, 1e18, 1e21, 1e24]; // 1000**k as Python turns it into a float

  // --- input checks (core/cost.py) ---------------------------------------------

  function asFinite(name, value) {
    if (typeof value !== 'number') throw new AttentionError(`${name} is ${F.repr(value)}; expected a number`);
    if (!Number.isFinite(value)) throw new AttentionError(`${name} is ${F.reprFloat(value)}; expected a finite number`);
    return value;
  }

  function asElementBytes(value, largest) {
    const x = asFinite('element_bytes', value);
    if (!(x > 0 && x <= largest)) {
      throw new AttentionError(
        `element_bytes is ${F.general(x)}; expected a number above 0 and at most ${F.general(largest)}`
      );
    }
    return x;
  }

  // --- the settings' checks (widgets/cost_state.py) ----------------------------

  function checkGpu(config, value) {
    const x = asFinite('GPU memory', value);
    const [low, high] = config.gpu_memory_gb;
    if (!(x >= low && x <= high)) {
      throw new AttentionError(`GPU memory is ${F.general(x)} GB; GPUs on sale today hold ${low} to ${high} GB`);
    }
    return x;
  }

  /** CostInputs' checks, in its order; returns the shape with kv_heads filled in. */
  function checkShape(config, values) {
    const L = config.largest;
    asCount('T', values.T, config.max_T);
    const shape = {};
    for (const name of ['T', 'd', 'heads', 'layers', 'C']) shape[name] = asCount(name, values[name], L[name]);
    const kv = values.kv_heads === null || values.kv_heads === undefined
      ? shape.heads : asCount('kv_heads', values.kv_heads, L.kv_heads);
    if (kv > shape.heads) throw new AttentionError(`kv_heads is ${kv}; it cannot exceed heads (${shape.heads})`);
    if (shape.heads % kv) {
      throw new AttentionError(
        `kv_heads is ${kv}; it must divide heads (${shape.heads}) so each K/V head serves a whole group`
      );
    }
    shape.kv_heads = kv;
    shape.element_bytes = asElementBytes(values.element_bytes, config.largest_element_bytes);
    return shape;
  }

  function presetName(config, shape) {
    for (const [name, p] of Object.entries(config.presets)) {
      if (SHAPE.every((k) => p[k] === shape[k])) return name;
    }
    return config.custom;
  }

  // --- the arithmetic (core/cost.py long_context_cost) -------------------------

  const projectionFlops = (T, C, d, H, G) => 2n * T * C * d * (H + 2n * G);
  const crossover = (C, H, G) => (C * (H + 2 * G)) / H; // C·(H + 2G) < 2⁵³: exact, as Python's int / int
  const fullCrossover = (C, H, G) => (C * (H + G)) / H; // Q·Kᵀ + A·V against all four projections

  function longContextCost(x) {
    const [T, d, H, G, L, C] = [x.T, x.d, x.heads, x.kv_heads, x.layers, x.C].map(BigInt);
    const eb = x.element_bytes;
    const perHead = Number(T * T) * eb;
    const perLayer = perHead * x.heads;
    const qkHead = 2n * T * T * d;
    const proj = projectionFlops(T, C, d, H, G);
    const projMha = projectionFlops(T, C, d, H, H);
    const decHead = 2n * T * d + 2n * T * d;
    const cache = Number(2n * T * G * d) * eb;
    const cacheMha = Number(2n * T * H * d) * eb;
    return {
      inputs: x,
      grouped: x.kv_heads < x.heads,
      score_entries_per_head: Number(T * T),
      score_bytes_per_head: perHead,
      score_bytes_per_layer: perLayer,
      score_bytes_per_model: perLayer * x.layers,
      qk_flops_per_head: Number(qkHead),
      qk_flops_per_layer: Number(qkHead * H),
      qk_flops_per_model: Number(qkHead * H * L),
      projection_flops_per_layer: Number(proj),
      projection_flops_per_model: Number(proj * L),
      projection_flops_per_layer_mha: Number(projMha),
      projection_flops_per_model_mha: Number(projMha * L),
      crossover_T: crossover(x.C, x.heads, x.kv_heads),
      crossover_T_mha: crossover(x.C, x.heads, x.heads),
      blend_flops_per_layer: Number(qkHead * H),
      output_projection_flops_per_layer: Number(2n * T * H * d * C),
      full_crossover_T: fullCrossover(x.C, x.heads, x.kv_heads),
      full_crossover_T_mha: fullCrossover(x.C, x.heads, x.heads),
      decode_flops_per_model: Number(decHead * H * L),
      kv_cache_bytes_per_model: cache * x.layers,
      kv_cache_bytes_per_model_mha: cacheMha * x.layers,
    };
  }

  // --- writing numbers the chapter's way (core/cost.py) ------------------------

  const { sci } = C;

  function roundForBytes(v) {
    if (Number(F.fixed(v, 1)) >= 10) return F.fixed(v, 0);
    const text = F.fixed(v, 1);
    return text.endsWith('.0') ? text.slice(0, -2) : text;
  }

  function humanBytes(b) {
    for (let power = 0; power < BYTE_UNITS.length; power++) {
      const text = roundForBytes(b / BYTE_SCALE[power]);
      if (Number(text) < 1000 || power === BYTE_UNITS.length - 1) return `${text} ${BYTE_UNITS[power]}`;
    }
    throw new Error('unreachable');
  }

  // --- view data (widgets/cost_viewdata.py) ------------------------------------

  const approxBytes = (b) => `≈ ${humanBytes(b)}`;

  function times(x) {
    if (x >= 10) return `${F.fixed(x, 0, true)}×`;
    return x >= 0.01 ? `${F.general(x, 2)}×` : '< 0.01×';
  }

  // core/cost.py tile_score_bytes, tile_bytes; widgets/cost_viewdata.py tile_side
  const tileScoreBytes = (B, eb) => B * B * eb;
  const tileBytes = (B, d, eb) => (4 * B * d + B * B + 2 * B) * eb;

  function readoutRows(cost, gpuGb, tile) {
    const x = cost.inputs;
    const [H, G, L] = [x.heads, x.kv_heads, x.layers];
    const gpu = gpuGb * 1e9;
    const gpuName = `one GPU (${F.general(gpuGb)} GB)`;
    const group = cost.grouped ? `${G} K/V heads` : 'no sharing';
    const qkOver = (x.T * H) / (x.C * (H + 2 * G));
    const rows = [
      ['The score matrix, if it were stored', '', ''],
      ['entries, per head per layer', `T² = ${sci(cost.score_entries_per_head)}`, ''],
      [
        `bytes, per head per layer (${F.general(x.element_bytes)} B each)`,
        `${sci(cost.score_bytes_per_head)} ${approxBytes(cost.score_bytes_per_head)}`,
        `${times(cost.score_bytes_per_head / gpu)} ${gpuName}`,
      ],
      [
        `per layer (× ${H} heads)`,
        approxBytes(cost.score_bytes_per_layer),
        `${times(cost.score_bytes_per_layer / gpu)} ${gpuName}`,
      ],
      [
        `whole model (× ${L} layers)`,
        approxBytes(cost.score_bytes_per_model),
        `${times(cost.score_bytes_per_model / gpu)} ${gpuName}`,
      ],
      ['One forward pass over T tokens (FLOPs)', '', ''],
      ['Q·Kᵀ, one layer (2·T²·d × heads)', sci(cost.qk_flops_per_layer), `${times(qkOver)} the projections`],
      ['Q·Kᵀ, whole model', sci(cost.qk_flops_per_model), ''],
      [`Q/K/V projections, one layer (${group})`, sci(cost.projection_flops_per_layer), ''],
    ];
    if (cost.grouped) {
      rows.push([
        `Q/K/V projections, one layer (no sharing, ${H} K/V heads)`,
        sci(cost.projection_flops_per_layer_mha),
        '',
      ]);
    }
    rows.push(['Q/K/V projections, whole model', sci(cost.projection_flops_per_model), '']);
    const cross = `T ≈ ${F.fixed(cost.crossover_T, 0, true)}`;
    const crossNote = cost.grouped ? `no sharing: T ≈ ${F.fixed(cost.crossover_T_mha, 0, true)} (3·C)` : '3·C';
    const full = `T ≈ ${F.fixed(cost.full_crossover_T, 0, true)}`;
    const fullNote = cost.grouped ? `no sharing: T ≈ ${F.fixed(cost.full_crossover_T_mha, 0, true)} (2·C)` : '2·C';
    const B = Math.min(tile, x.T);
    const oneTile = tileScoreBytes(B, x.element_bytes);
    const held = tileBytes(B, x.d, x.element_bytes);
    rows.push(
      ['Q·Kᵀ overtakes the Q, K, V projections at (exercise 2\'s count)', cross, crossNote],
      ['Q·Kᵀ + A·V overtake the Q, K, V and output projections at', full, fullNote],
      [`In tiles of ${B} queries × ${B} keys, as FlashAttention computes them`, '', ''],
      [
        'one tile of scores, all of the matrix that exists at once',
        `${sci(oneTile)} B ${approxBytes(oneTile)}`,
        `the whole matrix, per head: ${times(cost.score_bytes_per_head / oneTile)} more`,
      ],
      [
        'all a tile step holds, per head (queries, keys, values, outputs, running max and sum)',
        approxBytes(held),
        'the same at any T',
      ],
      [
        'FLOPs of Q·Kᵀ and A·V in tiles, one layer',
        sci(cost.qk_flops_per_layer + cost.blend_flops_per_layer),
        'unchanged: the arithmetic stays, the memory goes',
      ],
      ['Generating token T+1 with a KV cache', '', ''],
      ['attention FLOPs for token T+1, whole model', sci(cost.decode_flops_per_model), 'grows like T, not T²'],
      [
        `KV cache, whole model (${group})`,
        approxBytes(cost.kv_cache_bytes_per_model),
        `${times(cost.kv_cache_bytes_per_model / gpu)} ${gpuName}`,
      ]
    );
    if (cost.grouped) {
      rows.push([
        'KV cache without sharing',
        approxBytes(cost.kv_cache_bytes_per_model_mha),
        `${times(cost.kv_cache_bytes_per_model_mha / gpu)} ${gpuName}`,
      ]);
    }
    return rows;
  }

  /** core/notes.py gpu_note: one layer's score matrices against today's GPU sizes, beside the chapter's. */
  function gpuNote(config, cost) {
    const layer = cost.score_bytes_per_layer;
    const [low, high] = config.chapter_gpu_memory_gb;
    const parts = config.gpu_parts_gb;
    const ratios = parts.map((gb) => `${F.general(layer / (gb * 1e9), 2)}× ${gb} GB`).join(', ');
    const x = cost.inputs;
    const chapterCase = x.T === config.chapter_context && x.heads === 32 && x.element_bytes === 2;
    return (
      `The chapter says a top GPU holds ${low}–${high} GB; parts sold today hold ` +
      `${parts[0]} to ${parts[parts.length - 1]} GB ` +
      `(${parts.join(', ')} GB among them). ` +
      `One layer's score matrices here, ≈ ${humanBytes(layer)}, are ${ratios}.` +
      (chapterCase ? ` The chapter's 'by a factor of ten per layer' is the ${parts[0]} GB case.` : '')
    );
  }

  function readoutHtml(config, cost, gpuGb, tile) {
    const e = F.escapeHtml;
    const body = readoutRows(cost, gpuGb, tile).map(([what, value, note]) =>
      !value && !note
        ? `<tr class='section'><th colspan='3'>${e(what)}</th></tr>`
        : `<tr><td>${e(what)}</td><td class='num'>${e(value)}</td><td>${e(note)}</td></tr>`
    );
    const x = cost.inputs;
    const head =
      `T = ${F.commas(x.T)} tokens · d = ${x.d} · ${x.heads} query heads · ${x.kv_heads} K/V heads · ` +
      `${x.layers} layers · C = ${F.commas(x.C)}`;
    const table = `<table>${body.join('')}</table>`;
    const foot = `<p class='foot'>${e(gpuNote(config, cost))}</p>`;
    return `<div class='cost-readout'><p class='shape'>${e(head)}</p>${table}${foot}</div>`;
  }

  function frame(cost) {
    const x = cost.inputs;
    return [Math.min(100, x.T / 2, cost.full_crossover_T / 2), Math.max(2e6, x.T * 2, cost.crossover_T_mha * 2)];
  }

  function lineColumns(cost, low, high) {
    const x = cost.inputs;
    const a = Math.log10(low);
    const b = Math.log10(high);
    const ts = [low];
    for (let k = 1; k < LINE_POINTS - 1; k++) ts.push(10 ** (a + ((b - a) * k) / (LINE_POINTS - 1)));
    ts.push(high);
    const [C, d, H, G] = [x.C, x.d, x.heads, x.kv_heads].map(BigInt);
    const perT = Number(projectionFlops(1n, C, d, H, G));
    const perTMha = Number(projectionFlops(1n, C, d, H, H));
    const perTAll = Number(projectionFlops(1n, C, d, H, G) + 2n * H * d * C);
    const qk = ts.map((t) => 2 * x.d * t * t * x.heads);
    const proj = ts.map((t) => perT * t);
    const mha = ts.map((t) => perTMha * t);
    const attn = qk.map((v) => 2 * v); // A·V costs what Q·Kᵀ does
    const projAll = ts.map((t) => perTAll * t);
    return {
      T: ts,
      qk,
      proj,
      proj_mha: mha,
      attn,
      proj_all: projAll,
      T_text: ts.map((t) => F.fixed(t, 0, true)),
      qk_text: qk.map((v) => sci(v)),
      proj_text: proj.map((v) => sci(v)),
      proj_mha_text: mha.map((v) => sci(v)),
      attn_text: attn.map((v) => sci(v)),
      proj_all_text: projAll.map((v) => sci(v)),
    };
  }

  function pointColumns(cost) {
    const x = cost.inputs;
    const perTQk = 2 * x.d * x.heads;
    const c = cost.crossover_T;
    const full = cost.full_crossover_T;
    const rows = [
      ['crossover', c, perTQk * (c * c), QK],
      ['crossover, A·V and output counted', full, 2 * perTQk * (full * full), QK],
      ['now: Q·Kᵀ', x.T, cost.qk_flops_per_layer, QK],
      ['now: projections', x.T, cost.projection_flops_per_layer, PROJ],
    ];
    if (cost.grouped) {
      const m = cost.crossover_T_mha;
      rows.splice(1, 0, ['crossover, no sharing', m, perTQk * (m * m), PROJ_MHA]);
    }
    return {
      what: rows.map((r) => r[0]),
      T: rows.map((r) => r[1]),
      flops: rows.map((r) => r[2]),
      colour: rows.map((r) => r[3]),
      T_text: rows.map((r) => F.fixed(r[1], 0, true)),
      flops_text: rows.map((r) => sci(r[2])),
      marker: rows.map((r) => (r[0].startsWith('crossover') ? 'diamond' : 'circle')),
    };
  }

  /** widgets/cost_viewdata.py view_data: everything the page shows for one state. */
  function viewData(config, inputs) {
    const cost = longContextCost(inputs);
    const [low, high] = frame(cost);
    const lines = lineColumns(cost, low, high);
    const values = [...lines.qk, ...lines.proj, ...lines.proj_mha, ...lines.attn, ...lines.proj_all];
    return {
      lines,
      points: pointColumns(cost),
      x_range: [low, high],
      y_range: [Math.min(...values) / 3, Math.max(...values) * 3],
      now: inputs.T,
      now_text: `T = ${F.commas(inputs.T)}`,
      cross: cost.crossover_T,
      cross_text: `crossover T ≈ ${F.fixed(cost.crossover_T, 0, true)}`,
      grouped: cost.grouped,
      readout: readoutHtml(config, cost, inputs.gpu_gb, inputs.tile),
    };
  }

  // --- the state (widgets/cost_state.py CostSettings) ---------------------------

  /** The settings a page opens on: config.start ({inputs, preset, message}). */
  function initial(config) {
    return { inputs: Object.assign({}, config.start.inputs), preset: config.start.preset, message: '' };
  }

  /**
   * CostSettings.apply: the next state, and whether the change was taken.  A refused
   * change keeps every input and says why in `message`.
   */
  function apply(config, state, changes) {
    const values = Object.assign({}, state.inputs, changes);
    let gpu;
    let tile;
    let shape;
    try {
      gpu = checkGpu(config, values.gpu_gb);
      tile = asCount('tile', values.tile, config.largest_tile);
      shape = checkShape(config, values);
    } catch (err) {
      if (!(err instanceof AttentionError)) throw err;
      return refuse(state, err.message);
    }
    const inputs = Object.assign({}, shape, { gpu_gb: gpu, tile });
    return { state: { inputs, preset: presetName(config, shape), message: '' }, taken: true };
  }

  /** CostSettings.load: a preset's shape (the GPU stays). */
  function load(config, state, name) {
    const p = config.presets[name];
    if (p === undefined) {
      const names = Object.keys(config.presets).join(', ');
      return refuse(state, `there is no preset called '${name}'; try one of ${names}`);
    }
    const shape = {};
    for (const k of SHAPE) shape[k] = p[k];
    return apply(config, state, shape);
  }

  /** Refusing.refuse_empty's message (widgets/refusal.py): the kept value as f"{value:,}" prints it. */
  function needsNumber(state, name) {
    const v = state.inputs[name];
    const kept = name === 'element_bytes' || name === 'gpu_gb' ? F.reprFloat(v) : F.commas(v);
    return C.needsNumber(name, kept);
  }

  return {
    INPUTS, SHAPE, AttentionError, apply, load, initial, viewData, needsNumber, longContextCost, sci, humanBytes,
  };
});
