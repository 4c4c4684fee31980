/*
 * What static/cost.js and static/saturation.js both check and say: the
 * JavaScript twin of core/cost.py as_count and sci (numbers written the
 * chapter's way) and of widgets/refusal.py (a refused change keeps the last
 * state and says why).  Written once here so
 * the two ports cannot drift apart; tests/test_explorer_parity.py holds them
 * to the Python words.
 *
 * Plain ES2020.  In a page it defines the global `InputChecks` (and needs
 * static/pyformat.js loaded first); in Node, require() returns the same object.
 */
(function (root, factory) {
  if (typeof module === 'object' && module.exports) module.exports = factory(require('./pyformat.js'));
  else root.InputChecks = factory(root.PyFormat);
})(typeof self !== 'undefined' ? self : this, function (F) {
  'use strict';

  class AttentionError extends Error {
    constructor(message) {
      super(message);
      this.name = 'AttentionError';
    }
  }

  /** core/cost.py as_count: a whole number from 1 to `largest`, or AttentionError naming `name`. */
  function asCount(name, value, largest) {
    if (typeof value !== 'number' || !Number.isInteger(value)) {
      throw new AttentionError(`${name} is ${F.repr(value)}; expected a whole number`);
    }
    if (!(value >= 1 && value <= largest)) {
      throw new AttentionError(
        `${name} is ${BigInt(value)}; expected a whole number from 1 to ${F.commas(largest)}`
      );
    }
    return value;
  }

  /** Refusing.refuse: the same inputs, and `message` says why; the change is not taken. */
  function refuse(state, message) {
    return { state: Object.assign({}, state, { message }), taken: false };
  }

  /** widgets/refusal.py needs_number: what an emptied number box says (`kept` already formatted). */
  function needsNumber(field, kept) {
    return `${field} needs a number; kept ${kept}.`;
  }

  const SUPERSCRIPT = { 0: '⁰', 1: '¹', 2: '²', 3: '³', 4: '⁴', 5: '⁵', 6: '⁶', 7: '⁷', 8: '⁸', 9: '⁹', '-': '⁻' };

  /** core/cost.py sci: `x` with `digits` significant digits, the chapter's way: 1.6384e10 → '1.6 × 10¹⁰'. */
  function sci(x, digits = 2) {
    if (x === 0) return '0';
    const [mantissa, exponent] = F.expo(Math.abs(x), digits - 1).split('e');
    const power = String(Number(exponent)).split('').map((c) => SUPERSCRIPT[c]).join('');
    return `${x < 0 ? '−' : ''}${mantissa} × 10${power}`;
  }

  return { AttentionError, asCount, refuse, needsNumber, sci };
});
