/*
 * Lessons in the browser: a port of core/lessons.py (the walk through the six steps, the bank of
 * questions), widgets/lesson_data.py (what the lesson shows) and widgets/lesson_state.py (its actions),
 * as pure functions. The sentences are Python's, character for character: tests/test_lessons.py and
 * tests/test_actions.py hold the two equal.
 *
 *   HeadLessons.walkStep(head, i, labels, k)      step k (1 to 6) for query i
 *   const bank = HeadLessons.make(config);        config: widgets/logic_config.py's (switches, lessons)
 *   bank.names()                                  the questions, in the bank's order
 *   bank.pose(name)                               a question on its own heads: prompt, kind, choices, right
 *   bank.poseTopKey(head, labels, i)              "which key will row i weigh most?" on any head
 *   bank.check(posed, p), bank.judge(posed, p), bank.feedback(posed, p)   (p: a choice's index or a number)
 *   bank.view(head, i, labels, lesson, blend)     the lesson's view data (widgets.lesson_data.lesson_view)
 *   bank.actions({change, refused, headOf, pyRepr})  act(state, action) for the lesson's actions (explorer.js)
 *
 * Plain ES2019; in a page it defines the global `HeadLessons` (after static/attention.js), in Node
 * require() returns it.
 */
(function (root, factory) {
  if (typeof module === 'object' && module.exports) module.exports = factory(require('./attention.js'));
  else root.HeadLessons = factory(root.AttentionHead);
})(typeof self !== 'undefined' ? self : this, function (AttentionHead) {
  'use strict';

  const { fmt, fmtVector, trace, convexHull, escapeHtml } = AttentionHead;

  const STEPS = 6;
  const TIE = 1e-9;
  const SAME_AS_SHOWN = 0.005;
  const ESTIMATE_TOLERANCE = 0.1;
  const ESTIMATE_SLIDER = [0, 1, 0.01, 0.5];
  const [ON_A_VALUE, INSIDE, OUTSIDE] = [0, 1, 2];
  const NEAR = 1e-9;
  const DIRECTIONS = ['goes up', 'goes down', 'stays the same'];
  const WENT = ['went up', 'went down', 'stayed the same'];
  const WHERE = ['exactly on one of the values', "inside the values' hull", "outside the values' hull"];
  const MATRICES = ['weights', 'scores', 'scaled', 'Q', 'K', 'V'];
  const GLOW = 7;

  // --- small helpers (core/lessons.py) ------------------------------------------------

  function short(x) {
    let text = fmt(x);
    if (text.indexOf('.') >= 0 && text.indexOf('e') < 0) text = text.replace(/0+$/, '').replace(/\.$/, '');
    return text;
  }

  const quoted = (labels, j) => `'${labels[j]}'`;
  const range = (n) => Array.from({ length: n }, (_, k) => k);
  const sameArray = (a, b) => a.length === b.length && a.every((v, k) =>
    (Array.isArray(v) ? Array.isArray(b[k]) && sameArray(v, b[k]) : v === b[k]));

  function argmax(a) {
    let best = 0;
    for (let k = 1; k < a.length; k++) if (a[k] > a[best]) best = k;
    return best;
  }

  function topKeys(head, i) {
    const w = head.weights[i];
    const m = Math.max(...w);
    return range(head.T).filter((j) => w[j] >= m - TIE);
  }

  function names(labels, keys, i = null) {
    const said = keys.map((j) => (j === i ? 'itself' : quoted(labels, j)));
    if (said.length <= 1) return said.join('');
    return said.slice(0, -1).join(', ') + ' and ' + said[said.length - 1];
  }

  // --- the walk -------------------------------------------------------------------------

  function walkStep(head, i, labels, k) {
    labels = Array.from(labels, String);
    const t = trace(head, i, labels);
    const step = t.steps[k - 1];
    const { T, d } = head;
    const me = labels[i];
    const row = range(T).map((j) => [i, j]);
    let idle = false;
    let offer = null;
    let blend = false;
    let lead;
    let cells;
    if (k === 1) {
      lead = "Every token's vector is multiplied by W_Q, W_K and W_V: a query (what it looks for), a key " +
        `(what it offers) and a value (what it hands over). '${me}' looks for q_${me} = ` +
        `${fmtVector(head.Q[i])}.`;
      const all = range(T).flatMap((r) => range(d).map((c) => [r, c]));
      cells = { Q: range(d).map((c) => [i, c]), K: all, V: all };
    } else if (k === 2) {
      const s = head.scores[i];
      const j = argmax(s);
      lead = `The query of '${me}' is dotted with every key, one score per token. The largest, ` +
        `${fmt(s[j])}, is on ${quoted(labels, j)}: its key points most the way the query does.`;
      cells = { scores: row };
    } else if (k === 3) {
      const tau = head.temperature;
      const divides = head.scaling && d > 1;
      if (!divides && tau === 1) {
        idle = true;
        const why = !head.scaling ? '÷√d is switched off' : 'd = 1, so √d = 1';
        lead = `${why}: the scores go on as they are.`;
      } else {
        const parts = divides ? [`√${d} = ${fmt(Math.sqrt(d), 3)}`] : [];
        if (tau !== 1) parts.push(`the temperature τ = ${short(tau)}`);
        const divisor = (divides ? Math.sqrt(d) : 1.0) * tau;
        const gaps = divisor > 1 ? 'shrink' : divisor < 1 ? 'grow' : 'stay as they were';
        lead = `Every score is divided by ${parts.join(' and by ')}: the order stays, the gaps ${gaps}.`;
      }
      cells = { scaled: row };
    } else if (k === 4) {
      const later = range(T).filter((j) => head.future[i][j]);
      if (!head.causal) {
        idle = true;
        lead = `The mask is off: '${me}' keeps every key, the later ones too.`;
        cells = { scaled: row };
      } else if (later.length) {
        const one = later.length === 1;
        lead = `${names(labels, later)} come${one ? 's' : ''} after '${me}': ` +
          `${one ? 'its score becomes' : 'their scores become'} −∞, so ` +
          `${one ? 'it gets' : 'they get'} no weight at all.`;
        cells = { scaled: later.map((j) => [i, j]) };
      } else {
        idle = true;
        lead = `No token comes after '${me}', so the mask changes nothing in its row.`;
        if (T > 1) {
          offer = 0;
          lead += ` The mask matters most for '${labels[0]}': it hides ${T - 1} later token` + (T > 2 ? 's.' : '.');
        }
        cells = {};
      }
    } else if (k === 5) {
      const w = head.weights[i];
      const j = argmax(w);
      if (head.normaliser === 'raw') {
        lead = `No softmax: the scores themselves are the weights. Those of '${me}' add up to ` +
          `${fmt(t.checks.row_sum)}, not 1, and may be negative.`;
      } else if (head.normaliser === 'top1') {
        lead = `Top-1: all the weight of '${me}' goes to its largest score, on ${quoted(labels, j)}.`;
      } else {
        lead = 'The softmax makes each score positive (exp) and divides by their sum, so the weights of ' +
          `'${me}' add up to 1. The most, ${fmt(w[j])}, goes to ${quoted(labels, j)}.`;
      }
      cells = { weights: row };
    } else {
      const j = argmax(head.weights[i]);
      lead = `The output of '${me}' is every value times its weight, added up: ${fmtVector(head.output[i])}, ` +
        `pulled most towards the value of ${quoted(labels, j)}, ${fmtVector(head.V[j])}.`;
      cells = { weights: row };
      blend = true;
    }
    return { number: k, name: step.name, lead, lines: step.lines.slice(), idle, offer, cells, blend };
  }

  // --- where an output lands (core/lessons.py) ------------------------------------------

  function insideConvex(hx, hy, x, y) {
    const n = hx.length;
    const scale = Math.max(1, ...hx.map(Math.abs), ...hy.map(Math.abs), Math.abs(x), Math.abs(y));
    const tol = 1e-9 * scale * scale;
    if (n === 1) return Math.abs(x - hx[0]) <= 1e-9 * scale && Math.abs(y - hy[0]) <= 1e-9 * scale;
    if (n === 2) {
      const cross = (hx[1] - hx[0]) * (y - hy[0]) - (hy[1] - hy[0]) * (x - hx[0]);
      const dot = (x - hx[0]) * (hx[1] - hx[0]) + (y - hy[0]) * (hy[1] - hy[0]);
      const length2 = (hx[1] - hx[0]) ** 2 + (hy[1] - hy[0]) ** 2;
      return Math.abs(cross) <= tol && -tol <= dot && dot <= length2 + tol;
    }
    for (let k = 0; k < n; k++) {
      const j = (k + 1) % n;
      if ((hx[j] - hx[k]) * (y - hy[k]) - (hy[j] - hy[k]) * (x - hx[k]) < -tol) return false;
    }
    return true;
  }

  function plotted(head, i) {
    const xs = head.V.map((v) => v[0]);
    const ys = head.d > 1 ? head.V.map((v) => v[1]) : xs.map(() => 0);
    const out = head.output[i];
    return [xs, ys, out[0], head.d > 1 ? out[1] : 0];
  }

  function onValue(head, i) {
    const [xs, ys, ox, oy] = plotted(head, i);
    const near = NEAR * Math.max(1, ...xs.concat(ys).map(Math.abs));
    for (let j = 0; j < head.T; j++) {
      if (Math.abs(xs[j] - ox) <= near && Math.abs(ys[j] - oy) <= near) return j;
    }
    return null;
  }

  function where(head, i) {
    if (onValue(head, i) !== null) return ON_A_VALUE;
    const [xs, ys, ox, oy] = plotted(head, i);
    const [hx, hy] = convexHull(xs, ys);
    return insideConvex(hx, hy, ox, oy) ? INSIDE : OUTSIDE;
  }

  function beyond(head, i) {
    const [xs, ys, ox, oy] = plotted(head, i);
    const coords = [[xs, ox], [ys, oy]].slice(0, head.d > 1 ? 2 : 1);
    for (let c = 0; c < coords.length; c++) {
      const [vs, o] = coords[c];
      const lo = Math.min(...vs);
      const hi = Math.max(...vs);
      if (o > hi || o < lo) return [c, lo, hi];
    }
    return null;
  }

  const changedRows = (before, after) => range(after.T).filter((r) => !sameArray(before.weights[r], after.weights[r]));

  function rowChoices(labels, t) {
    const me = labels[t];
    const T = labels.length;
    return [
      ['every row', range(T)],
      [`the row of '${me}' and the rows after it`, range(T).slice(t)],
      [`only the row of '${me}'`, [t]],
      ['no row', []],
    ];
  }

  // --- the bank -----------------------------------------------------------------------------

  function make(config) {
    const SWITCHES = config.switches;
    const L = config.lessons;
    const setupOf = (ref) => (ref.preset !== undefined ? config.presets[ref.preset] : L.setups[ref.setup]);
    const NOTES = L.notes || config.notes || {}; // the config carries every note, or the answers' own
    const QUESTIONS = new Map(L.questions.map((q) => [q.name, Object.assign({}, q, {
      before: setupOf(q.before), after: setupOf(q.after),
    })]));
    const NAMES = L.questions.map((q) => q.name);
    const headOfSetup = (p) => AttentionHead.attend(p.X, p.W_Q, p.W_K, p.W_V, p.options, SWITCHES);

    function describeChange(before, after) {
      const parts = [];
      if (!sameArray(before.tokens, after.tokens)) {
        parts.push('the tokens become ' + after.tokens.map((t) => `'${t}'`).join(', '));
      } else {
        before.X.forEach((b, t) => {
          const a = after.X[t];
          if (sameArray(b, a)) return;
          const same = range(after.X.length).filter((u) => u !== t && sameArray(after.X[u], a));
          parts.push(`x_${after.tokens[t]} goes from ${fmtVector(b)} to ${fmtVector(a)}` +
            (same.length ? `, the vector of '${after.tokens[same[0]]}'` : ''));
        });
      }
      for (const name of ['W_Q', 'W_K', 'W_V']) if (!sameArray(before[name], after[name])) parts.push(`${name} changes`);
      for (const s of SWITCHES) {
        const b = before.options[s.name];
        const a = after.options[s.name];
        if (b === a) continue;
        const text = s.kind === 'toggle' ? (a ? 'on' : 'off') : s.kind === 'choice' ? s.choice_labels[s.choices.indexOf(a)] : short(a);
        parts.push(`${s.label}: ${text}`);
      }
      return parts.join('; ');
    }

    function movedToken(before, after) {
      const moved = range(before.X.length).filter((t) => !sameArray(before.X[t], after.X[t]));
      return moved.length === 1 && sameArray(before.tokens, after.tokens) ? moved[0] : null;
    }

    function poseOn(before, after, labels, i, o) {
      labels = Array.from(labels, String);
      const { kind, name, title } = o;
      const context = o.context || '';
      const change = o.change || '';
      let key = o.key === undefined ? null : o.key;
      const me = labels[i];
      const afterTheChange = change ? ' after the change' : '';
      let estimate = null;
      let value = null;
      let choices = [];
      let prompt;
      let right;
      if (kind === 'key') {
        prompt = `Which key will '${me}' weigh most${afterTheChange}?`;
        choices = labels.slice();
        right = topKeys(after, i);
      } else if (kind === 'direction' || kind === 'estimate') {
        const w0 = before.weights[i][key];
        const w1 = after.weights[i][key];
        const now = `'${me}' puts ${fmt(w0)} on ${quoted(labels, key)} now.`;
        if (kind === 'direction') {
          prompt = `${now} Will that weight go up, go down or stay the same${afterTheChange}?`;
          choices = DIRECTIONS.slice();
          right = [Math.abs(w1 - w0) < SAME_AS_SHOWN ? 2 : w1 > w0 ? 0 : 1];
        } else {
          prompt = `${now} What will it put there${afterTheChange}? Set the slider to your estimate.`;
          estimate = ESTIMATE_SLIDER.slice();
          value = w1;
          right = [];
        }
      } else if (kind === 'where') {
        prompt = `The output of '${me}', ${fmtVector(before.output[i])}, is ${WHERE[where(before, i)]} now. Where ` +
          `will it land${afterTheChange}?`;
        choices = WHERE.slice();
        right = [where(after, i)];
      } else if (kind === 'rows') {
        prompt = `The mask is ${before.causal ? 'on' : 'off'}. Which rows of the weights will change?`;
        const sets = rowChoices(labels, o.moved);
        const changed = changedRows(before, after);
        choices = sets.map(([text]) => text);
        right = range(sets.length).filter((k) => sameArray(sets[k][1], changed));
        key = o.moved;
      } else {
        throw new Error(`no kind of question called ${JSON.stringify(kind)}`);
      }
      return {
        name, title, kind, labels, query: i, key, before, after, context, change, prompt, choices, estimate, right, value,
      };
    }

    const posed = new Map();
    function pose(name) {
      if (!posed.has(name)) {
        const q = QUESTIONS.get(name);
        const labels = q.after.tokens.slice();
        posed.set(name, poseOn(headOfSetup(q.before), headOfSetup(q.after), labels, labels.indexOf(q.after.query), {
          kind: q.kind, name: q.name, title: q.title,
          key: q.key === null ? null : labels.indexOf(q.key),
          context: q.context, change: describeChange(q.before, q.after), moved: movedToken(q.before, q.after),
        }));
      }
      return posed.get(name);
    }

    function poseTopKey(head, labels, i, o = {}) {
      return poseOn(head, head, labels, i, { kind: 'key', name: o.name || 'top-key', title: o.title || 'Which key?' });
    }

    function check(p, prediction) {
      if (p.kind === 'estimate') {
        const [low, high] = p.estimate;
        const ok = typeof prediction === 'number' && Number.isFinite(prediction) && low <= prediction && prediction <= high;
        return ok ? '' : `set the slider to your estimate, from ${short(low)} to ${short(high)}, then check it`;
      }
      const ok = typeof prediction === 'number' && Number.isInteger(prediction) && prediction >= 0 &&
        prediction < p.choices.length;
      return ok ? '' : 'pick one of the answers first, or press Reveal to see it without predicting';
    }

    function judge(p, prediction) {
      if (check(p, prediction)) return false;
      if (p.kind === 'estimate') return Math.abs(prediction - p.value) <= ESTIMATE_TOLERANCE + TIE;
      return p.right.indexOf(prediction) >= 0;
    }

    function answer(p) {
      const { before, after, labels, query: i } = p;
      const me = labels[i];
      const w = after.weights[i];
      if (p.kind === 'key') {
        const tops = topKeys(after, i);
        let text;
        if (tops.length === 1) {
          text = `'${me}' now weighs ${names(labels, tops, i)} most, ${fmt(w[tops[0]])}`;
        } else if (tops.length === 2) {
          const [a, b] = tops;
          text = `'${me}' now splits ${fmt(w[a])} / ${fmt(w[b])} between ${names(labels, [a], i)} and ` +
            `${names(labels, [b], i)}`;
        } else {
          text = `'${me}' now weighs ${names(labels, tops, i)} alike, ${fmt(w[tops[0]])} each`;
        }
        if (p.change) {
          const was = topKeys(before, i);
          const them = was.length === before.T && before.T > 2 ? 'every key' : names(labels, was, i);
          const alike = was.length > 1 ? ' alike' : '';
          text += ` (before the change: ${them}${alike}, ${fmt(before.weights[i][was[0]])})`;
        }
        return text;
      }
      if (p.kind === 'direction' || p.kind === 'estimate') {
        const key = quoted(labels, p.key);
        const w0 = fmt(before.weights[i][p.key]);
        const w1 = fmt(w[p.key]);
        if (p.kind === 'direction') {
          const went = p.right[0];
          if (went === 2) return `the weight '${me}' puts on ${key} ${WENT[went]}: ${w0} before, ${w1} after`;
          return `the weight '${me}' puts on ${key} ${WENT[went]}, from ${w0} to ${w1}`;
        }
        return `'${me}' now puts ${w1} on ${key} (it was ${w0})`;
      }
      if (p.kind === 'where') {
        const text = `the output of '${me}', now ${fmtVector(after.output[i])}, is `;
        const landed = p.right[0];
        if (landed === ON_A_VALUE) return text + `exactly the value of ${quoted(labels, onValue(after, i))}`;
        if (landed === INSIDE) return text + "inside the values' hull, a blend of them";
        const b = beyond(after, i);
        return text + "outside the values' hull" +
          (b ? `: its value[${b[0]}] is beyond every value's (${fmt(b[1])} to ${fmt(b[2])})` : '');
      }
      const t = p.key;
      const changed = changedRows(before, after);
      const same = range(after.T).filter((r) => changed.indexOf(r) < 0);
      let text = `rows that changed: ${names(labels, changed) || 'none'}; rows exactly as before: ` +
        `${names(labels, same) || 'none'}`;
      const blind = same.filter((r) => r < t);
      if (before.causal && blind.length) {
        const one = blind.length === 1;
        text += `. With the mask on, ${names(labels, blind)} cannot see '${labels[t]}': ` +
          `${one ? 'its score' : 'their scores'} on it ${one ? 'is' : 'are'} −∞ before the softmax, ` +
          `so nothing about '${labels[t]}' reaches ${one ? 'it' : 'them'}`;
      }
      return text;
    }

    function feedback(p, prediction = null) {
      const text = answer(p);
      if (prediction === null || prediction === undefined || check(p, prediction)) return `The answer: ${text}.`;
      if (judge(p, prediction)) {
        if (p.kind === 'estimate') return `Right: ${text}; your ${fmt(prediction)} is within ${fmt(ESTIMATE_TOLERANCE)} of it.`;
        return `Right: ${text}.`;
      }
      if (p.kind === 'estimate') {
        const off = Math.abs(prediction - p.value);
        return `You said ${fmt(prediction)}; ${text}. That is ${fmt(off)} away; within ${fmt(ESTIMATE_TOLERANCE)} ` +
          'counts as right.';
      }
      let said = p.choices[prediction];
      if (p.kind === 'key') return `You said '${said}'; ${text}. '${said}' gets ${fmt(p.after.weights[p.query][prediction])}.`;
      if (p.kind === 'direction') said = `it ${said}`;
      if (p.kind === 'where') said = `it lands ${said}`;
      return `You said ${said}; ${text}.`;
    }

    // --- what the lesson shows (widgets/lesson_data.py) -----------------------------------

    function spotlight(cells, rows, cols) {
      const out = { x: [], y: [], width: [], height: [] };
      if (!cells || !cells.length) return out;
      const lit = new Set(cells.map(([r, c]) => r * cols + c));
      const runs = range(rows).map((r) => {
        const line = [];
        let start = null;
        for (let c = 0; c <= cols; c++) {
          const dark = c < cols && !lit.has(r * cols + c);
          if (dark && start === null) start = c;
          else if (!dark && start !== null) {
            line.push([start, c]);
            start = null;
          }
        }
        return line;
      });
      let r = 0;
      while (r < rows) {
        let end = r + 1;
        while (end < rows && sameArray(runs[end], runs[r])) end++;
        for (const [a, b] of runs[r]) {
          out.x.push((a + b - 1) / 2);
          out.y.push((r + end - 1) / 2);
          out.width.push(b - a);
          out.height.push(end - r);
        }
        r = end;
      }
      return out;
    }

    function walkHtml(step, labels, i) {
      const head = `Step ${step.number} of ${STEPS}`;
      const lines = step.lines.map(escapeHtml).join('<br>');
      const text = `<p class="lesson-head"><b>${head}</b> · ${escapeHtml(step.name)} for '${escapeHtml(labels[i])}'</p>` +
        `<p class="lesson-lead">${escapeHtml(step.lead)}</p><p class="lesson-lines">${lines}</p>`;
      return [text, `${head}, ${step.name}. ${step.lead}`];
    }

    function questionHtml(lesson) {
      const p = pose(lesson.question);
      const number = NAMES.indexOf(lesson.question) + 1;
      const asked = `<p class="lesson-head"><b>Predict, then check</b> · ${escapeHtml(p.title)} ` +
        `(question ${number} of ${NAMES.length})</p>` +
        (p.context ? `<p>${escapeHtml(p.context)}</p>` : '') +
        (p.change ? `<p><b>The change:</b> ${escapeHtml(p.change)}.</p>` : '') +
        `<p class="lesson-ask">${escapeHtml(p.prompt)}</p>`;
      if (!lesson.revealed) return [asked, '', p.prompt];
      const said = feedback(p, lesson.prediction);
      const mark = lesson.prediction === null ? 'shown' : said.startsWith('Right') ? 'right' : 'wrong';
      const note = NOTES[QUESTIONS.get(lesson.question).after.name] || '';
      return [asked, `<p class="lesson-feedback ${mark}">${escapeHtml(said)}</p>${note}`, said];
    }

    const INTRO = '<p class="lesson-intro">Walk through the six steps for the chosen query, or pick a question: ' +
      'predict what a change will do, then see it happen.</p>';
    const panel = (text) => (text ? `<div class="lesson">${text}</div>` : '');

    function glowOf(blend) {
      const { links } = blend;
      const keep = blend.values.weight.map((w, j) => (w !== 0 ? j : -1)).filter((j) => j >= 0);
      const glow = {};
      for (const name of ['x0', 'y0', 'x1', 'y1']) glow[name] = keep.map((j) => links[name][j]);
      glow.width = keep.map((j) => links.width[j] + GLOW);
      return [glow, { x: blend.output.x.slice(), y: blend.output.y.slice() }];
    }

    function view(head, i, labels, lesson, blend) {
      labels = Array.from(labels, String);
      const { T, d } = head;
      const shape = { weights: [T, T], scores: [T, T], scaled: [T, T], Q: [T, d], K: [T, d], V: [T, d] };
      const spot = {};
      for (const name of MATRICES) spot[name] = spotlight([], ...shape[name]);
      let glow = { x0: [], y0: [], x1: [], y1: [], width: [] };
      let ring = { x: [], y: [] };
      let asked = '';
      let answer = '';
      let walk = '';
      const said = [];
      let offer = '';
      let kind = '';
      let choices = [];
      if (lesson.question) {
        const [a, b, say] = questionHtml(lesson);
        [asked, answer] = [a, b];
        said.push(say);
        const p = pose(lesson.question);
        kind = p.kind;
        choices = p.choices.slice();
      }
      if (lesson.walk) {
        const step = walkStep(head, i, labels, lesson.walk);
        for (const [name, cells] of Object.entries(step.cells)) spot[name] = spotlight(cells, ...shape[name]);
        if (step.blend) [glow, ring] = glowOf(blend);
        if (step.offer !== null) offer = `Show this step for '${labels[step.offer]}'`;
        const [text, say] = walkHtml(step, labels, i);
        walk = text;
        said.push(say);
      }
      if (!asked && !walk) asked = INTRO;
      if (lesson.answered) {
        answer += `<p class="lesson-score">${lesson.right} of ${lesson.answered} prediction` +
          `${lesson.answered !== 1 ? 's' : ''} right on this page</p>`;
      }
      return {
        question: panel(asked),
        answer: panel(answer),
        walk: panel(walk),
        say: said.join(' '),
        spotlight: spot,
        glow,
        ring,
        controls: {
          walk: Boolean(lesson.walk), prev: lesson.walk > 1, next: lesson.walk > 0 && lesson.walk < STEPS, offer,
          question: lesson.question, kind, choices, revealed: lesson.revealed,
        },
      };
    }

    // --- the lesson's actions (widgets/lesson_state.py) -------------------------------------

    /** act(state, action) for the lesson's actions, with explorer.js's change, refused, headOf and pyRepr. */
    function actions({ change, refused, headOf, pyRepr }) {
      const presetNames = L.presets;
      const setupChanges = (p) => Object.assign(
        { tokens: p.tokens.slice(), X: p.X, W_Q: p.W_Q, W_K: p.W_K, W_V: p.W_V,
          query: p.tokens.indexOf(p.query), preset: presetNames.indexOf(p.name) >= 0 ? p.name : '' },
        p.options
      );

      function leave(state) {
        const T = state.tokens.length;
        const back = state.walk_from >= 0 && state.walk_from < T ? state.walk_from : state.query;
        return change(state, { walk: 0, walk_from: -1, query: back });
      }

      function walkTo(state, step) {
        const ok = typeof step === 'number' && Number.isInteger(step) && step >= 0 && step <= STEPS; // 2.0 is 2
        if (!ok) return refused(state, `the walk has steps 1 to ${STEPS}, and 0 to leave it`);
        if (step === 0) return state.walk ? leave(state) : state;
        return change(state, { walk: step, walk_from: state.walk ? state.walk_from : state.query });
      }

      function ask(state, name) {
        if (name === '') return closeQuestion(state);
        if (!QUESTIONS.has(name)) {
          return refused(state, `there is no question called ${pyRepr(name)}; try one of ${NAMES.join(', ')}`);
        }
        return change(state, Object.assign(setupChanges(QUESTIONS.get(name).before),
          { question: name, prediction: null, revealed: false }));
      }

      function closeQuestion(state) {
        return state.question ? change(state, { question: '', prediction: null, revealed: false }) : state;
      }

      function predict(state, value, reveal) {
        if (!state.question || state.revealed) return state;
        const p = pose(state.question);
        if (!reveal) {
          const why = check(p, value);
          if (why) return refused(state, why);
        }
        const counted = reveal ? {} : { answered: state.answered + 1, right: state.right + (judge(p, value) ? 1 : 0) };
        return change(state, Object.assign(setupChanges(QUESTIONS.get(state.question).after), counted,
          { question: state.question, prediction: reveal ? null : value, revealed: true }));
      }

      return function act(state, action) {
        switch (action.do) {
          case 'walk-open':
            return state.walk ? state : change(state, { walk: 1, walk_from: state.query });
          case 'walk-to':
            return walkTo(state, action.step);
          case 'walk-next':
            return state.walk && state.walk < STEPS ? change(state, { walk: state.walk + 1 }) : state;
          case 'walk-prev':
            return state.walk > 1 ? change(state, { walk: state.walk - 1 }) : state;
          case 'walk-leave':
            return state.walk ? leave(state) : state;
          case 'walk-offer': {
            if (!state.walk) return state;
            const offer = walkStep(headOf(state), state.query, state.tokens, state.walk).offer;
            return offer === null ? state : change(state, { query: offer });
          }
          case 'ask':
            return ask(state, action.name);
          case 'predict':
            return predict(state, action.value, false);
          case 'reveal':
            return predict(state, null, true);
          case 'next-question':
            return ask(state, NAMES[(state.question ? NAMES.indexOf(state.question) + 1 : 0) % NAMES.length]);
          case 'close-question':
            return closeQuestion(state);
          default:
            throw new Error(`unknown action ${JSON.stringify(action.do)}`);
        }
      };
    }

    return {
      names: () => NAMES.slice(), pose, poseOn, poseTopKey, check, judge, answer, feedback, describeChange, view,
      actions, spotlight,
    };
  }

  return { STEPS, walkStep, make, where, insideConvex, topKeys, ACTIONS: [
    'walk-open', 'walk-next', 'walk-prev', 'walk-to', 'walk-leave', 'walk-offer', 'ask', 'predict', 'reveal',
    'next-question', 'close-question'] };
});
