/*
 * The head explorer's logic in the browser, as pure functions: a port of widgets/state.py (HeadState:
 * apply, the editor's actions, loading a preset), widgets/url_state.py (links) and
 * widgets/intermediates.py (downloads).  Nothing here touches Bokeh or the page; static/explorer_page.js
 * binds it to the Bokeh models.  tests/test_actions.py runs the same action sequences through Python and
 * through this file and requires the same state, message and view data after every action.
 *
 *   const logic = HeadLogic.make(config);   // config: the JSON app/export.py writes (switches, limits, presets)
 *   let state = logic.initial();            // config.start
 *   state = logic.apply(state, {do: 'x', token: 3, component: 0, value: 0.5});
 *   const view = logic.render(state);       // as widgets.viewdata.view_data
 *
 * A state is a plain object {tokens, X, W_Q, W_K, W_V, <one key per switch>, query, dims, preset, message,
 * <the lesson's: walk, walk_from, question, prediction, revealed, right, answered>}; apply never changes
 * the state it is given.  Plain ES2019; in a page it defines the global `HeadLogic` (after
 * static/attention.js and static/lessons.js), in Node require() returns it.
 */
(function (root, factory) {
  if (typeof module === 'object' && module.exports) {
    module.exports = factory(require('./attention.js'), require('./lessons.js'));
  } else {
    root.HeadLogic = factory(root.AttentionHead, root.HeadLessons);
  }
})(typeof self !== 'undefined' ? self : this, function (AttentionHead, HeadLessons) {
  'use strict';

  // Python's way of writing values into messages: static/pyformat.js, the page's one formatter (through
  // static/attention.js, which checks options and numbers as core.options does).
  const { AttentionError, checkOption, asFiniteNumber, pyFloat, pyRepr, PLAIN_NUMBER } = AttentionHead;
  const { reprFloat: floatRepr, general: formatG, fixed } = AttentionHead.PyFormat;

  // How far a value may lie from its slider's grid, in steps, and still be written as that grid point
  // (widgets/url_state.py STEP_NOISE; tests/test_actions.py holds the two equal).
  const STEP_NOISE = 1e-6;

  /** widgets.url_state.number: the shortest text that reads back as x, without a trailing ".0"; given a
   * slider's step, a value within float noise of the step's grid as that grid point (0.45, not
   * 0.4500000000000002). Also what a slider tells assistive technology (static/a11y.js). */
  function numberAtStep(x, step) {
    if (step) {
      const t = floatRepr(step);
      const places = t.endsWith('.0') || t.indexOf('e') >= 0 ? 0 : t.split('.')[1].length;
      const snapped = Number(fixed(x, places)); // Python's round(x, places)
      if (Math.abs(snapped - x) <= STEP_NOISE * step) x = snapped + 0; // (no "-0")
    }
    const text = floatRepr(x);
    return text.endsWith('.0') ? text.slice(0, -2) : text;
  }


  const chars = (s) => Array.from(String(s));
  const stripPy = (s) => String(s).replace(/^[\s\u001c-\u001f]+|[\s\u001c-\u001f]+$/g, '');

  function make(config) {
    const L = config.limits;
    const SWITCHES = config.switches;
    const OPTION_NAMES = SWITCHES.map((s) => s.name);
    const INPUTS = ['tokens', 'X', 'W_Q', 'W_K', 'W_V', ...OPTION_NAMES];
    const PRESET_NAMES = Object.keys(config.presets);
    const heads = new WeakMap(); // state → its head, computed once
    const bank = HeadLessons.make(config); // the walk and the questions (static/lessons.js)
    const LESSON_PARAMS = config.lessons.params;
    const befores = new WeakMap(); // state after a slider's move → the head before it (the one a move ago)

    // --- checks, with widgets.state's messages (an option's: AttentionHead.checkOption, as core.options) ---

    function checkLabels(tokens) {
      if (!Array.isArray(tokens)) throw new AttentionError('tokens must be a list of labels');
      const labels = tokens.map(String);
      if (!labels.length) throw new AttentionError('tokens is empty; a head needs at least one token');
      if (labels.length > L.max_tokens) {
        throw new AttentionError(`tokens has ${labels.length} labels; at most ${L.max_tokens} are allowed`);
      }
      labels.forEach((label, k) => {
        if (!stripPy(label)) throw new AttentionError(`token ${k}'s label is empty`);
        const n = chars(label).length;
        if (n > L.max_label) {
          throw new AttentionError(`token ${k}'s label is ${n} characters long; at most ${L.max_label}`);
        }
        if (labels.slice(0, k).indexOf(label) >= 0) {
          throw new AttentionError(`the label '${label}' is used twice; each token needs its own`);
        }
      });
      return labels;
    }

    function asWidth(name, value) {
      const n = pyFloat(value);
      const ok = n !== null && Number.isFinite(n) && Number.isInteger(n) && n >= 1 && n <= L.max_width;
      if (!ok) {
        throw new AttentionError(`${name} is ${pyRepr(value)}; expected a whole number from 1 to ${L.max_width}`);
      }
      return n;
    }

    function checkDims(dims, d) {
      const ints = Array.isArray(dims) && dims.length === 2 ? dims.map(pyInt) : null;
      if (!ints || ints.some((k) => k === null)) throw new AttentionError('dims must be two value coordinates');
      for (const k of ints) {
        if (!(k >= 0 && k < d)) throw new AttentionError(`value coordinate ${k} does not exist; d is ${d}`);
      }
      if (ints[0] === ints[1] && d > 1) {
        throw new AttentionError('pick two different value coordinates for the blend plot');
      }
      return ints;
    }

    // --- the head of a state ------------------------------------------------------------

    function options(v) {
      return Object.fromEntries(OPTION_NAMES.map((n) => [n, v[n]]));
    }

    function compute(v) {
      const labels = checkLabels(v.tokens);
      const head = AttentionHead.attend(v.X, v.W_Q, v.W_K, v.W_V, options(v), SWITCHES);
      if (head.T !== labels.length) {
        throw new AttentionError(`X has ${head.T} rows but there are ${labels.length} token labels`);
      }
      return head;
    }

    function headOf(state) {
      let head = heads.get(state);
      if (head === undefined) {
        head = compute(state);
        heads.set(state, head);
      }
      return head;
    }

    function refused(state, message) {
      const next = Object.assign({}, state, { message });
      if (heads.has(state)) heads.set(next, heads.get(state));
      if (befores.has(state)) befores.set(next, befores.get(state));
      return next;
    }

    /** HeadState.apply: change inputs together; compute once; refuse (and say why) if the core does. */
    function change(state, changes) {
      let next, head;
      try {
        changes = Object.assign({}, changes);
        for (const name of OPTION_NAMES) {
          if (name in changes) changes[name] = checkOption(SWITCHES, name, changes[name]);
        }
        for (const name of ['X', 'W_Q', 'W_K', 'W_V']) {
          if (name in changes) changes[name] = changes[name].map((r) => Array.from(r, Number));
        }
        if ('tokens' in changes) changes.tokens = checkLabels(changes.tokens);
        next = Object.assign({}, state, changes);
        head = Object.keys(changes).some((k) => INPUTS.indexOf(k) >= 0) ? compute(next) : headOf(state);
        let query = 'query' in changes ? changes.query : state.query;
        if (!(Number.isInteger(query) && query >= 0 && query < head.T)) {
          if ('query' in changes) {
            throw new AttentionError(`query is ${pyRepr(query)}; expected a token index from 0 to ${head.T - 1}`);
          }
          query = head.T - 1; // the old query fell off the end when tokens were removed
        }
        next.query = query;
        if ('dims' in changes) next.dims = checkDims(changes.dims, head.d);
        else if (head.d !== headOf(state).d) next.dims = [0, head.d > 1 ? 1 : 0];
      } catch (err) {
        if (!(err instanceof AttentionError)) throw err;
        return refused(state, err.message);
      }
      const edits = Object.keys(changes).some((k) => k !== 'query' && k !== 'dims' && LESSON_PARAMS.indexOf(k) < 0);
      if (!('preset' in changes) && edits) next.preset = '';
      if (edits && state.revealed && !('question' in changes)) { // the answer was about another head
        Object.assign(next, { question: '', prediction: null, revealed: false });
      }
      if (!('moved' in changes)) next.moved = null; // any change but a slider's move ends what `moved` says
      next.message = '';
      heads.set(next, head);
      return next;
    }

    function load(state, name) {
      const p = config.presets[name];
      if (p === undefined) {
        return refused(state, `there is no preset called '${name}'; try one of ${PRESET_NAMES.join(', ')}`);
      }
      return change(state, Object.assign(
        { tokens: p.tokens.slice(), X: p.X, W_Q: p.W_Q, W_K: p.W_K, W_V: p.W_V,
          query: p.tokens.indexOf(p.query), preset: p.name },
        p.options
      ));
    }

    function resize(M, rows, cols) {
      return Array.from({ length: rows }, (_, r) =>
        Array.from({ length: cols }, (_, c) => (r < M.length && c < M[0].length ? M[r][c] : 0))
      );
    }

    function setLabels(state, text) {
      const labels = String(text).split(',').map(stripPy);
      if (labels.length !== state.tokens.length) {
        return refused(state, `that gives ${labels.length} labels for ${state.tokens.length} tokens; ` +
          'use Add or Remove to change the count (labels cannot contain commas)');
      }
      return change(state, { tokens: labels });
    }

    function addToken(state) {
      const n = state.tokens.length;
      if (n >= L.edit_max_tokens) return refused(state, `the editor stops at ${L.edit_max_tokens} tokens`);
      let k = n + 1;
      while (state.tokens.indexOf(`t${k}`) >= 0) k++;
      const X = state.X.map((r) => r.slice()).concat([state.X[0].map(() => 0)]);
      return change(state, { tokens: state.tokens.concat([`t${k}`]), X });
    }

    function removeToken(state, index) {
      const n = state.tokens.length;
      if (n <= 1) return refused(state, 'a head needs at least one token');
      index = index === undefined || index === null ? n - 1 : index;
      const keep = state.tokens.map((_, k) => k).filter((k) => k !== index);
      const query = state.query - (state.query > index ? 1 : 0);
      return change(state, {
        tokens: keep.map((k) => state.tokens[k]),
        X: keep.map((k) => state.X[k].slice()),
        query: Math.min(Math.max(query, 0), keep.length - 1),
      });
    }

    function setWidths(state, C, d) {
      try {
        C = C === undefined || C === null ? state.X[0].length : asWidth('C', C);
        d = d === undefined || d === null ? state.W_Q[0].length : asWidth('d', d);
      } catch (err) {
        return refused(state, err.message);
      }
      return change(state, {
        X: resize(state.X, state.X.length, C),
        W_Q: resize(state.W_Q, C, d),
        W_K: resize(state.W_K, C, d),
        W_V: resize(state.W_V, C, d),
      });
    }

    function setEntry(state, name, field, row, col, value, extra) {
      let v;
      try {
        v = asFiniteNumber(field, value);
      } catch (err) {
        return refused(state, err.message);
      }
      const M = state[name].map((r) => r.slice());
      M[row][col] = v;
      return change(state, Object.assign({ [name]: M }, extra));
    }

    /** A token slider's move (HeadState.set_x): X[t][c] = value, and `moved` = [t, c, the value before]. */
    function moveSlider(state, t, c, value) {
      const next = setEntry(state, 'X', `${state.tokens[t]}[${c}]`, t, c, value, { moved: [t, c, state.X[t][c]] });
      if (!next.message && heads.has(state)) befores.set(next, heads.get(state));
      return next;
    }

    /** The head before the state's slider move: the one a move ago, or that head computed again. */
    function beforeOf(state) {
      let head = befores.get(state);
      if (head === undefined) {
        const [t, c, value] = state.moved;
        const X = state.X.map((r) => r.slice());
        X[t][c] = value;
        head = compute(Object.assign({}, state, { X }));
        befores.set(state, head);
      }
      return head;
    }

    /**
     * One user action → the next state.  Actions (as tests/test_actions.py's `act` in Python):
     *   {do: 'x', token, component, value}   a slider           {do: 'query', index}
     *   {do: 'option', name, value}          a switch           {do: 'preset', name}    {do: 'reset'}
     *   {do: 'labels', text}  {do: 'add'}  {do: 'remove'}        the editor (remove takes the query token)
     *   {do: 'widths', C?, d?}  {do: 'weight', name, row, col, value}  {do: 'dims', value: [a, b]}
     *   {do: 'link', params}                 a link's parameters (widgets.url_state.apply_params)
     * and the lesson's (walk-open, walk-next, …, ask, predict, reveal: static/lessons.js actions).
     */
    function apply(state, action) {
      if (HeadLessons.ACTIONS.indexOf(action.do) >= 0) return lessonAct(state, action);
      switch (action.do) {
        case 'x':
          return moveSlider(state, action.token, action.component, action.value);
        case 'weight':
          return setEntry(state, action.name, `${action.name}[${action.row}, ${action.col}]`,
            action.row, action.col, action.value);
        case 'query':
          return change(state, { query: action.index });
        case 'option':
          return change(state, { [action.name]: action.value });
        case 'preset':
          return load(state, action.name);
        case 'reset':
          return load(state, 'chapter');
        case 'labels':
          return setLabels(state, action.text);
        case 'add':
          return addToken(state);
        case 'remove':
          return removeToken(state, state.query);
        case 'widths':
          return setWidths(state, action.C, action.d);
        case 'dims':
          return change(state, { dims: action.value });
        case 'link':
          return applyLink(state, action.params);
        default:
          throw new Error(`unknown action ${JSON.stringify(action.do)}`);
      }
    }

    /**
     * `next` read as one token slider's move from `last` (the state drawn before it), for a page that reads
     * its sliders rather than their events (static/explorer_page.js follow): `moved` as apply({do: 'x'})
     * sets it when the two differ in one entry of X and nothing else (but the answered question such a move
     * closes), `last`'s when they do not differ at all, else null. The head before the move is `last`'s,
     * already computed.
     */
    function sliderMove(last, next) {
      const rest = (s) => JSON.stringify(Object.assign({}, s, { X: null, message: '', moved: null, preset: '' }));
      const closed = (s) => Object.assign({}, s, { question: '', prediction: null, revealed: false });
      const alike = last && (rest(last) === rest(next) || (last.revealed && rest(closed(last)) === rest(next)));
      const same = alike && last.X.length === next.X.length &&
        last.X.every((row, t) => row.length === next.X[t].length);
      const diff = [];
      if (same) next.X.forEach((row, t) => row.forEach((v, c) => { if (v !== last.X[t][c]) diff.push([t, c]); }));
      let moved = null;
      let before;
      if (same && diff.length === 1) {
        const [t, c] = diff[0];
        moved = [t, c, last.X[t][c]];
        before = heads.get(last);
      } else if (same && diff.length === 0 && last.moved) {
        moved = last.moved;
        before = befores.get(last);
      }
      if (moved === next.moved) return next;
      const out = Object.assign({}, next, { moved });
      if (heads.has(next)) heads.set(out, heads.get(next));
      if (moved && before) befores.set(out, before);
      return out;
    }

    const lessonAct = bank.actions({ change, refused, headOf, pyRepr });

    /** As widgets.viewdata.view_data for the state's head, query, dims and lesson (and the move it follows). */
    function render(state) {
      const head = headOf(state);
      const view = AttentionHead.viewData(head, state.query, state.tokens, state.dims);
      view.lesson = bank.view(head, state.query, state.tokens, state, view.blend);
      if (!state.moved) return view;
      return AttentionHead.withMoves(view, head, state.tokens, state.moved, beforeOf(state));
    }

    // --- links: widgets/url_state.py ------------------------------------------------------

    const MATRICES = { X: 'X', WQ: 'W_Q', WK: 'W_K', WV: 'W_V' };
    const TRUE = ['1', 'true', 'on', 'yes'];
    const FALSE = ['0', 'false', 'off', 'no'];

    function linkFloat(text) {
      const t = text.trim();
      if (!PLAIN_NUMBER.test(t)) return null;
      const x = Number(t);
      return Number.isFinite(x) ? x : null;
    }

    function decodeMatrix(text) {
      const rows = text.split(';').map((row) => row.split(',').map((v) => {
        const x = linkFloat(v);
        if (x === null) throw new Error('not a finite number');
        return x;
      }));
      if (new Set(rows.map((r) => r.length)).size !== 1) throw new Error('rows of different lengths');
      return rows;
    }

    /** urllib.parse.unquote: %XX runs decoded as UTF-8 (bad bytes become U+FFFD), anything else kept. */
    function unquote(text) {
      return text.replace(/(%[0-9a-fA-F]{2})+/g, (run) => {
        const bytes = new Uint8Array(run.length / 3);
        for (let k = 0; k < bytes.length; k++) bytes[k] = parseInt(run.substr(3 * k + 1, 2), 16);
        return new TextDecoder('utf-8').decode(bytes);
      });
    }

    /** urllib.parse.quote(text, safe=""). */
    function quote(text) {
      return encodeURIComponent(text).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
    }

    function pyInt(v) {
      if (typeof v === 'number') return Number.isFinite(v) ? Math.trunc(v) + 0 : null;
      const t = String(v).trim();
      return /^[+-]?\d+$/.test(t) ? Number(t) + 0 : null;
    }

    /** widgets.url_state.decode: changes (in Python's order) and one problem per bad parameter. */
    function decodeLink(params) {
      const changes = {};
      const problems = [];
      const bad = (key, why) => problems.push(`the link's '${key}' ${why}, so it was left at its default`);
      const raw = {};
      for (const key of Object.keys(params)) {
        let v = params[key];
        if (Array.isArray(v)) v = v.length ? v[v.length - 1] : '';
        raw[key] = v === null || v === undefined ? null : String(v);
      }
      for (const key of Object.keys(raw)) {
        if (raw[key] !== null && chars(raw[key]).length > L.max_param) {
          bad(key, `is over ${L.max_param} characters long`);
          raw[key] = null;
        }
      }
      const preset = raw.preset;
      if (preset && preset !== config.custom) {
        if (PRESET_NAMES.indexOf(preset) >= 0) changes.preset = preset;
        else bad('preset', `names no preset ('${chars(preset).slice(0, 40).join('')}')`);
      }
      if (raw.tokens) changes.tokens = raw.tokens.split(',').map(unquote);
      for (const [key, name] of Object.entries(MATRICES)) {
        if (!raw[key]) continue;
        try {
          changes[name] = decodeMatrix(raw[key]);
        } catch (err) {
          bad(key, "is not a matrix of finite numbers (rows split by ';', entries by ',')");
        }
      }
      for (const s of SWITCHES) {
        const key = s.url_key;
        let text = raw[key];
        if (s.kind === 'toggle') {
          text = stripPy(text || '').toLowerCase();
          if (TRUE.indexOf(text) >= 0) changes[s.name] = true;
          else if (FALSE.indexOf(text) >= 0) changes[s.name] = false;
          else if (text) bad(key, 'should be 1 or 0');
        } else if (!text) {
          continue;
        } else if (s.kind === 'choice') {
          if (s.choices.indexOf(text) >= 0) changes[s.name] = text;
          else bad(key, `should be one of ${s.choices.join(', ')}`);
        } else {
          const x = linkFloat(text);
          if (x === null) bad(key, 'is not a finite number');
          else if (!(s.low <= x && x <= s.high)) bad(key, `should lie from ${formatG(s.low)} to ${formatG(s.high)}`);
          else changes[s.name] = x;
        }
      }
      if (raw.dims) {
        const parts = raw.dims.split(',').map(pyInt);
        if (parts.length === 2 && parts.every((k) => k !== null)) changes.dims = parts;
        else bad('dims', 'should be two whole numbers like 0,1');
      }
      if (raw.query) changes.query_label = raw.query;
      const link = config.lessons.link; // the lesson's keys (widgets.url_state.LESSON_KEYS)
      const walk = raw[link.walk];
      const asked = raw[link.question];
      if (walk) {
        const k = /^[+-]?\d+$/.test(walk.trim()) ? Number(walk.trim()) : null;
        if (k !== null && k >= 1 && k <= HeadLessons.STEPS) changes.walk = k;
        else bad(link.walk, `should be a step from 1 to ${HeadLessons.STEPS}`);
      }
      if (asked) {
        if (bank.names().indexOf(asked) >= 0) changes.question = asked;
        else bad(link.question, `names no question ('${chars(asked).slice(0, 40).join('')}')`);
      }
      return { changes, problems };
    }

    function resolveQuery(label, labels) {
      const k = labels.indexOf(label);
      if (k >= 0) return k;
      const i = pyInt(label);
      return i !== null && i >= 0 && i < labels.length ? i : null;
    }

    /** widgets.url_state.apply_params: a preset first, the rest on top, each part alone if they clash. */
    // Python's == on what a link decodes to: lists and arrays entry by entry (and of one shape), else ===.
    function sameValue(a, b) {
      if (Array.isArray(a) || Array.isArray(b)) {
        return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, k) => sameValue(x, b[k]));
      }
      return a === b;
    }

    function applyLink(state, params) {
      const { changes, problems } = decodeLink(params);
      const lesson = {};
      for (const key of ['question', 'walk']) {
        if (key in changes) {
          lesson[key] = changes[key];
          delete changes[key];
        }
      }
      if ('preset' in changes) {
        state = load(state, changes.preset);
        delete changes.preset;
        // what the preset already holds is not applied again, so a link that matches it keeps the
        // preset's name (widgets/url_state.py apply_params)
        for (const key of Object.keys(changes)) if (sameValue(state[key], changes[key])) delete changes[key];
      }
      const label = changes.query_label;
      delete changes.query_label;
      if (Object.keys(changes).length) {
        const all = change(state, changes);
        if (all.message) {
          state = all;
          for (const [key, v] of Object.entries(changes)) {
            const one = change(state, { [key]: v });
            state = one;
            if (one.message) problems.push(`the link's setting for ${key} was refused: ${one.message}`);
          }
        } else {
          state = all;
        }
      }
      if (label !== undefined) {
        const i = resolveQuery(label, state.tokens);
        if (i === null) {
          problems.push(`the link's 'query' names no token ('${chars(label).slice(0, 40).join('')}'), so it was left as is`);
        } else {
          state = change(state, { query: i });
        }
      }
      if ('question' in lesson) state = lessonAct(state, { do: 'ask', name: lesson.question });
      if ('walk' in lesson) state = lessonAct(state, { do: 'walk-to', step: lesson.walk });
      return Object.assign({}, state, { message: problems.join('; ') });
    }

    const linkNumber = numberAtStep;
    const encodeMatrix = (M, step) => M.map((row) => row.map((x) => linkNumber(x, step)).join(',')).join(';');

    /** widgets.url_state.encode: every setting as link parameters, in the same order. */
    function encodeLink(state) {
      const params = {
        preset: state.preset || config.custom,
        tokens: state.tokens.map(quote).join(','),
        query: state.tokens[state.query],
      };
      for (const s of SWITCHES) {
        const v = state[s.name];
        const step = s.slider ? s.slider[2] : null;
        params[s.url_key] = s.kind === 'toggle' ? (v ? '1' : '0') : s.kind === 'choice' ? v : linkNumber(v, step);
      }
      params.dims = state.dims.join(',');
      // X is set by the token sliders, the W entries are typed
      for (const [key, name] of Object.entries(MATRICES)) params[key] = encodeMatrix(state[name], name === 'X' ? L.x_step : null);
      if (state.walk) params[config.lessons.link.walk] = String(state.walk);
      if (state.question && !state.revealed) params[config.lessons.link.question] = state.question;
      return params;
    }

    // --- downloads: widgets/intermediates.py ------------------------------------------------

    const TABLES = [
      ['X', 'X', 'token', 'component'], ['W_Q', 'W_Q', 'component', 'dimension'],
      ['W_K', 'W_K', 'component', 'dimension'], ['W_V', 'W_V', 'component', 'dimension'],
      ['Q', 'Q', 'token', 'dimension'], ['K', 'K', 'token', 'dimension'], ['V', 'V', 'token', 'dimension'],
      ['scores', 'scores', 'query', 'key'], ['scaled_masked', 'masked', 'query', 'key'],
      ['weights', 'weights', 'query', 'key'], ['output', 'output', 'token', 'dimension'],
    ];

    function tables(state) {
      const head = headOf(state);
      const names = (kind) => (['token', 'query', 'key'].indexOf(kind) >= 0 ? state.tokens.slice()
        : Array.from({ length: kind === 'component' ? head.C : head.d }, (_, k) => String(k)));
      return TABLES.map(([name, attr, rk, ck]) => ({ name, M: head[attr], rows: names(rk), cols: names(ck), rk, ck }));
    }

    // A Python float in JSON, as json.dumps writes it; str() of a key or a string as json.dumps(ensure_ascii=False).
    const Raw = function (text) { this.text = text; };
    const jsonNumber = (v) => (Number.isFinite(v) ? new Raw(floatRepr(v)) : v < 0 ? '-inf' : 'inf');

    function jsonString(s) {
      return '"' + String(s).replace(/[\\"\u0000-\u001f]/g, (c) => {
        const named = { '\\': '\\\\', '"': '\\"', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f' };
        return named[c] || '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0');
      }) + '"';
    }

    /** json.dumps(value, indent=1, ensure_ascii=False). */
    function pyJson(value, depth = 0) {
      const pad = (n) => '\n' + ' '.repeat(n);
      if (value instanceof Raw) return value.text;
      if (value === null) return 'null';
      if (value === true) return 'true';
      if (value === false) return 'false';
      if (typeof value === 'number') return floatRepr(value);
      if (typeof value === 'string') return jsonString(value);
      if (Array.isArray(value)) {
        if (!value.length) return '[]';
        return '[' + value.map((v) => pad(depth + 1) + pyJson(v, depth + 1)).join(',') + pad(depth) + ']';
      }
      const keys = Object.keys(value);
      if (!keys.length) return '{}';
      return '{' + keys.map((k) => pad(depth + 1) + jsonString(k) + ': ' + pyJson(value[k], depth + 1)).join(',') +
        pad(depth) + '}';
    }

    function asJson(state) {
      const opts = {};
      for (const s of SWITCHES) opts[s.name] = s.kind === 'number' ? new Raw(floatRepr(state[s.name])) : state[s.name];
      const matrices = {};
      for (const t of tables(state)) {
        matrices[t.name] = { rows: t.rows, columns: t.cols, row_kind: t.rk, column_kind: t.ck,
          values: t.M.map((line) => line.map(jsonNumber)) };
      }
      return pyJson({ tokens: state.tokens.slice(), options: opts, matrices });
    }

    // csv.writer's defaults: quote a field only when it holds a comma, a quote or a line break; \r\n ends a row.
    const csvField = (s) => (/[",\r\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s);

    function asCsv(state) {
      const lines = ['matrix,row,column,value'];
      for (const t of tables(state)) {
        t.M.forEach((line, i) => line.forEach((v, j) => {
          lines.push([t.name, t.rows[i], t.cols[j], floatRepr(v)].map(csvField).join(','));
        }));
      }
      return lines.join('\r\n') + '\r\n';
    }

    function initial() {
      const s = Object.assign({ message: '' }, config.start);
      heads.set(s, compute(s));
      return s;
    }

    return {
      initial, apply, render, headOf, sliderMove, decodeLink, applyLink, encodeLink, asJson, asCsv, bank,
    };
  }

  return { make, numberAtStep };
});
