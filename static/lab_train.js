/*
 * "Train it yourself", in the training lab of both pages: a student trains a shipped run's model again with
 * their own seed, steps and switches, in a Web Worker built from static/train.js's own source (no file, no
 * network: it works offline in the export), watches its loss and its head's pattern as it trains, stops it
 * when they like, and gets the command line's last line and the shipped run's checks for their run, beside
 * the shipped run. A finished run joins the lab's run picker, can be saved as a file in the lab's format,
 * and a saved file dropped on the lab (or opened) comes back with the same numbers.
 *
 * The pure part (what a student's run is, its command line, its checks, reading a saved file) is tested in
 * Node (tests/test_train_parity.py); `attach` is the DOM. In a page it defines the global `LabTrainPanel`.
 */
(function (root, factory) {
  const node = typeof module === 'object' && module.exports;
  const api = node
    ? factory(require('./lab.js'), require('./train.js'), require('./attention.js'))
    : factory(root.TrainingLab, root.LabTrainer, root.AttentionHead);
  if (node) module.exports = api;
  else root.LabTrainPanel = api;
})(typeof self !== 'undefined' ? self : this, function (TrainingLab, LabTrainer, AttentionHead) {
  'use strict';

  const { el } = TrainingLab;
  const { PyFormat } = AttentionHead;
  const esc = PyFormat.escapeHtml;
  const LARGEST_SEED = 4294967295; // as the command line (core/lab/cli.py)
  const MOST_STEPS = 20000; // the largest model's 20,000 steps take a few minutes here
  const MOST_BYTES = 5e6; // a saved run is ~20 kB; a larger file is not one
  const MOST_ENTRIES = 64 * 64; // of a matrix in a saved run (the lab's largest is 24 × 24)
  const DRAW_EVERY = 100; // ms between redraws while training: the page's own moves come first
  const VERDICTS = {
    reproduced: 'The claim held in your run.',
    partly: 'The claim held in part in your run.',
    'not reproduced': 'The claim did not hold in your run.',
  };

  // --- what a student's run is (pure) ---------------------------------------------------------------

  /** The tasks, each with the shipped run it opens on (the first in the lab's order that trains it). */
  function taskRuns(lab) {
    const out = {};
    lab.order.forEach((name) => { if (!(lab.runs[name].task in out)) out[lab.runs[name].task] = name; });
    return out;
  }

  function wholeNumber(text, name, low, high) {
    const x = Number(String(text).trim());
    if (String(text).trim() === '' || !Number.isInteger(x) || x < low || x > high) {
      throw new AttentionHead.AttentionError(`${name} must be a whole number from ${low} to ${high}`);
    }
    return x;
  }

  /** The command that trains the same run in numpy, and the name its last line starts with: the run it
   * started from when the switches changed can be said as flags (each flag turns a switch away from the
   * explorer's default), else a shipped run of the same model that can. */
  function commandFor(lab, from, switches, seed, steps) {
    const own = lab.runs[from];
    const same = (r) => r.task === own.task && r.optimiser === own.optimiser && r.lr === own.lr &&
      r.batch === own.batch && JSON.stringify(r.shape) === JSON.stringify(own.shape);
    const sayable = (r) => lab.switches.every((s) => s.kind !== 'toggle' ||
      switches[s.name] === r.switches[s.name] || switches[s.name] !== s.default);
    const base = [from, ...lab.order].find((n) => same(lab.runs[n]) && sayable(lab.runs[n]));
    const words = ['python -m core.train', base, '--seed', String(seed)];
    if (steps !== lab.runs[base].steps) words.push('--steps', String(steps));
    lab.switches.forEach((s) => {
      const v = switches[s.name];
      if (v === lab.runs[base].switches[s.name]) return;
      if (s.kind === 'toggle') words.push(s.cli_flag);
      else words.push(s.cli_flag, s.kind === 'choice' ? v : PyFormat.reprFloat(v));
    });
    return { base, text: words.join(' ') };
  }

  /**
   * A student's run from the form's values: {from (the shipped run whose model, optimiser and checks it
   * takes), seed, steps, switches: {name: value as typed}}. Throws AttentionError with the message to show.
   * Returns {run (as the lab's data files describe a run: what the trainer takes), from, seed, steps,
   * command}.
   */
  function studentRun(lab, form) {
    const own = lab.runs[form.from];
    const seed = wholeNumber(form.seed, 'the seed', 0, LARGEST_SEED);
    const steps = wholeNumber(form.steps, 'the number of steps', 1, MOST_STEPS);
    const switches = {};
    lab.switches.forEach((s) => {
      const v = form.switches[s.name];
      switches[s.name] = AttentionHead.checkOption(lab.switches, s.name, s.kind === 'number' ? AttentionHead.asFiniteNumber(s.name, v) : v);
    });
    const command = commandFor(lab, form.from, switches, seed, steps);
    const run = Object.assign({}, own, { name: command.base, switches, steps, compare: form.from, seeds: [] });
    return { run, from: form.from, seed, steps, command: command.text };
  }

  /** What the checks that compare need: the same seed of the run the shipped run is set against, shipped
   * ({record}) when this run is trained as it was, or to be trained beside it ({run}); null if none. */
  function referenceFor(lab, from, seed, steps) {
    const name = lab.runs[from].compare;
    if (!LabTrainer.needsReference(from) || !name) return null;
    const ref = lab.runs[name];
    const shipped = ref.seeds.find((r) => r.seed === seed);
    return shipped && steps === ref.steps ? { record: shipped } : { run: Object.assign({}, ref, { seeds: [] }) };
  }

  /** The shipped run's checks for a student's record: [{name, says, claim, held (true, false or null:
   * not known, its reference not trained)}] and the verdict ("" while a check is not known). */
  function judge(lab, from, record, refRecord, run) {
    const shipped = lab.checks[from];
    if (!shipped) return { checks: [], verdict: '' };
    const tests = LabTrainer.CHECKS[from];
    const checks = shipped.checks.map((c, n) => ({
      name: c.name, says: c.says, claim: c.claim, shipped: c.held,
      held: tests[n].compares && !refRecord ? null : Boolean(tests[n](record, refRecord, run)),
    }));
    const known = checks.filter((c) => c.claim).every((c) => c.held !== null);
    const verdict = known ? LabTrainer.verdict(checks.map((c) => ({ claim: c.claim, held: [c.held] }))) : '';
    return { checks, verdict };
  }

  /** The switches a run sets away from the run it started from, as words. */
  function changes(lab, from, switches) {
    return lab.switches.filter((s) => switches[s.name] !== lab.runs[from].switches[s.name]).map((s) =>
      `${s.label}: ${s.kind === 'toggle' ? (switches[s.name] ? 'on' : 'off') : String(switches[s.name])}`);
  }

  /** A student's run as the lab draws it (its text in the picker's place: lab.described, lab.at_seed). */
  function describe(lab, saved, judged) {
    const { from, seeds } = saved, record = seeds[0], changed = changes(lab, from, saved.switches);
    const held = (c) => (c.held === null ? 'not known (the run it is set against was not trained)' : c.held ? 'yes ✓' : 'no ✗');
    const checks = judged.checks.map((c) => `<li>${esc(c.says)}: ${held(c)}; the shipped run: at ` +
      `${c.shipped.filter(Boolean).length} of ${c.shipped.length} seeds${c.claim ? '' : " (not the chapter's claim)"}</li>`).join('');
    return `<p class="claim"><b>Your run:</b> the model of the run '${esc(from)}' (task ${esc(saved.task)}), seed ` +
      `${record.seed}, ${saved.steps} steps${changed.length ? '; changed: ' + esc(changed.join('; ')) : ''}.</p>` +
      `<p class="claim"><b>The claim:</b> ${esc(saved.claim)}</p>` +
      (judged.verdict ? `<p class="verdict"><b>${esc(VERDICTS[judged.verdict])}</b></p>` : '') +
      (checks ? `<ul class="verdicts">${checks}</ul>` : '') +
      `<p class="lab-train-line">The command line prints:<br><code>${esc(saved.line)}</code><br>` +
      `and trains the same run in numpy with <code>${esc(saved.command)}</code>.</p>`;
  }

  /** The file a student saves: the run in the lab's format (core/lab/store.py run_json, one seed), with the
   * run it started from, its command and its last line. */
  function savedRun(trained, record, line, reference) {
    const saved = LabTrainer.runJson(trained.run, [record], record.held_out.step[record.held_out.step.length - 1]);
    return Object.assign(saved, { from: trained.from, command: trained.command, line, reference: reference || null });
  }

  function need(ok, what) {
    if (!ok) throw new Error(`this file is not a run saved by the lab: ${what}`);
  }

  /** A saved run read back from a file's text, checked enough to be drawn; Error with the message to show. */
  function readSaved(lab, text) {
    need(text.length <= MOST_BYTES, 'it is larger than a saved run can be');
    let saved;
    try {
      saved = JSON.parse(text);
    } catch (err) {
      need(false, 'it is not JSON');
    }
    need(saved && typeof saved === 'object', 'it holds no run');
    need(lab.runs[saved.from] !== undefined, `it names no run of this lab to compare with ('from': ${JSON.stringify(saved.from)})`);
    need(typeof saved.line === 'string' && typeof saved.command === 'string', 'its last line or command is missing');
    const own = lab.runs[saved.from];
    need(JSON.stringify(saved.shape) === JSON.stringify(own.shape) && saved.task === own.task, `its model is not the run '${saved.from}''s`);
    lab.switches.forEach((s) => {
      try {
        AttentionHead.checkOption(lab.switches, s.name, saved.switches && saved.switches[s.name]);
      } catch (err) {
        need(false, err.message);
      }
    });
    need(Array.isArray(saved.seeds) && saved.seeds.length === 1, 'it should hold one seed');
    const r = saved.seeds[0];
    need(r && Array.isArray(r.probe) && r.curve && Array.isArray(r.curve.loss) && r.held_out && r.start && r.end &&
      Array.isArray(r.snapshots) && r.snapshots.length > 0, 'its record is incomplete');
    r.snapshots.forEach((snap) => {
      const mats = [...Object.values(snap.maps || {}), ...['X', 'W_Q', 'W_K', 'W_V'].filter((k) => snap[k]).map((k) => snap[k])];
      // a matrix's halves fill its shape exactly (base64: 4 characters for each 3 bytes), and it is no
      // larger than a lab's matrix can be
      const whole = (m) => m && Array.isArray(m.shape) && m.shape.length === 2 && typeof m.f16 === 'string' &&
        m.shape.every((n) => Number.isInteger(n) && n > 0) && m.shape[0] * m.shape[1] <= MOST_ENTRIES &&
        m.f16.length === 4 * Math.ceil((2 * m.shape[0] * m.shape[1]) / 3);
      need(mats.every(whole), 'a snapshot is damaged');
      try {
        mats.forEach(TrainingLab.unf16);
      } catch (err) {
        need(false, 'a snapshot is damaged');
      }
    });
    return saved;
  }

  /** The shipped run's record to draw beside a student's: the same seed, else its first. */
  function shippedBeside(lab, from, seed) {
    const run = lab.runs[from];
    const s = Math.max(0, run.seeds.findIndex((r) => r.seed === seed));
    return { run, s, record: run.seeds[s] };
  }

  // --- the panel (DOM) -------------------------------------------------------------------------------

  let workerUrl = null;

  /** A worker running static/train.js's `serve`, from a Blob of its own source; or, where a page may not
   * start one, the same loop in the page (it yields between chunks there too). */
  function startWorker() {
    try {
      workerUrl = workerUrl || URL.createObjectURL(new Blob([LabTrainer.workerSource()], { type: 'text/javascript' }));
      return new Worker(workerUrl);
    } catch (err) {
      const worker = { postMessage: (m) => setTimeout(() => scope.onmessage({ data: m })), terminate() {} };
      const scope = { postMessage: (m) => worker.onmessage && worker.onmessage({ data: m }) };
      LabTrainer.serve(scope);
      worker.inPage = true;
      return worker;
    }
  }

  /** Put the panel into the lab that TrainingLab.mount made (`view`), drawn from `lab` (its data). */
  function attach(view, lab) {
    const tasks = taskRuns(lab);
    const form = { from: lab.order[0] };
    const input = (attrs) => el('input', attrs);
    const taskSelect = el('select', { class: 'lab-train-task' }, Object.keys(tasks).map((t) => el('option', { value: t, text: t })));
    const fromText = el('span', { class: 'lab-train-from' });
    const seedInput = input({ class: 'lab-train-seed', inputmode: 'numeric', size: '10' });
    const stepsInput = input({ class: 'lab-train-steps', inputmode: 'numeric', size: '6' });
    const switchInputs = {};
    const switchLabels = lab.switches.map((s) => {
      let control;
      if (s.kind === 'toggle') control = input({ type: 'checkbox' });
      else if (s.kind === 'choice') control = el('select', {}, s.choices.map((c, n) => el('option', { value: c, text: s.choice_labels[n] })));
      else control = input({ inputmode: 'decimal', size: '5' });
      control.dataset.switch = s.name;
      switchInputs[s.name] = control;
      return s.kind === 'toggle' ? el('label', {}, [control, document.createTextNode(' ' + s.label)])
        : el('label', {}, [document.createTextNode(s.label + ' '), control]);
    });
    const button = (text, cls) => el('button', { type: 'button', class: cls, text });
    const trainButton = button('Train', 'lab-train-go'), stopButton = button('Stop', 'lab-train-stop');
    const saveButton = button('Save this run', 'lab-train-save');
    const fileInput = input({ type: 'file', accept: '.json,application/json', class: 'lab-train-open', 'aria-label': 'Open a saved run' });
    // what changed (started, stopped, done, refused) is said once; how far a run is, shown, not said
    const status = el('p', { class: 'lab-train-status', role: 'status', 'aria-live': 'polite' });
    const bar = el('progress', { class: 'lab-train-bar', max: '1', value: '0', 'aria-label': 'Training progress' });
    const progressText = el('span', { class: 'lab-train-progress' });
    const progress = el('p', { class: 'lab-train-progress-line', hidden: '' }, [bar, progressText]);
    const result = el('div', { class: 'lab-train-result' });
    const mine = el('table'), theirs = el('table');
    const mineTitle = el('h3', { id: 'lab-train-mine-title' }), theirsTitle = el('h3', { id: 'lab-train-theirs-title' });
    mine.setAttribute('aria-labelledby', mineTitle.id);
    theirs.setAttribute('aria-labelledby', theirsTitle.id);
    const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
    svg.setAttribute('class', 'lab-curves lab-train-curves');
    const chartBox = el('div', { class: 'lab-figure lab-loss' }, [el('h3', { text: 'Your run\'s loss, beside the shipped run\'s' }), svg]);
    const figures = el('div', { class: 'lab-train-figures', hidden: '' }, [
      el('div', { class: 'lab-row' }, [
        el('div', { class: 'lab-figure' }, [mineTitle, el('div', { class: 'lab-scroll' }, [mine])]),
        el('div', { class: 'lab-figure' }, [theirsTitle, el('div', { class: 'lab-scroll' }, [theirs])])]),
      chartBox]);
    const details = el('details', { class: 'lab-train' }, [
      el('summary', { text: 'Train it yourself: this model with your seed, steps and switches, in your browser' }),
      el('p', { class: 'lab-train-help', text: 'Training runs in the background of this page (the explorer above keeps ' +
        'working) and gives the same numbers as the numpy trainer for the same seed. Drop a saved run anywhere ' +
        'on the lab to open it again.' }),
      el('div', { class: 'lab-controls lab-train-form' }, [
        el('label', {}, [document.createTextNode('Task '), taskSelect]), fromText,
        el('label', {}, [document.createTextNode('Seed '), seedInput]),
        el('label', {}, [document.createTextNode('Steps '), stepsInput])]),
      el('div', { class: 'lab-controls lab-train-switches' }, switchLabels),
      el('div', { class: 'lab-controls' }, [trainButton, stopButton, saveButton,
        el('label', {}, [document.createTextNode('Open a saved run '), fileInput])]),
      status, progress, result, figures]);
    view.container.insertBefore(details, view.container.children[1] || null);

    let job = null; // the run training now: {trained, worker, losses, evaluations, head, ...}
    let last = null; // the last finished or opened run: {saved, judged}
    let runs = 0;
    let chartWidth = 0;
    stopButton.disabled = true;
    saveButton.disabled = true;

    function setForm(from, switches, steps) {
      form.from = from;
      taskSelect.value = lab.runs[from].task;
      fromText.textContent = `model, optimiser and checks of the run '${from}'`;
      stepsInput.value = String(steps);
      lab.switches.forEach((s) => {
        const c = switchInputs[s.name], v = switches[s.name];
        if (s.kind === 'toggle') c.checked = v;
        else c.value = s.kind === 'choice' ? v : PyFormat.reprFloat(v);
      });
    }
    function formValues() {
      const switches = {};
      lab.switches.forEach((s) => {
        const c = switchInputs[s.name];
        switches[s.name] = s.kind === 'toggle' ? c.checked : c.value;
      });
      return { from: form.from, seed: seedInput.value, steps: stepsInput.value, switches };
    }
    function followPicker() {
      const run = lab.runs[view.state.run], saved = run.from ? run : null; // a student's run carries `from`
      setForm(saved ? saved.from : view.state.run, run.switches, run.steps);
      seedInput.value = String(run.seeds[Math.min(view.state.s, run.seeds.length - 1)].seed);
    }
    followPicker();
    view.runSelect.addEventListener('change', () => { if (!job) followPicker(); });
    view.seedSelect.addEventListener('change', () => { if (!job) followPicker(); });
    taskSelect.addEventListener('change', () => { const from = tasks[taskSelect.value]; setForm(from, lab.runs[from].switches, lab.runs[from].steps); });

    if (typeof ResizeObserver !== 'undefined') {
      new ResizeObserver((entries) => {
        const width = Math.round(entries[entries.length - 1].contentRect.width);
        if (width !== chartWidth) { chartWidth = width; draw(); }
      }).observe(chartBox);
    }

    /** The panel's figures: the running job's numbers as they come, or a finished run's record (so a run
     * reopened from its file is drawn as it was when it finished). */
    function draw() {
      const now = job || last;
      if (!now) return;
      figures.hidden = false;
      const { from, seed, steps } = now.trained;
      const beside = shippedBeside(lab, from, seed), layer = lab.runs[from].shown_layer;
      const hide = (T, c) => Array.from({ length: T }, (_, i) => Array.from({ length: T }, (_, j) => c && j > i));
      const corner = 'query \\ key';
      let lines;
      if (now.saved) { // finished: the lab's own view of its record
        const record = now.saved.seeds[0], k = record.snapshots.length - 1, snap = record.snapshots[k];
        const view = TrainingLab.labViewData(now.saved, 0, k, 0, lab.switches);
        mineTitle.textContent = `Your head's weights on your probe (step ${snap.step}, trained)`;
        TrainingLab.heatmap(mine, view.weights, view.labels, view.labels, { hidden: view.future, colour: TrainingLab.blue, name: 'your weights', corner });
        lines = TrainingLab.curves(now.saved, 0, lab.runs);
      } else {
        if (now.head) {
          const W = now.head.maps[layer], labels = TrainingLab.tokenLabels(now.head.probe);
          mineTitle.textContent = `Your head's weights on your probe (step ${now.headStep}, training)`;
          TrainingLab.heatmap(mine, W, labels, labels, { hidden: hide(W.length, now.trained.run.switches.causal), colour: TrainingLab.blue, name: 'your weights', corner });
        }
        // as the record will hold it: the loss averaged over windows of `every` steps, each drawn at its end
        const every = Math.max(1, Math.ceil(steps / 100)), train = { x: [], y: [] };
        for (let i = 0; i + every <= now.losses.length; i += every) {
          train.x.push(i + every);
          train.y.push(LabTrainer.mean(now.losses.slice(i, i + every)));
        }
        const empty = { seed, curve: { every, loss: [] }, held_out: { step: [], loss: [] } };
        lines = TrainingLab.curves(Object.assign({}, now.trained.run, { seeds: [empty] }), 0, lab.runs);
        const at = now.evaluations.map((e) => e.step);
        Object.assign(lines, { train, eval: { x: at, y: now.evaluations.map((e) => e.eval_loss) } });
        if (!now.trained.run.switches.causal) lines.honest = { x: at, y: now.evaluations.map((e) => e.honest_loss) };
      }
      const k = beside.record.snapshots.length - 1;
      const shipped = TrainingLab.labViewData(beside.run, beside.s, k, 0, lab.switches);
      theirsTitle.textContent = `The shipped run '${from}' at seed ${beside.record.seed} (step ${shipped.step}, trained)`;
      TrainingLab.heatmap(theirs, shipped.weights, shipped.labels, shipped.labels, { hidden: shipped.future, colour: TrainingLab.blue, name: 'shipped weights', corner });
      TrainingLab.lossChart(svg, lines, steps, chartWidth);
    }
    // While a run trains, the panel is redrawn at most every DRAW_EVERY ms, in an animation frame, and its
    // figures only while they are in sight (drawn at once when they come into it).
    let inSight = true;
    if (typeof IntersectionObserver !== 'undefined') {
      new IntersectionObserver((entries) => {
        inSight = entries[entries.length - 1].isIntersecting;
        if (inSight && job) draw();
      }).observe(figures);
    }
    let drawPending = false, drawnAt = 0;
    function drawSoon() {
      if (drawPending) return;
      drawPending = true;
      setTimeout(() => requestAnimationFrame(() => {
        drawPending = false;
        drawnAt = Date.now();
        showProgress();
        if (inSight || figures.hidden) draw();
      }), Math.max(0, DRAW_EVERY - (Date.now() - drawnAt)));
    }

    function showProgress() {
      if (!job) return;
      const { trained } = job, main = job.stage !== 'reference';
      const loss = main && job.losses.length ? `, loss ${PyFormat.fixed(job.losses[job.losses.length - 1], 3)}` : '';
      const of = main ? trained.steps : job.referenceSteps;
      progressText.textContent = ` ${main ? '' : `the run '${lab.runs[trained.from].compare}': `}step ${job.step} of ${of}${loss}`;
      bar.value = job.step / of;
      progress.hidden = false;
    }

    function say(text, isError) {
      status.textContent = text;
      status.classList.toggle('lab-train-error', Boolean(isError));
    }

    function showResult(saved, judged) {
      result.innerHTML = describe(lab, saved, judged);
      saveButton.disabled = false;
    }

    /** A finished (or opened) run: its checks, its text, a place in the lab's run picker. */
    function finish(saved, refRecord) {
      const judged = judge(lab, saved.from, saved.seeds[0], refRecord, saved);
      const record = saved.seeds[0];
      last = { saved, judged, trained: { from: saved.from, seed: record.seed, steps: saved.steps, run: saved } };
      const label = `yours: ${saved.from}, seed ${record.seed}` + (changes(lab, saved.from, saved.switches).length ? ', changed' : '');
      view.addRun(`yours-${++runs}`, label, saved, describe(lab, saved, judged), '', false);
      showResult(saved, judged);
      draw();
    }

    function train() {
      let trained;
      try {
        trained = studentRun(lab, formValues());
      } catch (err) {
        say(`Not trained: ${err.message}.`, true);
        return;
      }
      const reference = referenceFor(lab, trained.from, trained.seed, trained.steps);
      const worker = startWorker();
      const t0 = Date.now();
      job = { trained, worker, losses: [], evaluations: [], head: null, step: 0, stage: 'main' };
      trainButton.disabled = true;
      stopButton.disabled = false;
      saveButton.disabled = true;
      result.textContent = '';
      say(`Training ${trained.from} at seed ${trained.seed}, ${trained.steps} steps…` + (worker.inPage ? ' (in the page: this browser would not start a background worker)' : ''));
      showProgress();
      let saved = null, doneText = '';
      const over = () => {
        worker.terminate();
        job = null;
        progress.hidden = true;
        trainButton.disabled = false;
        stopButton.disabled = true;
      };
      worker.onmessage = (event) => {
        const m = event.data;
        if (!job || job.worker !== worker) return;
        if (m.progress) {
          const p = m.progress;
          if (p.stage === 'main') {
            job.losses.push(...p.losses);
            job.evaluations.push(...p.evaluations);
            if (p.head) { job.head = p.head; job.headStep = p.step; }
          }
          if (p.stage === 'reference' && job.stage === 'main') {
            job.stage = 'reference';
            say(`Your run is done; now the run '${lab.runs[trained.from].compare}' trains at seed ${trained.seed}, ` +
              'for the checks that compare with it…');
          }
          job.step = p.step;
          drawSoon();
        } else if (m.stopped !== undefined) {
          job.stopped = true;
          say(`Stopped at step ${m.stopped} of ${trained.steps}; evaluating the model there…`);
        } else if (m.done) {
          const { record, line, steps } = m.done;
          saved = savedRun(trained, record, line, null);
          job.referenceSteps = steps;
          const seconds = PyFormat.fixed((Date.now() - t0) / 1000, 1);
          doneText = (job.stopped ? `Stopped: ${steps} of ${trained.steps} steps` : `Done: ${steps} steps`) + ` in ${seconds} s. ${line}`;
          say(doneText);
          if (!reference || reference.record) {
            over();
            finish(saved, reference && reference.record);
          }
        } else if ('reference' in m) {
          if (m.reference) saved.reference = m.reference.record;
          over();
          finish(saved, m.reference && m.reference.record);
          say(doneText);
        } else if (m.failed) {
          over();
          say(`Training stopped: ${m.failed}. Try a smaller τ or X multiplier, or the ÷√d switch on.`, true);
        }
      };
      worker.onerror = (event) => {
        if (!job || job.worker !== worker) return;
        over();
        say(`Training failed in the background worker: ${event.message || 'an error'}.`, true);
      };
      worker.postMessage({ train: { run: trained.run, seed: trained.seed, steps: trained.steps, reference: reference && reference.run } });
    }

    trainButton.addEventListener('click', train);
    stopButton.addEventListener('click', () => { if (job) job.worker.postMessage({ stop: true }); });
    saveButton.addEventListener('click', () => {
      if (!last) return;
      const { saved } = last, record = saved.seeds[0];
      const a = el('a', { download: `run-${saved.from}-seed-${record.seed}.json`, href: URL.createObjectURL(new Blob([JSON.stringify(saved)], { type: 'application/json' })) });
      a.style.display = 'none';
      details.appendChild(a);
      a.click();
      a.remove();
      say(`Saved as ${a.download}. Drop it on the lab, or open it above, to see it again.`);
    });

    function open(file) {
      if (!file) return;
      const reader = new FileReader();
      reader.onload = () => {
        let saved;
        try {
          saved = readSaved(lab, String(reader.result));
        } catch (err) {
          say(`Not opened: ${err.message}.`, true);
          return;
        }
        details.open = true;
        // the checks that compare read the shipped reference, or the one trained beside the run (in its file)
        const ref = referenceFor(lab, saved.from, saved.seeds[0].seed, saved.steps);
        finish(saved, ref && (ref.record || saved.reference));
        say(`Opened ${file.name}: ${saved.line}`);
      };
      reader.onerror = () => say(`Not opened: ${file.name} could not be read.`, true);
      reader.readAsText(file);
    }
    fileInput.addEventListener('change', () => { open(fileInput.files[0]); fileInput.value = ''; });
    const drop = view.container;
    drop.addEventListener('dragover', (event) => { event.preventDefault(); drop.classList.add('lab-drop'); });
    drop.addEventListener('dragleave', () => drop.classList.remove('lab-drop'));
    drop.addEventListener('drop', (event) => {
      event.preventDefault();
      drop.classList.remove('lab-drop');
      open(event.dataTransfer && event.dataTransfer.files[0]);
    });
    return { details, train, open, state: () => ({ job, last }) };
  }

  return { taskRuns, commandFor, studentRun, referenceFor, judge, describe, savedRun, readSaved, attach };
});
