// Runs static/a11y.js's table functions on a batch of figure sources for tests/test_a11y.py.
// stdin: {tables: [{cells: {name: [columns, outline | null]}, blend: [values, output, hull, axes]}],
//         names: [[fixed, labels, C, d]], bars: [source columns],
//         series: [[source columns, [[column, header], ...]]]}
// stdout: {tables: [{name: table}] (the blend's under "blend"), names: [{model: name}], bars: [table], series: [table]}
// NaN comes as {"$f": "NaN"}, (tests/json_batch.js).
'use strict';
const path = require('path');
const { readBatch } = require('./json_batch.js');
const A11y = require(path.join(__dirname, '..', 'static', 'a11y.js'));

const batch = readBatch();
const out = {
  tables: batch.tables.map((c) => {
    const tables = {};
    for (const [name, [cells, outline]] of Object.entries(c.cells)) tables[name] = A11y.cellsTable(cells, outline);
    tables.blend = A11y.blendTable(...c.blend);
    return tables;
  }),
  names: batch.names.map((args) => A11y.accessibleNames(...args)),
  bars: (batch.bars || []).map((bars) => A11y.barsTable(bars)),
  series: (batch.series || []).map(([data, columns]) => A11y.seriesTable(data, columns)),
};
process.stdout.write(JSON.stringify(out));
