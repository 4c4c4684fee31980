// Runs static/cost.js and static/saturation.js on a batch of cases for tests/test_explorer_parity.py.
// stdin: {"port": "cost" | "saturation" | "format", "config": {...}, "cases": [[change, change, ...], ...],
//         "normals": [[seed, start, stop], ...]}
//   a change is {"apply": {...}}, {"load": name} or {"empty": field} (a number box left empty)
// stdout: {"start": step, "cases": [[step, ...], ...], "normals": [[...], ...]}; for "format": [string, ...]
//   a step is {"taken", "inputs", "preset", "message", "view"} after that change
// NaN and ±Infinity travel as {"$f": ...} both ways (tests/json_batch.js).
'use strict';
const path = require('path');
const { readBatch, writeResult } = require('./json_batch.js');

const STATIC = path.join(__dirname, '..', 'static');

const batch = readBatch();
if (batch.port === 'format') { // static/pyformat.js alone: [[kind, x, places], ...] → strings
  const F = require(path.join(STATIC, 'pyformat.js'));
  const run = { f: (x, p) => F.fixed(x, p), fc: (x, p) => F.fixed(x, p, true), e: F.expo, g: F.general, r: F.reprFloat };
  writeResult(batch.cases.map(([kind, x, p]) => run[kind](x, p)));
} else {
  runPort();
}

function runPort() {
  const port = require(path.join(STATIC, batch.port === 'cost' ? 'cost.js' : 'saturation.js'));
  const config = batch.config;
  const view = (state) => (batch.port === 'cost' ? port.viewData(config, state.inputs) : port.viewData(config, state));

  function step(state, change) {
    let result;
    if ('apply' in change) result = port.apply(config, state, change.apply);
    else if ('load' in change) result = port.load(config, state, change.load);
    else result = { state: Object.assign({}, state, { message: port.needsNumber(state, change.empty) }), taken: false };
    return result;
  }

  function report(state, taken) {
    return { taken, inputs: state.inputs, preset: state.preset, message: state.message, view: view(state) };
  }

  const start = port.initial(config);
  const cases = (batch.cases || []).map((changes) => {
    let state = start;
    return changes.map((change) => {
      const { state: next, taken } = step(state, change);
      state = next;
      return report(state, taken);
    });
  });
  const normals = (batch.normals || []).map(([seed, a, b]) => port.normalsInto(seed, a, new Float64Array(b - a)));
  writeResult({ start: report(start, true), cases, normals });
}
