/*
 * The lesson's binding: the walk's and the questions' controls (widgets/lesson_view.py), their text, the
 * figures' spotlights, and what a screen reader is told. static/explorer_page.js uses it where it draws a
 * state: `bind` (the export, every action) and `follow` (a served page, the student's own presses, drawn
 * before the server's answer). The logic itself is static/lessons.js, run by static/explorer.js.
 */
(function () {
  'use strict';

  // Each lesson button and the action it stands for (widgets/explorer.py _wire_lesson has the same).
  const BUTTONS = {
    walk_open: 'walk-open', walk_next: 'walk-next', walk_prev: 'walk-prev', walk_leave: 'walk-leave',
    walk_offer: 'walk-offer', reveal: 'reveal', next_question: 'next-question', close_question: 'close-question',
  };
  const SAY_AFTER_MS = 600; // what a screen reader is told waits until a drag has settled

  const same = (a, b) => a === b || (Array.isArray(a) && Array.isArray(b) && a.length === b.length &&
    a.every((v, k) => v === b[k]));

  /** A figure's spotlight source data: its blocks' dimming rectangles side by side (widgets/matrix_plot.py
   * spotlight_side_by_side). */
  function spotlightOf(spotlight, blocks, nCols, gap) {
    const out = { x: [], y: [], width: [], height: [] };
    blocks.forEach((name, k) => {
      const rects = spotlight[name];
      const shift = k * (nCols + gap);
      rects.x.forEach((x) => out.x.push(x + shift));
      for (const column of ['y', 'width', 'height']) out[column].push(...rects[column]);
    });
    return out;
  }

  /** show(lessonView): the three texts (`writeHtml(name)` gives the writer of each) and which controls are on
   * show, as widgets/lesson_view.py LessonPanel.show writes them; `put(model, attrs)` writes (with or without
   * syncing to a server). */
  function shower(panel, put, writeHtml) {
    const texts = ['question', 'answer', 'walk'];
    const writers = Object.fromEntries(texts.map((name) => [name, writeHtml(name)]));
    const set = (model, attrs) => {
      const changed = {};
      for (const [k, v] of Object.entries(attrs)) if (!same(model[k], v)) changed[k] = v;
      if (Object.keys(changed).length) put(model, changed);
    };
    // Shown or hidden by its inline style, not `visible` (widgets/lesson_view.py display says why).
    const display = (model, on) => {
      const styles = model.styles instanceof Map ? Object.fromEntries(model.styles) : Object.assign({}, model.styles);
      const want = on ? null : 'none';
      if ((styles.display === undefined ? null : styles.display) !== want) {
        styles.display = want;
        put(model, { styles });
      }
    };
    return function show(view) {
      const L = panel();
      if (!L || !L.question) return;
      const c = view.controls;
      const question = Boolean(c.question);
      const choose = question && c.kind !== 'estimate';
      for (const name of texts) writers[name](view[name]);
      display(L.walk_open, !c.walk);
      display(L.walk_row, c.walk);
      set(L.walk_prev, { disabled: !c.prev });
      set(L.walk_next, { disabled: !c.next });
      display(L.walk_offer, Boolean(c.offer));
      if (c.offer) set(L.walk_offer, { label: c.offer });
      display(L.choices, choose);
      if (choose) set(L.choices, { labels: c.choices });
      display(L.estimate, question && c.kind === 'estimate');
      display(L.answer_row, question);
      display(L.asking, !c.revealed);
      display(L.answered, c.revealed);
    };
  }

  /** The controls' values from the state (LessonPanel.sync): the question picked; on a new question or its
   * answer (`asked`), the prediction's controls. `kind`: the open question's. */
  function sync(L, s, asked, kind, start) {
    if (L.ask.value !== s.question) L.ask.value = s.question;
    if (!asked) return;
    const choice = s.revealed && kind !== 'estimate' && s.prediction !== null ? s.prediction : null;
    if (L.choices.active !== choice) L.choices.active = choice;
    const estimate = kind === 'estimate' && typeof s.prediction === 'number' ? s.prediction : start;
    if (L.estimate.value !== estimate) L.estimate.value = estimate;
  }

  /** press(action) on a click of each lesson button; Check's action carries the prediction its control holds
   * (`kind()`: the open question's kind). */
  function wire(L, press, kind) {
    for (const [name, action] of Object.entries(BUTTONS)) L[name].on_event('button_click', () => press({ do: action }));
    L.check.on_event('button_click', () => press({
      do: 'predict', value: kind() === 'estimate' ? L.estimate.value : L.choices.active,
    }));
  }

  function focusModel(model) {
    const view = window.Bokeh && Bokeh.index ? Bokeh.index.find_one(model) : null;
    if (!view) return;
    const inside = view.shadow_el || view.el;
    const el = view.button_el || (inside && inside.querySelector('button, select, input, .noUi-handle'));
    if (el && typeof el.focus === 'function') el.focus();
  }

  /** After a press that hides or disables the button it was made with, the focus goes where the lesson goes
   * on: the walk's Next step (Leave the walk after the last step), the walk's opening button, Next question,
   * the answers, the question picker. `s`: the state after the press. */
  function focusAfter(L, action, s, kind) {
    let to = null;
    if (action === 'walk-open' || action === 'walk-offer') to = s.walk ? L.walk_next : null;
    else if (action === 'walk-next') to = () => (L.walk_next.disabled ? L.walk_leave : null);
    else if (action === 'walk-prev') to = () => (L.walk_prev.disabled ? L.walk_next : null);
    else if (action === 'walk-leave') to = L.walk_open;
    else if (action === 'predict' || action === 'reveal') to = s.revealed ? L.next_question : null;
    else if (action === 'next-question') to = kind === 'estimate' ? L.estimate : L.choices;
    else if (action === 'close-question') to = L.ask;
    if (!to) return;
    requestAnimationFrame(() => setTimeout(() => { // once the layout shows it (and the buttons say what is off)
      const model = typeof to === 'function' ? to() : to;
      if (model) focusModel(model);
    }, 0));
  }

  /** say(text): a polite status line in the steps' area tells a screen reader what the lesson says, once it
   * has stayed the same for SAY_AFTER_MS (a drag during the walk changes its numbers at every move). */
  function announcer() {
    let line = null;
    let timer = null;
    let said = '';
    return function say(text) {
      clearTimeout(timer);
      if (!text || text === said) return;
      timer = setTimeout(() => {
        if (line === null) {
          line = document.createElement('div');
          line.className = 'lesson-status';
          line.setAttribute('role', 'status');
          line.style.cssText = 'position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);' +
            'white-space:nowrap';
          (document.querySelector('.area-readout') || document.body).appendChild(line);
        }
        said = text;
        line.textContent = text;
      }, SAY_AFTER_MS);
    };
  }

  window.HeadLessonPage = { BUTTONS, spotlightOf, shower, sync, wire, focusAfter, announcer };
})();
