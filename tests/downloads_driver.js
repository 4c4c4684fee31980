// The page's downloads (static/explorer.js asJson / asCsv) for tests/test_downloads.py, all heads in one
// process.  stdin: {"config": <widgets.logic_config>, "states": [{tokens, X, W_Q, W_K, W_V, <switches>,
// query, dims}]}; stdout: [{"json": text, "csv": text} or {"error": text}], one per state.
// NaN and ±Infinity travel as {"$f": ...} both ways (tests/json_batch.js).
'use strict';
const path = require('path');
const { readBatch, writeResult } = require('./json_batch.js');

const SOURCE = process.env.EXPLORER_JS || path.join(__dirname, '..', 'static', 'explorer.js');
const HeadLogic = require(SOURCE);

const batch = readBatch();
const logic = HeadLogic.make(batch.config);
writeResult(batch.states.map((given) => {
  const state = Object.assign({ preset: '', message: '' }, batch.config.start, given);
  try {
    return { json: logic.asJson(state), csv: logic.asCsv(state) };
  } catch (err) {
    return { error: String(err && err.stack) };
  }
}));
