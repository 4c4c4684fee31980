// Runs static/attention.js on a batch of cases for tests/test_parity.py.
// stdin: {"switches": core.options.table_json(), "cases": [{X, W_Q, W_K, W_V, options, i?, labels?, dims?}],
//         "fmt": [[x, digits]], "browser": bool}
// stdout: {"cases": [{head, trace, view} or {error, name}], "fmt": [...], "browser": ...}
// NaN and ±Infinity travel as {"$f": ...} both ways (tests/json_batch.js).
'use strict';
const fs = require('fs');
const path = require('path');
const { readBatch, writeResult } = require('./json_batch.js');
const vm = require('vm');

// ATTENTION_JS points the driver at another copy, e.g. to check that the tests catch a planted bug.
const SOURCE = process.env.ATTENTION_JS || path.join(__dirname, '..', 'static', 'attention.js');
const AttentionHead = require(SOURCE);

function run(c) {
  try {
    const head = AttentionHead.attend(c.X, c.W_Q, c.W_K, c.W_V, c.options, batch.switches);
    if (c.i === undefined) return { head };
    const trace = AttentionHead.trace(head, c.i, c.labels);
    const view = c.dims === undefined
      ? AttentionHead.viewData(head, c.i, c.labels)
      : AttentionHead.viewData(head, c.i, c.labels, c.dims);
    return { head, trace, view };
  } catch (e) {
    return { error: String(e && e.message), name: e && e.name };
  }
}

// Load the file as a page would: no `module`, a global `self`.
function browserGlobal() {
  const sandbox = {};
  sandbox.self = sandbox;
  vm.createContext(sandbox);
  vm.runInContext(fs.readFileSync(path.join(path.dirname(SOURCE), 'pyformat.js'), 'utf8'), sandbox);
  vm.runInContext(fs.readFileSync(SOURCE, 'utf8'), sandbox);
  const api = sandbox.AttentionHead;
  return api ? Object.keys(api).sort() : null;
}

const batch = readBatch();
const result = {
  cases: (batch.cases || []).map(run),
  fmt: (batch.fmt || []).map(([x, digits]) => AttentionHead.fmt(x, digits)),
  browser: batch.browser ? browserGlobal() : null,
};
writeResult(result);
