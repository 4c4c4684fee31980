// static/bokeh_seam.js in Node, with a stand-in window and document (tests/test_seam.py): its guard and its
// loader, in each of the ways BokehJS can arrive. Prints one JSON object.
const fs = require('fs');
const vm = require('vm');

const code = fs.readFileSync(process.argv[2], 'utf8');
const WRITTEN_FOR = /const WRITTEN_FOR = "([^"]+)"/.exec(code)[1];

// A page: its document ready state, and a BokehJS of `version` there from the start or not.
function page(readyState, version, now) {
  const errors = [];
  const marks = [];
  const listeners = [];
  const bokeh = { version, require: (name) => { throw new Error(`no module ${name} here`); } };
  const window = { Bokeh: now ? bokeh : undefined };
  const document = {
    readyState,
    addEventListener: (name, f) => listeners.push([name, f]),
    createElement: () => ({}),
  };
  window.document = document;
  const context = vm.createContext({
    window, document, setInterval, clearInterval, setTimeout, Date, queueMicrotask,
    performance: { mark: (name) => marks.push(name), now: () => 0 },
    console: { error: (...args) => errors.push(args.map(String).join(' ')) },
  });
  vm.runInContext(code, context);
  const arrive = () => { window.Bokeh = bokeh; };
  const loaded = () => listeners.filter(([n]) => n === 'DOMContentLoaded').forEach(([, f]) => f());
  return { window, errors, marks, context, arrive, loaded };
}

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

(async () => {
  const out = { writtenFor: WRITTEN_FOR };

  // Another BokehJS: nothing installed, one error, and every question answered "no".
  const other = page('complete', '0.0.1', true);
  const seam = other.window.BokehSeam;
  out.other = {
    on: seam.on, patches: Object.keys(seam.patches).length, errors: other.errors, marks: other.marks,
    documentFromJson: seam.documentFromJson({}), ndarray: seam.ndarray([1], 1, 1),
    writeDivText: seam.writeDivText({}, 'x', {}),
  };
  seam.install();
  out.other.errorsAfterAnotherInstall = other.errors.length;
  vm.runInContext(code, other.context); // loaded twice (two explorers on a page, a notebook run twice)
  out.other.definedOnce = other.window.BokehSeam === seam;

  // The version it was written for, but without what it patches (a stand-in): each piece says so.
  const same = page('complete', WRITTEN_FOR, true);
  out.same = { on: same.window.BokehSeam.on, patches: same.window.BokehSeam.patches, errors: same.errors,
    marks: same.marks };

  // A page still loading: nothing before DOMContentLoaded, then installed once BokehJS is there.
  const loading = page('loading', WRITTEN_FOR, false);
  const before = loading.marks.length;
  loading.arrive();
  loading.loaded();
  out.loading = { before, after: loading.marks };

  // A notebook: the page loaded, BokehJS arrives 120 ms later and is found by looking again.
  const notebook = page('complete', WRITTEN_FOR, false);
  setTimeout(notebook.arrive, 120);
  await sleep(400);
  out.notebook = notebook.marks;

  console.log(JSON.stringify(out));
})();
