/*
 * What static/cost.js and static/saturation.js both check and say: the
 * JavaScript twin of core/cost.py as_count and of widgets/refusal.py (a
 * refused change keeps the last state and says why).  Written once here so
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

  return { AttentionError, asCount, refuse, needsNumber };
});
