// Replays user actions through static/explorer.js for tests/test_actions.py, all sequences in one process.
// stdin: {"config": <widgets.logic_config>, "sequences": [[action, ...], ...], "follow": bool}
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
      const last = state;
      state = logic.apply(state, action);
      // A refused action leaves every input as it was: its view is the one before (sent as null).
      const inputs = JSON.stringify(Object.assign({}, state, { message: '' }));
      const view = inputs === before ? null : logic.render(state);
      before = inputs;
      const step = { state, view, link: logic.encodeLink(state) };
      // A served page reading its own controls (sliderMove) sees a move as apply() does: checked for the
      // actions of those controls (a slider, the query, a switch; the rest come as a new published state,
      // which ends a move), where the action changed an input (a control holding a value sends no event).
      const inputsOf = (s) => JSON.stringify(Object.assign({}, s, { moved: null, message: '', preset: '' }));
      const own = ['x', 'query', 'option'].includes(action.do);
      if (batch.follow && own && inputsOf(last) !== inputsOf(state)) {
        const read = logic.sliderMove(last, Object.assign({}, state, { moved: null }));
        step.follow = JSON.stringify(read.moved) === JSON.stringify(state.moved) &&
          JSON.stringify(logic.render(read)) === JSON.stringify(logic.render(state));
      }
      return step;
    } catch (err) {
      return { error: String(err && err.stack) };
    }
  });
});
writeResult(out);
