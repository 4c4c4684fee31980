// Runs static/train.js on a batch of jobs for tests/test_train_parity.py.
// stdin: {"jobs": [job]}, each one of
//   {"train": run, "seed": s, "steps": n}   -> {losses, evals, params, record, line}
//   {"grads": {shape, switches, params, tokens, targets}, "eps": e}
//                                           -> {loss, grads, worst} (worst: the largest relative error of the
//                                              backward against central differences, over the parameters)
//   {"checks": name, "record": r, "ref": r or null, "run": run}  -> [bool, ...]
//   {"student": form, "lab": {runs, order, switches}}  -> {command, line}: static/lab_train.js's run from the
//                                              lab's form values, trained; its command line and last line
//   {"saved": form, "lab": lab, "damage": kind}  -> {line} or {error}: that run saved as a file, damaged as
//                                              `kind` says (DAMAGE), and read back by static/lab_train.js
// stdout: {"results": [...]}; NaN and ±Infinity travel as {"$f": ...} (tests/json_batch.js).
'use strict';
const path = require('path');
const { readBatch, writeResult } = require('./json_batch.js');

const LabTrainer = require(path.join(__dirname, '..', 'static', 'train.js'));
const LabTrainPanel = require(path.join(__dirname, '..', 'static', 'lab_train.js'));

const flat = (o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Array.from(v)]));

function trainJob(job) {
  const result = LabTrainer.train(job.train, job.seed, job.steps);
  return {
    losses: result.losses,
    evals: result.evals,
    params: flat(result.params),
    record: LabTrainer.seedRecord(result),
    line: LabTrainer.finalLine(result),
  };
}

function norm(a) {
  let s = 0;
  for (const v of a) s += v * v;
  return Math.sqrt(s);
}

/** The backward against central differences of the loss, parameter by parameter (as tests/test_train.py
 * checks core/train.py): the largest ‖g − fd‖ / (‖g‖ + ‖fd‖) over the parameters. */
function gradsJob(job) {
  const { shape, switches, tokens, targets } = job.grads;
  const params = Object.fromEntries(Object.entries(job.grads.params).map(([k, v]) => [k, Float64Array.from(v)]));
  const B = tokens.length / shape.T;
  const lossOf = (p) => LabTrainer.lossAndGrads(p, Int32Array.from(tokens), Int32Array.from(targets), B, shape.T, switches, shape);
  const [loss, g] = lossOf(params);
  let worst = 0;
  for (const [name, w] of Object.entries(params)) {
    const fd = new Float64Array(w.length);
    for (let i = 0; i < w.length; i++) {
      const old = w[i];
      w[i] = old + job.eps;
      const up = lossOf(params)[0];
      w[i] = old - job.eps;
      const down = lossOf(params)[0];
      w[i] = old;
      fd[i] = (up - down) / (2 * job.eps);
    }
    const scale = norm(g[name]) + norm(fd);
    if (scale > 0) worst = Math.max(worst, norm(g[name].map((v, i) => v - fd[i])) / scale);
  }
  return { loss, grads: flat(g), worst };
}

// What can be wrong with a file dropped on the lab.
const DAMAGE = {
  none: (text) => text,
  'not JSON': (text) => text.slice(0, 100),
  'another lab': (text) => JSON.stringify(Object.assign(JSON.parse(text), { from: 'a-run-we-never-shipped' })),
  'a bad switch': (text) => { const o = JSON.parse(text); o.switches.temperature = 99; return JSON.stringify(o); },
  'a matrix cut short': (text) => { const o = JSON.parse(text); const m = o.seeds[0].snapshots[0].W_Q; m.f16 = m.f16.slice(8); return JSON.stringify(o); },
  'a huge matrix': (text) => { const o = JSON.parse(text); o.seeds[0].snapshots[0].W_Q.shape = [1e6, 1e6]; return JSON.stringify(o); },
  'no snapshots': (text) => { const o = JSON.parse(text); o.seeds[0].snapshots = []; return JSON.stringify(o); },
};

function savedJob(job) {
  const made = LabTrainPanel.studentRun(job.lab, job.saved);
  const result = LabTrainer.train(made.run, made.seed, made.steps);
  const saved = LabTrainPanel.savedRun(made, LabTrainer.seedRecord(result), LabTrainer.finalLine(result), null);
  try {
    return { line: LabTrainPanel.readSaved(job.lab, DAMAGE[job.damage](JSON.stringify(saved))).line };
  } catch (err) {
    return { error: err.message };
  }
}

const batch = readBatch();
writeResult({
  results: batch.jobs.map((job) => {
    if (job.train) return trainJob(job);
    if (job.grads) return gradsJob(job);
    if (job.saved) return savedJob(job);
    if (job.student) {
      const made = LabTrainPanel.studentRun(job.lab, job.student);
      return { command: made.command, line: LabTrainer.finalLine(LabTrainer.train(made.run, made.seed, made.steps)) };
    }
    return LabTrainer.checksHeld(job.checks, job.record, job.ref, job.run);
  }),
});
