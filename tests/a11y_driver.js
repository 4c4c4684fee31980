// Runs static/a11y.js's table functions on a batch of figure sources for tests/test_a11y.py.
// stdin: {tables: [{cells: {name: [columns, outline | null]}, blend: [values, output, hull, axes]}],
//         names: [[fixed, labels, C, d]], bars: [source columns]}
// stdout: {tables: [{name: table}] (the blend's under "blend"), names: [{model: name}], bars: [table]}
// NaN comes as {"$f": "NaN"}, as in tests/parity_driver.js.
'use strict';
const fs = require('fs');
const path = require('path');
const A11y = require(path.join(__dirname, '..', 'static', 'a11y.js'));

const decode = (key, v) =>
  v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 1 && '$f' in v ? Number(v.$f) : v;
const batch = JSON.parse(fs.readFileSync(0, 'utf8'), decode);
const out = {
  tables: batch.tables.map((c) => {
    const tables = {};
    for (const [name, [cells, outline]] of Object.entries(c.cells)) tables[name] = A11y.cellsTable(cells, outline);
    tables.blend = A11y.blendTable(...c.blend);
    return tables;
  }),
  names: batch.names.map((args) => A11y.accessibleNames(...args)),
  bars: (batch.bars || []).map((bars) => A11y.barsTable(bars)),
};
process.stdout.write(JSON.stringify(out));
