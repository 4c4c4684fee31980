/*
 * Python's number formatting, in JavaScript: what static/cost.js and
 * static/saturation.js need to print numbers exactly as the Python side does
 * (f"{x:.2f}", f"{x:,.0f}", f"{x:.1e}", f"{x:g}", repr(x), f"{n:,}").
 *
 * Python rounds the exact binary value half to even; JavaScript's toFixed
 * rounds a tie up.  So every function here starts from the number's exact
 * decimal expansion (toExponential(99), exact to 100 significant digits; larger
 * whole numbers go through BigInt) and rounds the digits itself.
 *
 * Plain ES2020, no dependencies.  In a page it defines the global `PyFormat`;
 * in Node, require() returns the same object.
 */
(function (root, factory) {
  const api = factory();
  api.factory = factory; // its source goes into the lab trainer's Web Worker (static/train.js)
  if (typeof module === 'object' && module.exports) module.exports = api;
  else root.PyFormat = api;
})(typeof self !== 'undefined' ? self : this, function () {
  'use strict';

  // |x| as {digits, point}: value = 0.digits × 10^point, digits without leading or trailing zeros.
  function exact(x) {
    x = Math.abs(x);
    if (x === 0) return { digits: '', point: 0 };
    let text;
    if (x >= 1e21) text = BigInt(x).toString();
    else text = x.toExponential(99); // 100 significant digits: every double shown here ends before that
    let point;
    let digits;
    const e = text.indexOf('e');
    if (e >= 0) {
      const mantissa = text.slice(0, e).replace('.', '');
      point = Number(text.slice(e + 1)) + 1;
      digits = mantissa;
    } else {
      const [whole, frac = ''] = text.split('.');
      digits = whole + frac;
      point = whole.length;
    }
    const lead = digits.match(/^0*/)[0].length;
    digits = digits.slice(lead).replace(/0+$/, '');
    return { digits, point: point - lead };
  }

  // Keep the first n digits of `digits` (n may be ≤ 0), rounding half to even; returns {digits, carry}.
  function roundDigits(digits, n) {
    if (n < 0) return { digits: '', carry: false };
    const kept = digits.slice(0, n).padEnd(n, '0');
    const rest = digits.slice(n);
    let up = false;
    if (rest.length) {
      if (rest[0] > '5') up = true;
      else if (rest[0] === '5') {
        up = /[1-9]/.test(rest.slice(1)) || (n > 0 && Number(kept[n - 1]) % 2 === 1);
      }
    }
    if (!up) return { digits: kept, carry: false };
    const out = kept.split('');
    let k = n - 1;
    while (k >= 0 && out[k] === '9') out[k--] = '0';
    if (k < 0) return { digits: '1' + out.join(''), carry: true };
    out[k] = String(Number(out[k]) + 1);
    return { digits: out.join(''), carry: false };
  }

  const negative = (x) => x < 0 || Object.is(x, -0);

  function special(x) {
    if (Number.isNaN(x)) return 'nan';
    if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
    return null;
  }

  function group(whole) {
    return whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  }

  /** f"{x:.{places}f}", or f"{x:,.{places}f}" with comma = true. */
  function fixed(x, places, comma = false) {
    const s = special(x);
    if (s !== null) return s;
    // The fast way first (every cell of every heatmap is written through here on a move): toFixed rounds
    // the exact binary value as Python does, except an exact tie, which needs |x|·2^(places + 1) to be a
    // whole number (a double is m / 2^k, and a tie is an odd number / (2^(places + 1)·5^places)).
    const a = Math.abs(x);
    if (!comma && a < 1e21 && !Number.isInteger(a * 2 ** (places + 1))) {
      return (negative(x) ? '-' : '') + a.toFixed(places);
    }
    const { digits, point } = exact(x);
    // keep point + places digits: the whole part and `places` decimals
    let { digits: kept } = roundDigits(digits, point + places);
    let wholeLen = point;
    if (kept.length > point + places) wholeLen += 1; // carried into a new leading digit
    if (point + places < 0) kept = '';
    const all = kept.padStart(places + 1, '0');
    const cut = Math.max(all.length - places, 1);
    let whole = wholeLen <= 0 ? '0' : all.slice(0, cut);
    whole = whole.replace(/^0+(?=\d)/, '');
    const frac = all.slice(cut);
    if (comma) whole = group(whole);
    return (negative(x) ? '-' : '') + whole + (places > 0 ? '.' + frac : '');
  }

  function expText(exp) {
    const sign = exp < 0 ? '-' : '+';
    return 'e' + sign + String(Math.abs(exp)).padStart(2, '0');
  }

  // |x| rounded to n significant digits: {digits (n long), exp} with value = d.ddd × 10^exp.
  function significant(x, n) {
    const { digits, point } = exact(x);
    const r = roundDigits(digits, n);
    return { digits: r.digits.slice(0, n), exp: point - 1 + (r.carry ? 1 : 0) };
  }

  /** f"{x:.{places}e}". */
  function expo(x, places) {
    const s = special(x);
    if (s !== null) return s;
    const sign = negative(x) ? '-' : '';
    if (x === 0) return sign + '0' + (places > 0 ? '.' + '0'.repeat(places) : '') + 'e+00';
    const { digits, exp } = significant(x, places + 1);
    return sign + digits[0] + (places > 0 ? '.' + digits.slice(1) : '') + expText(exp);
  }

  /** f"{x:.{precision}g}" (f"{x:g}" is precision 6). */
  function general(x, precision = 6) {
    const s = special(x);
    if (s !== null) return s;
    const p = precision === 0 ? 1 : precision;
    const sign = negative(x) ? '-' : '';
    if (x === 0) return sign + '0';
    const { digits, exp } = significant(x, p);
    if (exp >= -4 && exp < p) {
      return fixed(x, p - 1 - exp).replace(/(\.\d*?)0+$/, '$1').replace(/\.$/, '');
    }
    const mantissa = (digits[0] + '.' + digits.slice(1)).replace(/0+$/, '').replace(/\.$/, '');
    return sign + mantissa + expText(exp);
  }

  /** repr(x) for a Python float: the shortest digits that read back as x. */
  function reprFloat(x) {
    const s = special(x);
    if (s !== null) return s;
    const sign = negative(x) ? '-' : '';
    if (x === 0) return sign + '0.0';
    const [m, e] = Math.abs(x).toExponential().split('e');
    const digits = m.replace('.', '');
    const exp = Number(e);
    if (exp >= -4 && exp < 16) {
      if (exp < 0) return sign + '0.' + '0'.repeat(-exp - 1) + digits;
      const whole = digits.slice(0, exp + 1).padEnd(exp + 1, '0');
      const frac = digits.slice(exp + 1);
      return sign + whole + '.' + (frac || '0');
    }
    return sign + digits[0] + (digits.length > 1 ? '.' + digits.slice(1) : '') + expText(exp);
  }

  /** A whole number with thousands separators, f"{n:,}" (exact, through BigInt). */
  function commas(n) {
    const b = BigInt(n);
    return (b < 0n ? '-' : '') + group((b < 0n ? -b : b).toString());
  }

  /**
   * repr(value) as Python shows a value that came from the page as JSON: a number JSON
   * writes without a point or an exponent (a whole number below 1e21) is a Python int,
   * any other a float; null is None; a string is quoted.
   */
  function repr(value) {
    if (value === null || value === undefined) return 'None';
    if (typeof value === 'boolean') return value ? 'True' : 'False';
    if (typeof value === 'number') return isInt(value) ? BigInt(value).toString() : reprFloat(value);
    if (typeof value === 'string') {
      if (value.includes("'") && !value.includes('"')) return '"' + value.replace(/\\/g, '\\\\') + '"';
      return "'" + value.replace(/\\/g, '\\\\').replace(/'/g, "\\'") + "'";
    }
    return String(value);
  }

  /** Would Python read this number, sent as JSON, as an int? */
  function isInt(x) {
    return Number.isInteger(x) && Math.abs(x) < 1e21;
  }

  /** str(value) / f"{value}" for a page value (ints as ints, floats as Python prints them). */
  function str(value) {
    return typeof value === 'string' ? value : repr(value);
  }

  /** html.escape(text) (quote=True), as Python's. */
  function escapeHtml(text) {
    return String(text)
      .replace(/&/g, '&amp;')
      .replace(/</g, '&lt;')
      .replace(/>/g, '&gt;')
      .replace(/"/g, '&quot;')
      .replace(/'/g, '&#x27;');
  }

  return { fixed, expo, general, reprFloat, repr, str, commas, escapeHtml, isInt, exact, roundDigits };
});
