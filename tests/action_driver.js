// Replays user actions through static/explorer.js for tests/test_actions.py, all sequences in one process.
// stdin: {"config": <widgets.logic_config>, "sequences": [[action, ...], ...]}
// stdout: [[{"state": ..., "view": ..., "link": ...} after each action], ...]
// NaN and ±Infinity travel as {"$f": ...} both ways (tests/json_batch.js).
'use strict';
const path = require('path');
const { readBatch, writeResult } = require('./json_batch.js');

const SOURCE = process.env.EXPLORER_JS || path.join(__dirname, '..', 'static', 'explorer.js');
const HeadLogic = require(SOURCE);

const batch = readBatch();
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
      return { state, view, link: logic.encodeLink(state) };
    } catch (err) {
      return { error: String(err && err.stack) };
    }
  });
});
writeResult(out);
