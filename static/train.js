/*
 * The training lab's trainer in JavaScript: core/train.py (the model, each step's backward beside its
 * forward, Adam and SGD), core/lab/tasks.py, core/lab/scores.py, core/lab/runs.py (training a run,
 * evaluating it, the honest loss, the last line) and the record core/lab/store.py writes, as pure
 * functions. numpy is the reference: it states the order of every sum and draw so that a port can repeat
 * it, and this port does, so a seed trains the very same model here as in numpy, step by step
 * (tests/test_train_parity.py). Only the reported loss takes a logarithm (Math.log, which may differ from
 * numpy's in the last bit); no gradient does.
 *
 * Matrices are Float64Arrays, row by row; a batch of sequences is B·T rows. `serve(scope)` is the lab's
 * Web Worker (static/lab_train.js builds it from a Blob of this file's own source, `workerSource`).
 *
 * In a page it defines the global `LabTrainer`; in Node, require() returns the same object.
 */
(function (root, factory) {
  const node = typeof module === 'object' && module.exports;
  const api = node
    ? factory(require('./pyformat.js'), require('./attention.js'), require('./rng.js'))
    : factory(root.PyFormat, root.AttentionHead, root.SeededRandom);
  api.factory = factory;
  if (node) module.exports = api;
  else root.LabTrainer = api;
})(typeof self !== 'undefined' ? self : this, function (PyFormat, AttentionHead, SeededRandom) {
  'use strict';

  const { exp } = AttentionHead; // fdlibm's e^x, as core.attention.exp: the same bits in numpy and here
  const { Draws, seedFor } = SeededRandom;

  // --- arithmetic in the order core/train.py states ------------------------------------------------

  // Every product of matrices here is one strided loop, `products`. Only the order in which each entry adds
  // its terms decides its bits, so it computes four entries at a time, each its own sum from the first
  // term to the last: four independent chains of additions keep the processor busy where one would wait
  // on each addition (4× faster here than an entry at a time).

  /** Y[y0 + i·ys + j] = Σ_q A[a0 + i·ar + q·ac] · B[b0 + j·br + q·bc], for i < n, j < m, q = 0 … k − 1 in
   * order (core.attention.matmul's order): A's row i against B's row j. */
  function products(Y, y0, ys, n, m, k, A, a0, ar, ac, B, b0, br, bc) {
    for (let i = 0; i < n; i++) {
      const ai = a0 + i * ar, yi = y0 + i * ys;
      let j = 0;
      for (; j + 8 <= m; j += 8) {
        const b1 = b0 + j * br;
        let s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0, s8 = 0;
        for (let q = 0; q < k; q++) {
          const x = A[ai + q * ac], o = b1 + q * bc;
          s1 += x * B[o];
          s2 += x * B[o + br];
          s3 += x * B[o + 2 * br];
          s4 += x * B[o + 3 * br];
          s5 += x * B[o + 4 * br];
          s6 += x * B[o + 5 * br];
          s7 += x * B[o + 6 * br];
          s8 += x * B[o + 7 * br];
        }
        const y = yi + j;
        Y[y] = s1;
        Y[y + 1] = s2;
        Y[y + 2] = s3;
        Y[y + 3] = s4;
        Y[y + 4] = s5;
        Y[y + 5] = s6;
        Y[y + 6] = s7;
        Y[y + 7] = s8;
      }
      for (; j + 4 <= m; j += 4) {
        const b1 = b0 + j * br, b2 = b1 + br, b3 = b2 + br, b4 = b3 + br;
        let s1 = 0, s2 = 0, s3 = 0, s4 = 0;
        for (let q = 0; q < k; q++) {
          const x = A[ai + q * ac], o = q * bc;
          s1 += x * B[b1 + o];
          s2 += x * B[b2 + o];
          s3 += x * B[b3 + o];
          s4 += x * B[b4 + o];
        }
        Y[yi + j] = s1;
        Y[yi + j + 1] = s2;
        Y[yi + j + 2] = s3;
        Y[yi + j + 3] = s4;
      }
      for (; j < m; j++) {
        const bj = b0 + j * br;
        let s = 0;
        for (let q = 0; q < k; q++) s += A[ai + q * ac] * B[bj + q * bc];
        Y[yi + j] = s;
      }
    }
    return Y;
  }

  /** Y = X·W for X [n, k] and W [k, m]. */
  const matmul = (X, W, n, k, m) => products(new Float64Array(n * m), 0, m, n, m, k, X, 0, k, 1, W, 0, 1, m);

  /** Y = X·Wᵀ for X [n, k] and W [m, k]. */
  const matmulT = (X, W, n, k, m) => products(new Float64Array(n * m), 0, m, n, m, k, X, 0, k, 1, W, 0, k, 1);

  /** Σ over the batch of Xᵀ·dY (X [B, T, k], dY [B, T, m]): each sequence's own sum over its positions,
   * then the sequences' sums in batch order (core.train.batch_outer). */
  function batchOuter(X, dY, B, T, k, m) {
    const G = new Float64Array(k * m), own = new Float64Array(k * m);
    for (let b = 0; b < B; b++) {
      products(b === 0 ? G : own, 0, m, k, m, T, X, b * T * k, 1, k, dY, b * T * m, 1, m);
      if (b > 0) for (let e = 0; e < k * m; e++) G[e] += own[e];
    }
    return G;
  }

  function add(a, b) {
    const out = new Float64Array(a.length);
    for (let i = 0; i < a.length; i++) out[i] = a[i] + b[i];
    return out;
  }
  function times(a, x) {
    const out = new Float64Array(a.length);
    for (let i = 0; i < a.length; i++) out[i] = a[i] * x;
    return out;
  }

  /** numpy's sum of a 1-D array (pairwise: eight running sums up to 128 terms, halves above), so that a
   * mean of losses is numpy's to the last bit. */
  function pairwiseSum(a, from = 0, n = a.length - from) {
    if (n < 8) {
      let s = 0;
      for (let i = 0; i < n; i++) s += a[from + i];
      return s;
    }
    if (n <= 128) {
      const r = Array.from(a.slice(from, from + 8));
      let i = 8;
      for (; i < n - (n % 8); i += 8) for (let j = 0; j < 8; j++) r[j] += a[from + i + j];
      let s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
      for (; i < n; i++) s += a[from + i];
      return s;
    }
    let half = Math.floor(n / 2);
    half -= half % 8;
    return pairwiseSum(a, from, half) + pairwiseSum(a, from + half, n - half);
  }

  const mean = (a) => (a.length ? pairwiseSum(a) / a.length : NaN);

  // --- the head's steps, each forward beside its backward (core/train.py) ----------------------------
  // A head works on a batch of B sequences of T positions; its scores and weights are [B, T, T].

  /** Q = X·W_Q, K = X·W_K, V = X·W_V, and the output O·W_O: Y = X·W. Its backward gives dX and dW. */
  const project = (X, W, rows, k, m) => matmul(X, W, rows, k, m);
  const projectBack = (dY, X, W, B, T, k, m) => [matmulT(dY, W, B * T, m, k), batchOuter(X, dY, B, T, k, m)];

  /** S = Q·Kᵀ for each sequence. */
  function scores(Q, K, B, T, d) {
    const S = new Float64Array(B * T * T);
    for (let b = 0; b < B; b++) products(S, b * T * T, T, T, T, d, Q, b * T * d, d, 1, K, b * T * d, d, 1);
    return S;
  }

  /** dQ = dS·K and dK = dSᵀ·Q, for each sequence. */
  function scoresBack(dS, Q, K, B, T, d) {
    const dQ = new Float64Array(B * T * d), dK = new Float64Array(B * T * d);
    for (let b = 0; b < B; b++) {
      const s = b * T * T, o = b * T * d;
      products(dQ, o, d, T, d, T, dS, s, T, 1, K, o, 1, d);
      products(dK, o, d, T, d, T, dS, s, 1, T, Q, o, 1, d);
    }
    return [dQ, dK];
  }

  /** ÷√d, ÷τ and the mask on the scores: M = S ÷ √d ÷ τ, −∞ where the key comes after the query. */
  function scaleCoolMask(S, T, d, sw) {
    const root = Math.sqrt(d), M = new Float64Array(S.length);
    for (let n = 0; n < S.length; n++) {
      let s = sw.scaling ? S[n] / root : S[n];
      if (sw.temperature !== 1) s = s / sw.temperature;
      M[n] = sw.causal && n % T > Math.floor(n / T) % T ? -Infinity : s;
    }
    return M;
  }

  /** Their backward: nothing flows through a masked score; then ÷τ, then ÷√d, as the forward's. */
  function scaleCoolMaskBack(dM, T, d, sw) {
    const root = Math.sqrt(d), dS = new Float64Array(dM.length);
    for (let n = 0; n < dM.length; n++) {
      let g = sw.causal && n % T > Math.floor(n / T) % T ? 0 : dM[n];
      if (sw.temperature !== 1) g = g / sw.temperature;
      dS[n] = sw.scaling ? g / root : g;
    }
    return dS;
  }

  /** Each row's softmax, −∞ giving exactly 0, its sum added in order; and its backward A·(dA − Σ dA·A). */
  function softmax(M, rows, T) {
    const A = new Float64Array(rows * T), e = new Float64Array(T);
    for (let r = 0; r < rows; r++) {
      let top = -Infinity;
      for (let j = 0; j < T; j++) {
        const v = M[r * T + j];
        if (Number.isFinite(v) && v > top) top = v;
      }
      for (let j = 0; j < T; j++) {
        const v = M[r * T + j];
        e[j] = Number.isFinite(v) ? exp(v - top) : 0;
      }
      let s = e[0];
      for (let j = 1; j < T; j++) s += e[j];
      for (let j = 0; j < T; j++) A[r * T + j] = e[j] / s;
    }
    return A;
  }
  function softmaxBack(dA, A, rows, T) {
    const dM = new Float64Array(rows * T);
    for (let r = 0; r < rows; r++) {
      let s = dA[r * T] * A[r * T];
      for (let j = 1; j < T; j++) s += dA[r * T + j] * A[r * T + j];
      for (let j = 0; j < T; j++) dM[r * T + j] = A[r * T + j] * (dA[r * T + j] - s);
    }
    return dM;
  }

  /** Raw scores as weights (0 where masked); the gradient passes where a score is visible. */
  const raw = (M) => M.map((v) => (Number.isFinite(v) ? v : 0));
  const rawBack = (dA, M) => dA.map((v, n) => (Number.isFinite(M[n]) ? v : 0));

  /** One-hot on each row's largest score, the first of equals; a choice that does not move when the
   * scores move a little has no gradient. */
  function top1(M, rows, T) {
    const A = new Float64Array(rows * T);
    for (let r = 0; r < rows; r++) {
      let best = 0;
      for (let j = 1; j < T; j++) if (M[r * T + j] > M[r * T + best]) best = j;
      A[r * T + best] = 1;
    }
    return A;
  }

  const NORMALISE = { // name -> [forward, backward]: core.train.NORMALISE
    softmax: [softmax, (dA, A, M, rows, T) => softmaxBack(dA, A, rows, T)],
    raw: [(M) => raw(M), (dA, A, M) => rawBack(dA, M)],
    top1: [top1, (dA) => new Float64Array(dA.length)],
  };

  /** O = A·V for each sequence; its backward dA = dO·Vᵀ and dV = Aᵀ·dO. */
  function blend(A, V, B, T, d) {
    const O = new Float64Array(B * T * d);
    for (let b = 0; b < B; b++) products(O, b * T * d, d, T, d, T, A, b * T * T, T, 1, V, b * T * d, 1, d);
    return O;
  }
  function blendBack(dO, A, V, B, T, d) {
    const dA = new Float64Array(B * T * T), dV = new Float64Array(B * T * d);
    for (let b = 0; b < B; b++) {
      const s = b * T * T, o = b * T * d;
      products(dA, s, T, T, T, d, dO, o, d, 1, V, o, d, 1);
      products(dV, o, d, T, d, T, A, s, 1, T, dO, o, 1, d);
    }
    return [dA, dV];
  }

  /** Layer n's head on the stream x [B, T, C]: what it adds to the stream, and what backward needs. */
  function headForward(x, p, n, sw, shape, B, T) {
    const { C, d } = shape;
    const W_Q = p[`${n}.W_Q`], W_K = sw.tied_qk ? W_Q : p[`${n}.W_K`], W_V = p[`${n}.W_V`], W_O = p[`${n}.W_O`];
    const rows = B * T;
    const xs = sw.x_scale !== 1 ? times(x, sw.x_scale) : x;
    const Q = project(xs, W_Q, rows, C, d), K = project(xs, W_K, rows, C, d), V = project(xs, W_V, rows, C, d);
    const M = scaleCoolMask(scores(Q, K, B, T, d), T, d, sw);
    const A = NORMALISE[sw.normaliser][0](M, rows, T);
    const O = blend(A, V, B, T, d);
    return [project(O, W_O, rows, d, C), { xs, Q, K, V, M, A, O, W_Q, W_K, W_V, W_O }];
  }

  /** Undo headForward, last step first: the weights' gradients go into g; returns the stream's. */
  function headBackward(dout, c, n, sw, shape, B, T, g) {
    const { C, d } = shape;
    const rows = B * T;
    const [dO, gO] = projectBack(dout, c.O, c.W_O, B, T, d, C);
    g[`${n}.W_O`] = gO;
    const [dA, dV] = blendBack(dO, c.A, c.V, B, T, d);
    const dM = NORMALISE[sw.normaliser][1](dA, c.A, c.M, rows, T);
    const [dQ, dK] = scoresBack(scaleCoolMaskBack(dM, T, d, sw), c.Q, c.K, B, T, d);
    const [dxQ, gQ] = projectBack(dQ, c.xs, c.W_Q, B, T, C, d);
    const [dxK, gK] = projectBack(dK, c.xs, c.W_K, B, T, C, d);
    const [dxV, gV] = projectBack(dV, c.xs, c.W_V, B, T, C, d);
    g[`${n}.W_V`] = gV;
    if (sw.tied_qk) { // W_K is W_Q: both uses add up, and the unused W_K does not move
      g[`${n}.W_Q`] = add(gQ, gK);
      g[`${n}.W_K`] = new Float64Array(gK.length);
    } else {
      g[`${n}.W_Q`] = gQ;
      g[`${n}.W_K`] = gK;
    }
    const dxs = add(add(dxQ, dxK), dxV);
    return sw.x_scale !== 1 ? times(dxs, sw.x_scale) : dxs;
  }

  // --- the whole model ---------------------------------------------------------------------------

  /** Every parameter drawn uniformly from ±√(3·variance), in core.train.init_params's order. */
  function initParams(shape, seed) {
    const { V, T, C, d, layers } = shape;
    const draws = new Draws(seed);
    const uniform = (rows, cols, variance) => {
      const bound = Math.sqrt(3 * variance);
      return draws.uniform(rows * cols).map((u) => bound * (2 * u - 1));
    };
    const p = { E: uniform(V, C, 0.5), P: uniform(T, C, 0.5) };
    for (let n = 0; n < layers; n++) {
      for (const w of ['W_Q', 'W_K', 'W_V']) p[`${n}.${w}`] = uniform(C, d, 1 / C);
      p[`${n}.W_O`] = uniform(d, C, 1 / d);
    }
    p.U = uniform(C, V, 1 / C);
    return p;
  }

  /** The stream's start for tokens [B, T]: each token's embedding plus its position's. */
  function embed(p, tokens, B, T, C) {
    const x = new Float64Array(B * T * C);
    for (let r = 0; r < B * T; r++) {
      const t = r % T, tok = tokens[r];
      for (let c = 0; c < C; c++) x[r * C + c] = p.E[tok * C + c] + p.P[t * C + c];
    }
    return x;
  }

  /** Each position's gradient added into its token's row of E, in order, and into its position's row of P
   * (the sequences in batch order). */
  function embedBack(dx, p, tokens, B, T, C, g) {
    const gE = new Float64Array(p.E.length), gP = new Float64Array(p.P.length);
    for (let r = 0; r < B * T; r++) {
      const tok = tokens[r];
      for (let c = 0; c < C; c++) gE[tok * C + c] = gE[tok * C + c] + dx[r * C + c];
    }
    for (let t = 0; t < T; t++) {
      for (let c = 0; c < C; c++) {
        let s = dx[t * C + c];
        for (let b = 1; b < B; b++) s += dx[(b * T + t) * C + c];
        gP[t * C + c] = s;
      }
    }
    g.E = gE;
    g.P = gP;
  }

  /** Logits [B, T, V] for tokens [B, T], the last stream, and every layer's cache. */
  function forward(p, tokens, B, T, sw, shape) {
    let x = embed(p, tokens, B, T, shape.C);
    const caches = [];
    for (let n = 0; n < shape.layers; n++) {
      const [out, c] = headForward(x, p, n, sw, shape, B, T);
      caches.push(c);
      x = add(x, out); // the residual stream
    }
    return { logits: matmul(x, p.U, B * T, shape.C, shape.V), x, caches };
  }

  /** The mean of −log p(target) over the positions with a target (−1: none), and its gradient with respect
   * to the logits, (p − one-hot) ÷ the number of targets, as core.train.cross_entropy writes them. */
  function crossEntropy(logits, targets, rows, V) {
    let count = 0;
    for (let r = 0; r < rows; r++) if (targets[r] >= 0) count++;
    count = Math.max(count, 1);
    const dlogits = new Float64Array(rows * V), e = new Float64Array(V);
    let total = 0;
    for (let r = 0; r < rows; r++) {
      let top = -Infinity;
      for (let v = 0; v < V; v++) top = Math.max(top, logits[r * V + v]);
      for (let v = 0; v < V; v++) e[v] = exp(logits[r * V + v] - top);
      let s = e[0];
      for (let v = 1; v < V; v++) s += e[v];
      const has = targets[r] >= 0 ? 1 : 0, target = has ? targets[r] : 0;
      for (let v = 0; v < V; v++) dlogits[r * V + v] = ((e[v] / s - (v === target ? 1 : 0)) * has) / count;
      // the loss itself is only reported: its logarithm feeds no gradient
      const term = has ? logits[r * V + target] - top - Math.log(s) : 0;
      total = r === 0 ? term : total + term;
    }
    return [-total / count, dlogits];
  }

  /** The loss on a batch, and its gradient for every parameter: forward, then each step undone in turn. */
  function lossAndGrads(p, tokens, targets, B, T, sw, shape) {
    const { logits, x, caches } = forward(p, tokens, B, T, sw, shape);
    const [loss, dlogits] = crossEntropy(logits, targets, B * T, shape.V);
    const g = {};
    let dx;
    [dx, g.U] = projectBack(dlogits, x, p.U, B, T, shape.C, shape.V);
    for (let n = caches.length - 1; n >= 0; n--) {
      dx = add(dx, headBackward(dx, caches[n], n, sw, shape, B, T, g)); // the residual: both paths
    }
    embedBack(dx, p, tokens, B, T, shape.C, g);
    return [loss, g];
  }

  // --- optimisers: each step returns new parameters (and Adam's new moments) ----------------------------

  function adam(params, lr, b1 = 0.9, b2 = 0.999, eps = 1e-8) {
    const zero = (o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, new Float64Array(v.length)]));
    return { kind: 'adam', lr, b1, b2, eps, b1_t: 1, b2_t: 1, m: zero(params), v: zero(params) };
  }

  /** Adam (Kingma and Ba, 2015), its βᵗ kept as running products, as core.train.Adam. */
  function adamStep(opt, params, grads) {
    const { lr, b1, b2, eps } = opt;
    const b1_t = opt.b1_t * b1, b2_t = opt.b2_t * b2;
    const next = { params: {}, opt: { ...opt, b1_t, b2_t, m: {}, v: {} } };
    for (const k of Object.keys(params)) {
      const g = grads[k], m = opt.m[k].map((m0, i) => b1 * m0 + (1 - b1) * g[i]);
      const v = opt.v[k].map((v0, i) => b2 * v0 + (1 - b2) * (g[i] * g[i]));
      next.params[k] = params[k].map((w, i) => w - (lr * (m[i] / (1 - b1_t))) / (Math.sqrt(v[i] / (1 - b2_t)) + eps));
      next.opt.m[k] = m;
      next.opt.v[k] = v;
    }
    return next;
  }

  /** Plain gradient descent: −lr × the gradient. */
  function sgdStep(opt, params, grads) {
    const out = {};
    for (const k of Object.keys(params)) out[k] = params[k].map((w, i) => w - opt.lr * grads[k][i]);
    return { params: out, opt };
  }

  const OPTIMISERS = {
    adam: [adam, adamStep],
    sgd: [(params, lr) => ({ kind: 'sgd', lr }), sgdStep],
  };

  // --- the tasks (core/lab/tasks.py): tokens and targets [B·T], −1 where nothing is predicted -----------

  function previousToken(draws, B, V, T) {
    const x = draws.below(V, B * T), y = new Int32Array(B * T).fill(-1);
    for (let r = 0; r < B * T; r++) if (r % T > 0) y[r] = x[r - 1];
    return [x, y];
  }

  /** The next token after position r, or −1 at a sequence's last position. */
  function nextTokens(x, T) {
    return x.map((_, r) => (r % T < T - 1 ? x[r + 1] : -1));
  }

  function repeatedHalves(draws, B, V, T) {
    const h = Math.floor(T / 2), first = draws.below(V, B * h), x = new Int32Array(B * T);
    for (let b = 0; b < B; b++) for (let t = 0; t < T; t++) x[b * T + t] = first[b * h + (t % h)];
    return [x, nextTokens(x, T)];
  }

  const N_TRIGGERS = 3, TRIGGER_SHARE = 0.2, BIGRAM_SEED = 1234;
  const bigrams = new Map();

  /** core.lab.tasks.bigram_table's running sums, row by row: each entry the one before plus the next term. */
  function bigramRunningSums(V) {
    if (!bigrams.has(V)) {
      const u = new Draws(BIGRAM_SEED).uniform(V * V);
      const w = u.map((v, n) => (n % V < N_TRIGGERS ? 0 : (v * v) * (v * v)));
      const cdf = new Float64Array(V * V);
      for (let a = 0; a < V; a++) {
        let sum = w[a * V];
        for (let k = 1; k < V; k++) sum = sum + w[a * V + k];
        const factor = (1 - TRIGGER_SHARE) / sum;
        let acc = 0;
        for (let k = 0; k < V; k++) {
          const entry = k < N_TRIGGERS ? TRIGGER_SHARE / N_TRIGGERS : w[a * V + k] * factor;
          acc = k === 0 ? entry : acc + entry;
          cdf[a * V + k] = acc;
        }
      }
      bigrams.set(V, cdf);
    }
    return bigrams.get(V);
  }

  function triggers(draws, B, V, T) {
    const cdf = bigramRunningSums(V);
    const outputs = draws.below(V - N_TRIGGERS, B * N_TRIGGERS).map((o) => o + N_TRIGGERS);
    const x = new Int32Array(B * T), firsts = draws.below(V, B), u = draws.uniform(B * (T - 1));
    for (let b = 0; b < B; b++) {
      x[b * T] = firsts[b];
      for (let t = 1; t < T; t++) {
        const prev = x[b * T + t - 1];
        if (prev < N_TRIGGERS) x[b * T + t] = outputs[b * N_TRIGGERS + prev];
        else {
          let below = 0;
          for (let k = 0; k < V; k++) if (u[b * (T - 1) + t - 1] > cdf[prev * V + k]) below++;
          x[b * T + t] = Math.min(below, V - 1);
        }
      }
    }
    return [x, nextTokens(x, T)];
  }

  const TASKS = { 'previous-token': previousToken, 'repeated-halves': repeatedHalves, triggers };

  // --- what a head does, as numbers (core/lab/scores.py); A is [B, T, T] -------------------------------

  const at = (A, T, b, i, j) => A[(b * T + i) * T + j];

  function previousTokenScore(A, B, T) {
    const diagonal = [];
    for (let b = 0; b < B; b++) for (let i = 1; i < T; i++) diagonal.push(at(A, T, b, i, i - 1));
    return mean(diagonal);
  }

  /** Mean total weight on the keys j where `marked(b, i, j)`, over the queries that have one (and pass
   * `asked`, when given). */
  function weightOn(A, B, T, marked, asked) {
    const totals = [];
    for (let b = 0; b < B; b++) {
      for (let i = 0; i < T; i++) {
        if (asked && !asked(b, i)) continue;
        let any = false, s = 0;
        for (let j = 0; j < T; j++) {
          const m = marked(b, i, j);
          any = any || m;
          s += m ? at(A, T, b, i, j) : 0;
        }
        if (any) totals.push(s);
      }
    }
    return mean(totals);
  }

  /** same(b, i, j): j < i holds the token at i. */
  const earlierCopy = (tokens, T) => (b, i, j) => j < i && tokens[b * T + i] === tokens[b * T + j];

  function duplicateTokenScore(A, tokens, B, T) {
    return weightOn(A, B, T, earlierCopy(tokens, T));
  }

  function inductionScore(A, tokens, B, T, asked) {
    const same = earlierCopy(tokens, T);
    return weightOn(A, B, T, (b, i, j) => j > 0 && same(b, i, j - 1), asked);
  }

  function offsetScore(A, B, T, h) {
    const picked = [];
    for (let b = 0; b < B; b++) for (let i = h; i < T; i++) picked.push(at(A, T, b, i, i - h + 1));
    return mean(picked);
  }

  function largestWeight(A, B, T) {
    const tops = [];
    for (let r = 0; r < B * T; r++) {
      if (r % T === 0) continue;
      let top = A[r * T];
      for (let j = 1; j < T; j++) top = Math.max(top, A[r * T + j]);
      tops.push(top);
    }
    return mean(tops);
  }

  function selfFirst(A, B, T) {
    const mine = [];
    for (let b = 0; b < B; b++) {
      for (let i = 1; i < T; i++) {
        let best = 0;
        for (let j = 1; j < T; j++) if (at(A, T, b, i, j) > at(A, T, b, i, best)) best = j;
        mine.push(best === i ? 1 : 0);
      }
    }
    return mean(mine);
  }

  function lateToEarlyOutput(O, B, T, d) {
    const size = [];
    for (let t = 0; t < T; t++) {
      let s = 0;
      for (let b = 0; b < B; b++) {
        let sq = 0;
        for (let q = 0; q < d; q++) sq += O[(b * T + t) * d + q] ** 2;
        s += Math.sqrt(sq);
      }
      size.push(s / B);
    }
    const third = Math.max(1, Math.floor((T - 1) / 3));
    return mean(size.slice(T - third)) / mean(size.slice(1, 1 + third));
  }

  // --- a run: trained from a seed, evaluated on held-out sequences (core/lab/runs.py) ------------------

  const EVAL_SEQS = 256, PROBE_T = 12, SNAPSHOTS = 10;
  const WEIGHTS = 0, BATCHES = 1, HELD_OUT = 2, PROBE = 3, UNREPEATED = 4; // the streams of a seed

  /** A run generates one token at a time, so the honest loss, where its mask is off (as every shipped run
   * with an honest evaluation: tests/test_train_parity.py). */
  const isHonest = (run) => !run.switches.causal;

  function taskBatch(run, draws, B) {
    const { V, T } = run.shape;
    return TASKS[run.task](draws, B, V, T);
  }

  /** Tokens [B, T] cut to their first `n` positions. */
  function firstPositions(tokens, B, T, n) {
    const out = new Int32Array(B * n);
    for (let b = 0; b < B; b++) for (let t = 0; t < n; t++) out[b * n + t] = tokens[b * T + t];
    return out;
  }

  /** The loss when position i is predicted from tokens 0..i only, whatever the mask. */
  function honestLoss(run, p, tokens, targets, B) {
    const T = run.shape.T;
    let summed = 0, count = 0;
    for (let i = 0; i < T; i++) {
      const mine = new Int32Array(B).fill(-1);
      let n = 0;
      for (let b = 0; b < B; b++) if (targets[b * T + i] >= 0) { mine[b] = targets[b * T + i]; n++; }
      if (!n) continue;
      const { logits } = forward(p, firstPositions(tokens, B, T, i + 1), B, i + 1, run.switches, run.shape);
      const last = new Float64Array(B * run.shape.V);
      for (let b = 0; b < B; b++) last.set(logits.subarray((b * (i + 1) + i) * run.shape.V, (b * (i + 1) + i + 1) * run.shape.V), b * run.shape.V);
      summed += crossEntropy(last, mine, B, run.shape.V)[0] * n;
      count += n;
    }
    return summed / count;
  }

  /** What the model does on held-out `data`: its loss, and what each head does (core.lab.runs.evaluate). */
  function evaluate(run, p, data, unrepeated) {
    const [tokens, targets] = data;
    const { T, V, d } = run.shape, B = tokens.length / T, sw = run.switches;
    const lossWith = (logits, wanted) => crossEntropy(logits, wanted, B * T, V)[0];
    const { logits, caches } = forward(p, tokens, B, T, sw, run.shape);
    const out = { eval_loss: lossWith(logits, targets) };
    out.scores = caches.map((c) => ({
      previous_token: previousTokenScore(c.A, B, T),
      duplicate_token: duplicateTokenScore(c.A, tokens, B, T),
      induction: inductionScore(c.A, tokens, B, T),
      largest_weight: largestWeight(c.A, B, T),
      self_first: selfFirst(c.A, B, T),
      late_to_early_output: lateToEarlyOutput(c.O, B, T, d),
    }));
    if (run.task === 'repeated-halves') {
      const h = Math.floor(T / 2);
      forward(p, unrepeated, B, T, sw, run.shape).caches.forEach((c, n) => {
        out.scores[n].positional = offsetScore(c.A, B, T, h);
      });
      // the first token of the repeat is predictable only by position: in neither half's loss
      out.first_half_loss = lossWith(logits, targets.map((y, r) => (r % T < h - 1 ? y : -1)));
      out.repeat_loss = lossWith(logits, targets.map((y, r) => (r % T > h - 1 ? y : -1)));
    }
    if (run.task === 'triggers') {
      const same = earlierCopy(tokens, T);
      const again = (b, i) => tokens[b * T + i] < N_TRIGGERS && Array.from({ length: i }, (_, j) => same(b, i, j)).some(Boolean);
      const afterTrigger = (b, i) => i > 0 && tokens[b * T + i - 1] < N_TRIGGERS;
      caches.forEach((c, n) => {
        out.scores[n].induction_at_triggers = inductionScore(c.A, tokens, B, T, again);
        const picked = [];
        for (let b = 0; b < B; b++) for (let i = 1; i < T; i++) if (afterTrigger(b, i)) picked.push(at(c.A, T, b, i, i - 1));
        out.scores[n].previous_token_after_triggers = mean(picked);
      });
      const recall = targets.map((y, r) => (again(Math.floor(r / T), r % T) ? y : -1));
      out.recall_loss = lossWith(logits, recall);
      out.recall_positions = recall.filter((y) => y >= 0).length;
    }
    if (isHonest(run)) out.honest_loss = honestLoss(run, p, tokens, targets, B);
    return out;
  }

  /** The shown head on the probe: its input X, its W_Q, W_K, W_V, and every layer's weights there. */
  function headSnapshot(run, p, probe) {
    const n = run.shown_layer, T = probe.length, { C, d } = run.shape, sw = run.switches;
    const { caches } = forward(p, probe, 1, T, sw, run.shape);
    let x = embed(p, probe, 1, T, C);
    for (let k = 0; k < n; k++) x = add(x, project(caches[k].O, p[`${k}.W_O`], T, d, C));
    const rows = (a, r, c) => Array.from({ length: r }, (_, i) => Array.from(a.subarray(i * c, (i + 1) * c)));
    return {
      X: rows(x, T, C),
      W_Q: rows(p[`${n}.W_Q`], C, d),
      W_K: rows(sw.tied_qk ? p[`${n}.W_Q`] : p[`${n}.W_K`], C, d),
      W_V: rows(p[`${n}.W_V`], C, d),
      maps: caches.map((c) => rows(c.A, T, T)),
    };
  }

  /** Python's round(): halves to the even neighbour. */
  function roundHalfEven(x) {
    const f = Math.floor(x), rest = x - f;
    return rest > 0.5 || (rest === 0.5 && f % 2 !== 0) ? f + 1 : f;
  }

  /** The steps at which a run of `steps` is evaluated: steps · (k / 9)², k = 0 … 9, rounded, without
   * repeats (closer together early on, where patterns form), as numpy computes them. */
  function evalSteps(steps) {
    const third = 1 / (SNAPSHOTS - 1);
    const at = Array.from({ length: SNAPSHOTS }, (_, k) => {
      const y = k === SNAPSHOTS - 1 ? 1 : k * third;
      return roundHalfEven(steps * (y * y));
    });
    return Array.from(new Set(at)).sort((a, b) => a - b);
  }

  /**
   * Training `run` (a run as the lab's data files describe it) from `seed`, one step at a time: a generator
   * that yields {step, loss, head} after each step and {step, evaluation, snapshot, head} at each
   * evaluation (`head()` is the shown head on the probe now), and returns what core.lab.runs.train
   * returns. `next('stop')` ends the run where it is, evaluated there.
   */
  function* training(run, seed, steps = run.steps) {
    const { V, T } = run.shape, sw = run.switches;
    let p = initParams(run.shape, seedFor(seed, WEIGHTS));
    const batches = new Draws(seedFor(seed, BATCHES));
    const heldOut = taskBatch(run, new Draws(seedFor(seed, HELD_OUT)), EVAL_SEQS);
    const probe = firstPositions(taskBatch(run, new Draws(seedFor(seed, PROBE)), 1)[0], 1, T, PROBE_T);
    const unrepeated = run.task === 'repeated-halves'
      ? previousToken(new Draws(seedFor(seed, UNREPEATED)), EVAL_SEQS, V, T)[0] : null;
    const [start, step] = OPTIMISERS[run.optimiser];
    let opt = start(p, run.lr);
    const evalAt = new Set(evalSteps(steps));
    const losses = [], evals = [], snapshots = [];
    const head = () => Object.assign(headSnapshot(run, p, probe), { probe: Array.from(probe) });
    let stop = false;
    for (let n = 0; ; n++) { // n steps taken
      if (evalAt.has(n) || n === steps || stop) {
        const evaluation = Object.assign(evaluate(run, p, heldOut, unrepeated), { step: n });
        const snapshot = Object.assign(headSnapshot(run, p, probe), { step: n });
        evals.push(evaluation);
        snapshots.push(snapshot);
        if (n === steps || stop) break;
        if ((yield { step: n, evaluation, snapshot, head }) === 'stop') break; // evaluated here: it ends here
      }
      const [tokens, targets] = taskBatch(run, batches, run.batch);
      const [loss, g] = lossAndGrads(p, tokens, targets, run.batch, T, sw, run.shape);
      losses.push(loss);
      ({ params: p, opt } = step(opt, p, g));
      stop = (yield { step: n + 1, loss, head }) === 'stop';
    }
    return { run, seed, steps: losses.length, losses, evals, snapshots, probe: Array.from(probe), params: p };
  }

  /** Train to the end (or to `steps`): what core.lab.runs.train returns. */
  function train(run, seed, steps) {
    const it = training(run, seed, steps);
    let r = it.next();
    while (!r.done) r = it.next();
    return r.value;
  }

  // --- the run as the lab ships it (core/lab/store.py and core/lab/encoding.py) ------------------------

  /** Python's float(f"{x:.3g}"): three significant digits. */
  const sig3 = (x) => Number(PyFormat.general(x, 3));

  /** A double as the nearest half-precision float's 16 bits, ties to even (numpy's astype('<f2')). */
  function toHalf(x) {
    const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
    const a = Math.abs(x);
    if (Number.isNaN(x)) return 0x7e00;
    if (a >= 65520) return sign | 0x7c00; // beyond the largest half (65504) and its halfway point: ∞
    if (a < 2 ** -14) return sign | roundHalfEven(a * 2 ** 24); // subnormal (1024 is the smallest normal)
    let e = Math.floor(Math.log2(a));
    if (2 ** e > a) e -= 1; // log2 may round up just below a power of two
    if (2 ** (e + 1) <= a) e += 1;
    let m = roundHalfEven(a * 2 ** (10 - e)); // 1024 … 2048, exact
    if (m === 2048) { m = 1024; e += 1; }
    if (e > 15) return sign | 0x7c00;
    return sign | ((e + 15) << 10) | (m - 1024);
  }

  /** A matrix (rows of numbers) as {shape, f16: base64 of little-endian halves} (core.lab.encoding.f16). */
  function f16(rows) {
    const flat = rows.flat();
    let bytes = '';
    for (const v of flat) {
      const h = toHalf(v);
      bytes += String.fromCharCode(h & 0xff, h >> 8);
    }
    return { shape: [rows.length, rows[0].length], f16: btoa(bytes) };
  }

  const CURVE_POINTS = 100;

  /** The training loss averaged over windows of `every` steps, about 100 of them (core.lab.encoding.curve). */
  function curve(losses) {
    const every = Math.max(1, Math.ceil(losses.length / CURVE_POINTS)), loss = [];
    for (let i = 0; i < losses.length; i += every) loss.push(sig3(mean(losses.slice(i, i + every))));
    return { every, loss };
  }

  /** An evaluation with its numbers at three significant digits (core.lab.store.numbers). */
  function numbers(evaluation) {
    const out = {};
    for (const [k, v] of Object.entries(evaluation)) {
      if (k !== 'step') out[k] = Array.isArray(v) ? v.map(numbers) : sig3(v);
    }
    return out;
  }

  /** Whether snapshots carry the shown head's matrices (a 16 × 64 W_Q is too big to ship or to read). */
  const headIsDrawn = (run) => run.shape.d <= 8;

  /** One seed of a run as the lab ships it, with every snapshot (core.lab.store.seed_record). */
  function seedRecord(result) {
    const { run } = result;
    const snapshots = result.snapshots.map((s) => {
      const maps = {};
      s.maps.forEach((m, n) => { if (n !== run.shown_layer || !headIsDrawn(run)) maps[String(n)] = f16(m); });
      const snap = { step: s.step, maps };
      if (headIsDrawn(run)) for (const k of ['X', 'W_Q', 'W_K', 'W_V']) snap[k] = f16(s[k]);
      return snap;
    });
    const heldOut = { step: result.evals.map((e) => e.step), loss: result.evals.map((e) => sig3(e.eval_loss)) };
    if (isHonest(run)) heldOut.honest = result.evals.map((e) => sig3(e.honest_loss));
    const last = result.evals.length - 1;
    return {
      seed: result.seed, probe: result.probe, curve: curve(result.losses), held_out: heldOut,
      start: numbers(result.evals[0]), end: numbers(result.evals[last]), snapshots,
    };
  }

  /** A run's data file holding `records` (core.lab.store.run_json). */
  function runJson(run, records, steps) {
    const keys = ['name', 'claim', 'task', 'shape', 'switches'];
    return Object.assign(Object.fromEntries(keys.map((k) => [k, run[k]])), {
      steps, optimiser: run.optimiser, lr: run.lr, batch: run.batch, compare: run.compare,
      shown_layer: run.shown_layer, seeds: records,
    });
  }

  /** The last line the command line prints for a run (core.lab.runs.final_line). */
  function finalLine(result) {
    const { run } = result, e = result.evals[result.evals.length - 1], f = (x) => PyFormat.fixed(x, 3);
    const tail = mean(result.losses.slice(-Math.max(1, Math.floor(result.losses.length / 20))));
    const line = `${run.name}: loss ${f(tail)}, eval loss ${f(e.eval_loss)}, ` +
      `previous-token score ${f(e.scores[0].previous_token)}, ` +
      `induction score ${f(e.scores[run.shape.layers - 1].induction)}`;
    return line + ('honest_loss' in e ? `, honest loss ${f(e.honest_loss)}` : '');
  }

  // --- the checks of each shipped run, for one seed's record (core/lab/findings.py CHECKS) ---------------
  // Their names and sentences come with the lab's data (index.json's findings); the tests are here, in the
  // same order, held to Python's on every shipped seed by tests/test_train_parity.py.

  const end = (r, layer = 0) => r.end.scores[layer];
  const lnV = (run) => Math.log(run.shape.V);

  function firstStepBelow(record, level, steps) {
    const { every, loss } = record.curve;
    for (let j = 0; j < loss.length; j++) if (loss[j] < level) return Math.min((j + 1) * every, steps);
    return null;
  }

  function tailLoss(record) {
    const losses = record.curve.loss;
    return mean(losses.slice(-Math.max(1, Math.floor(losses.length / 20))));
  }

  /** A check that reads the same seed of the run this one is set against. */
  const compares = (test) => Object.assign(test, { compares: true });

  function slower(r, ref, run) {
    const mine = firstStepBelow(r, 1.0, run.steps), theirs = firstStepBelow(ref, 1.0, run.steps);
    return theirs !== null && (mine === null || mine >= 1.25 * theirs);
  }

  const NO_SCALE = [
    (r) => r.start.scores[0].largest_weight >= 0.8,
    compares(slower),
    (r, ref, run) => r.end.eval_loss > 0.5 * lnV(run),
  ];
  const CHECKS = {
    'previous-token': [(r) => end(r).previous_token >= 0.9],
    'tied-qk': [
      compares((r, ref) => end(r).previous_token <= 0.8 * end(ref).previous_token),
      (r) => end(r).self_first >= 0.5,
    ],
    'top-1': [(r, ref, run) => r.end.eval_loss > 0.8 * lnV(run)],
    raw: [(r) => end(r).late_to_early_output >= 1.5],
    'no-scale': NO_SCALE,
    'no-scale-sgd': NO_SCALE,
    'positional-lookup': [
      (r) => r.end.scores.some((s) => s.induction >= 0.5 && s.positional < 0.5),
      (r) => r.end.repeat_loss < 0.2 * r.end.first_half_loss,
      (r) => Math.max(...r.end.scores.map((s) => s.positional)) >= 0.5,
    ],
    'no-mask': [
      (r) => tailLoss(r) < 0.01,
      (r, ref, run) => r.end.honest_loss > lnV(run),
    ],
    triggers: [(r) => end(r, 0).previous_token_after_triggers > 0.5 && end(r, 1).induction_at_triggers > 0.5],
  };

  /** Whether each of the checks of the shipped run `name` holds for `record` (a seed record of `run`),
   * against `ref` (the same seed of the run it is set against, where a check needs one). */
  function checksHeld(name, record, ref, run) {
    return (CHECKS[name] || []).map((test) => Boolean(test(record, ref, run)));
  }

  /** "reproduced", "partly" or "not reproduced" (core.lab.findings.verdict), for checks [{claim, held}]. */
  function verdict(checks) {
    const claimed = checks.filter((c) => c.claim).map((c) => c.held);
    if (claimed.every((h) => h.every(Boolean))) return 'reproduced';
    if (!claimed.some((h) => h.some(Boolean))) return 'not reproduced';
    return 'partly';
  }

  /** Whether a run's checks compare it with another run's record. */
  const needsReference = (name) => (CHECKS[name] || []).some((test) => test.compares);

  // --- the Web Worker ------------------------------------------------------------------------------------

  /** The lab's worker, in `scope` (a worker's global, or anything with onmessage and postMessage).
   * In: {train: {run, seed, steps, reference}} (reference: the run it is set against, trained after it for
   * the checks that compare, or null) and {stop: true}. Out, every `chunk` ms or so while it trains:
   * {progress: {stage, step, losses (new since the last), evaluations (new), head (the shown head on the
   * probe, at most every `headEvery` ms)}}; {stopped: step} as soon as it reads a stop; then
   * {done: {record, line, steps}} and, with a reference, {reference: {record}} ({reference: null} if
   * stopped first); or {failed: message}. It trains in chunks and lets messages in between them, so a stop
   * is read within one chunk. */
  function serve(scope, chunk = 30, headEvery = 100) {
    let job = null;
    const later = typeof MessageChannel === 'function' // a turn of the event loop, without a timer's delay
      ? (() => {
        const ch = new MessageChannel();
        ch.port1.onmessage = () => work();
        return () => ch.port2.postMessage(0);
      })()
      : () => setTimeout(work, 0);
    function work() {
      if (!job) return;
      const t0 = Date.now(), progress = { stage: job.stage, step: job.step, losses: [], evaluations: [] };
      let r, head = null;
      try {
        if (job.stop && job.stage === 'reference') {
          scope.postMessage({ reference: null });
          job = null;
          return;
        }
        if (job.stop && !job.told) {
          scope.postMessage({ stopped: job.step });
          job.told = true;
        }
        do {
          r = job.it.next(job.stop ? 'stop' : undefined);
          if (r.done) break;
          const v = r.value;
          progress.step = job.step = v.step;
          head = v.head;
          if ('loss' in v) {
            progress.losses.push(v.loss);
            if (!Number.isFinite(v.loss)) throw new Error(`training diverged: the loss is ${v.loss} at step ${v.step}`);
          }
          if (v.evaluation) progress.evaluations.push(v.evaluation);
        } while (Date.now() - t0 < chunk);
        if (job.stage === 'main' && head && Date.now() - job.headAt >= headEvery) {
          progress.head = head();
          job.headAt = Date.now();
        }
        scope.postMessage({ progress });
        if (!r.done) {
          later();
          return;
        }
        const result = r.value;
        if (job.stage === 'main') {
          scope.postMessage({ done: { record: seedRecord(result), line: finalLine(result), steps: result.steps } });
          if (job.reference && !job.stop) { // the run it is set against, trained the same way
            job = { stage: 'reference', it: training(job.reference, job.seed, result.steps), step: 0, stop: false };
            later();
            return;
          }
          if (job.reference) scope.postMessage({ reference: null });
        } else scope.postMessage({ reference: { record: seedRecord(result) } });
        job = null;
      } catch (err) {
        scope.postMessage({ failed: String(err && err.message ? err.message : err) });
        job = null;
      }
    }
    scope.onmessage = (event) => {
      const m = event.data;
      if (m.train) {
        const { run, seed, steps, reference } = m.train;
        job = { stage: 'main', it: training(run, seed, steps), seed, reference, step: 0, stop: false, headAt: 0 };
        later();
      } else if (m.stop && job) job.stop = true;
    };
    return scope;
  }

  /** This file's own source, with the three it stands on, as one script for a Web Worker's Blob. */
  function workerSource() {
    return [
      `const PyFormat = (${PyFormat.factory})();`,
      `const AttentionHead = (${AttentionHead.factory})(PyFormat);`,
      `const SeededRandom = (${SeededRandom.factory})();`,
      `const LabTrainer = (${LabTrainer.factory})(PyFormat, AttentionHead, SeededRandom);`,
      'LabTrainer.serve(self);',
    ].join('\n');
  }

  const LabTrainer = {
    lossAndGrads, TASKS, evaluate, training, train, seedRecord, runJson, finalLine, mean, CHECKS, checksHeld,
    verdict, needsReference, serve, workerSource,
  };
  return LabTrainer;
});
