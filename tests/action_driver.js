// Replays user actions through static/explorer.js for tests/test_actions.py, all sequences in one process.
// stdin: {"config": <widgets.logic_config>, "sequences": [[action, ...], ...]}
// stdout: [[{"state": ..., "view": ...} after each action], ...]
// JSON has no NaN or ±Infinity, so both directions carry them as {"$f": "NaN" | "Infinity" | "-Infinity"}.
'use strict';
const fs = require('fs');
const path = require('path');

const SOURCE = process.env.EXPLORER_JS || path.join(__dirname, '..', 'static', 'explorer.js');
const HeadLogic = require(SOURCE);

const decode = (key, v) =>
  v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 1 && '$f' in v ? Number(v.$f) : v;
function encode(v) {
  if (typeof v === 'number') return Number.isFinite(v) ? v : { $f: String(v) };
  if (Array.isArray(v)) return v.map(encode);
  if (v && typeof v === 'object') {
    const out = {};
    for (const k of Object.keys(v)) out[k] = encode(v[k]);
    return out;
  }
  return v;
}

const batch = JSON.parse(fs.readFileSync(0, 'utf8'), decode);
const logic = HeadLogic.make(batch.config);
const out = batch.sequences.map((actions) => {
  let state = logic.initial();
  let before = null;
  return actions.map((action) => {
    try {
      state = logic.apply(state, action);
      // A refused action leaves every input as it was: its view is the one before (sent as null).
      const inputs = JSON.stringify(Object.assign({}, state, { message: '' }));
      const view = inputs === before ? null : logic.render(state);
      before = inputs;
      return { state, view };
    } catch (err) {
      return { error: String(err && err.stack) };
    }
  });
});
process.stdout.write(JSON.stringify(encode(out)));
