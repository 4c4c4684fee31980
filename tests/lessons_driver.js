// Runs static/lessons.js for tests/test_lessons.py: the walk on given heads, every question of the bank with
// every prediction, and "which key?" on given heads, all in one process.
// stdin: {"config": <widgets.logic_config>, "walks": [{X, W_Q, W_K, W_V, options, labels}],
//         "predictions": [prediction, ...], "heads": [{X, W_Q, W_K, W_V, options, labels, i}]}
// stdout: {"walks": [[[step for k = 1..6] for each query]], "bank": {name: {posed, said: [...]}},
//          "top": [{posed, said: [...]}]}
'use strict';
const path = require('path');
const { readBatch, writeResult } = require('./json_batch.js');

const AttentionHead = require(path.join(__dirname, '..', 'static', 'attention.js'));
const HeadLessons = require(path.join(__dirname, '..', 'static', 'lessons.js'));

const batch = readBatch();
const bank = HeadLessons.make(batch.config);
const headOf = (c) => AttentionHead.attend(c.X, c.W_Q, c.W_K, c.W_V, c.options, batch.config.switches);

function told(posed) { // the Posed as Python's posed_as_dict writes it
  const keep = ['name', 'title', 'kind', 'labels', 'query', 'key', 'context', 'change', 'prompt', 'choices',
    'estimate', 'right', 'value'];
  return Object.fromEntries(keep.map((k) => [k, posed[k]]));
}

function said(posed) {
  return batch.predictions.concat(posed.choices.map((_, k) => k)).map((p) => ({
    check: bank.check(posed, p), judge: bank.judge(posed, p), feedback: bank.feedback(posed, p),
  }));
}

const out = {
  walks: batch.walks.map((c) => {
    const head = headOf(c);
    return c.labels.map((_, i) => [1, 2, 3, 4, 5, 6].map((k) => HeadLessons.walkStep(head, i, c.labels, k)));
  }),
  bank: Object.fromEntries(bank.names().map((name) => {
    const posed = bank.pose(name);
    return [name, { posed: told(posed), said: said(posed) }];
  })),
  top: batch.heads.map((c) => {
    const posed = bank.poseTopKey(headOf(c), c.labels, c.i);
    return { posed: told(posed), said: said(posed) };
  }),
};
writeResult(out);
