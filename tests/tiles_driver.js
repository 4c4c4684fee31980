// Runs static/tiles.js on a batch of cases for tests/test_tiles.py, all in one process.
// stdin: {"config": <widgets.tiles_state.js_config>, "switches": <core.options.table_json>, "cases": [{X, W_Q, W_K, W_V, options, i, labels, views:
//         [[size, step], ...]}], "settings": [{"T", "actions": [action, ...]}]}
// stdout: {"cases": [[view, ...] or {"error"}], "settings": [[{size, step} after each action], ...]}
// NaN and ±Infinity travel as {"$f": ...} both ways (tests/json_batch.js).
'use strict';
const path = require('path');
const { readBatch, writeResult } = require('./json_batch.js');

const STATIC = path.join(__dirname, '..', 'static');
const AttentionHead = require(path.join(STATIC, 'attention.js'));
const Tiles = require(path.join(STATIC, 'tiles.js'));

const batch = readBatch();
const cases = (batch.cases || []).map((c) => {
  try {
    const head = AttentionHead.attend(c.X, c.W_Q, c.W_K, c.W_V, c.options, batch.switches);
    return c.views.map(([size, step]) => Tiles.viewData(batch.config, head, c.i, c.labels, size, step));
  } catch (err) {
    return { error: String(err && err.stack) };
  }
});
const settings = (batch.settings || []).map(({ T, actions }) => {
  let s = batch.config.start;
  return actions.map((action) => (s = Tiles.apply(s, action, T)));
});
writeResult({ cases, settings });
