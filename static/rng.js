/*
 * core/rng.py in JavaScript: mulberry32's uniforms, taken in order (Draws), and a seed of its own for
 * each use of a run's seed (seedFor). The "Why ÷√d" explorer (static/saturation.js) and the lab's
 * trainer (static/train.js) draw from here, so a seed gives the numbers Python gives, to the last bit
 * (tests/test_train_parity.py, tests/test_explorer_parity.py).
 *
 * In a page it defines the global `SeededRandom`; in Node, require() returns the same object.
 */
(function (root, factory) {
  const api = factory();
  api.factory = factory; // its source goes into the trainer's Web Worker (static/train.js)
  if (typeof module === 'object' && module.exports) module.exports = api;
  else root.SeededRandom = api;
})(typeof self !== 'undefined' ? self : this, function () {
  'use strict';

  const GOLDEN = 0x6d2b79f5; // mulberry32's step
  const TWO_32 = 4294967296;

  /** The k-th 32-bit output of mulberry32 started from `seed` (its state after k + 1 steps, mixed). */
  function mulberry32(seed, k) {
    const a = (seed + Math.imul(k + 1, GOLDEN)) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t = (t + Math.imul(t ^ (t >>> 7), t | 61)) ^ t;
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** The k-th uniform number in (0, 1): never 0, so its logarithm is finite. */
  function uniform(seed, k) {
    return (mulberry32(seed, k) + 0.5) / TWO_32;
  }

  /** Uniforms taken one after another from a seed's sequence, arrays filled row by row (core.rng.Draws). */
  class Draws {
    constructor(seed) {
      this.seed = ((seed % TWO_32) + TWO_32) % TWO_32;
      this.taken = 0;
    }

    /** The next n numbers in (0, 1), as a Float64Array. */
    uniform(n) {
      const out = new Float64Array(n);
      for (let k = 0; k < n; k++) out[k] = uniform(this.seed, this.taken + k);
      this.taken += n;
      return out;
    }

    /** The next n whole numbers in 0 … m − 1 (each ⌊u · m⌋), as an Int32Array. */
    below(m, n) {
      const u = this.uniform(n);
      const out = new Int32Array(n);
      for (let k = 0; k < n; k++) out[k] = Math.floor(u[k] * m);
      return out;
    }
  }

  /** mulberry32's output number `purpose` from `seed`: a stream of its own for each use of a seed. */
  function seedFor(seed, purpose) {
    return mulberry32(((seed % TWO_32) + TWO_32) % TWO_32, purpose);
  }

  return { mulberry32, uniform, Draws, seedFor, TWO_32 };
});
