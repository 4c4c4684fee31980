// What every Node driver in tests/ shares: one JSON batch read from stdin, one JSON result written to stdout.
// JSON has no NaN or ±Infinity, so both directions carry them as {"$f": "NaN" | "Infinity" | "-Infinity"};
// tests/node_batch.py is the Python end of the same pipe.
'use strict';
const fs = require('fs');

const decode = (key, v) =>
  v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 1 && '$f' in v ? Number(v.$f) : v;

// A plain walk is much faster than a JSON.stringify replacer on ~30 MB of results.
function encode(v) {
  if (typeof v === 'number') return Number.isFinite(v) ? v : { $f: String(v) };
  if (Array.isArray(v)) return v.map(encode);
  if (ArrayBuffer.isView(v)) return Array.from(v, encode);
  if (v && typeof v === 'object') {
    const out = {};
    for (const k of Object.keys(v)) out[k] = encode(v[k]);
    return out;
  }
  return v;
}

/** The batch on stdin, with {"$f": ...} read back as numbers. */
function readBatch() {
  return JSON.parse(fs.readFileSync(0, 'utf8'), decode);
}

/** The result to stdout, with non-finite numbers as {"$f": ...}. */
function writeResult(value) {
  process.stdout.write(JSON.stringify(encode(value)));
}

module.exports = { readBatch, writeResult, encode, decode };
