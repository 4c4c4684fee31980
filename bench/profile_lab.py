"""Where a served lab move's browser time goes: the BokehJS layout passes each model change sets off.

Serves the app, opens the Training lab tab and wraps, on the live views' prototypes, the entry points
that re-lay out a whole Bokeh root (LayoutDOMView.compute_layout called on the root, from
invalidate_layout or rerender) and a plot's own repaint (PlotView.paint). Each root pass is charged to the
model whose change started it (type and name). Then it makes run switches and snapshot moves and prints,
per kind of move, the passes a move sets off and their time, with the times from the move to the server's
reply (the new weights arriving) and to the next frame.

    python bench/profile_lab.py [--moves 10] [--stacks]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.sync_api import sync_playwright  # noqa: E402

from bench.bench_lab import RUNS, open_served_lab  # noqa: E402
from tests.conftest import CHROMIUM, CHROMIUM_FLAGS, serve  # noqa: E402

INSTRUMENT_JS = """
() => {
  let doc = null;
  for (const d of Bokeh.documents) if (d.get_model_by_name('lab-snapshot')) doc = d;
  const views = [];
  const walk = (v) => { views.push(v); for (const c of (v.children ? v.children() : [])) walk(c); };
  for (const v of Bokeh.index) walk(v);
  const owner = (obj, name) => {
    for (let p = Object.getPrototypeOf(obj); p; p = Object.getPrototypeOf(p))
      if (Object.prototype.hasOwnProperty.call(p, name)) return p;
    return null;
  };
  const log = window.__lablog = [];
  let cause = null, depth = 0;
  const label = (v) => `${v.model.type}${v.model.name ? ':' + v.model.name : ''}`;
  const wrap = (proto, name, fn) => {
    if (!proto || proto['__w_' + name]) return;
    proto['__w_' + name] = true;
    const inner = proto[name];
    proto[name] = function (...a) { return fn.call(this, inner, a); };
  };
  // Where an uncharged pass came from (the first BokehJS frames outside these wrappers), on request.
  const origin = () => window.__stacks ? ' ' + new Error().stack.split('\\n').slice(1)
    .filter(l => !/evaluate|compute_layout|\\.eval /.test(l)).slice(0, 5)
    .map(l => l.trim().split(' ')[1]).join(' < ') : '';
  const seen = new Set();
  for (const v of views) {
    for (const name of ['invalidate_layout', 'rerender', '_invalidate_layout_if_needed']) {
      const p = owner(v, name);
      if (!p || seen.has(p[name])) continue;
      seen.add(p[name]);
      wrap(p, name, function (inner, a) {
        const outer = cause === null;
        if (outer) cause = `${name} ${label(this)}`;
        try { return inner.apply(this, a); } finally { if (outer) cause = null; }
      });
    }
    for (const name of ['compute_layout', 'paint']) {
      const p = owner(v, name);
      if (!p || seen.has(p[name])) continue;
      seen.add(p[name]);
      wrap(p, name, function (inner, a) {
        const root = name === 'paint' || !(this.parent && this.parent.compute_layout);
        if (!root || depth > 0) return inner.apply(this, a);
        depth++;
        const t0 = performance.now();
        try { return inner.apply(this, a); } finally {
          depth--;
          log.push({what: name === 'paint' ? `paint ${label(this)}` : `layout of ${label(this)}`,
                    cause: cause || '(other)' + origin(), ms: performance.now() - t0});
        }
      });
    }
  }
  // The server's reply applied to the document: every model change and the handlers it sets off.
  for (const name of ['apply_json_patch']) {
    const p = owner(doc, name);
    wrap(p, name, function (inner, a) {
      const t0 = performance.now();
      try { return inner.apply(this, a); } finally {
        const events = `${a[0].events.length} events`;
        log.push({what: 'apply the reply', cause: events, ms: performance.now() - t0});
      }
    });
  }
  return views.length;
}
"""

MOVE_JS = """
async ([kind, runs]) => {
  let doc = null;
  for (const d of Bokeh.documents) if (d.get_model_by_name('lab-snapshot')) doc = d;
  const slider = doc.get_model_by_name('lab-snapshot'), select = doc.get_model_by_name('lab-run');
  const src = doc.get_model_by_name('lab-weights-cells');
  const frame = () => new Promise(r => requestAnimationFrame(() => r()));
  await frame();
  window.__lablog.length = 0;
  const changed = new Promise(r => {
    const c = () => { src.change.disconnect(c); r(); };
    src.change.connect(c);
  });
  const t0 = performance.now();
  if (kind === 'snapshot') slider.value = (slider.value + 7) % (slider.end + 1);
  else select.value = runs[(runs.indexOf(select.value) + 1) % runs.length];
  await changed;
  const arrived = performance.now() - t0;
  await frame();
  const drawn = performance.now() - t0;
  await new Promise(r => setTimeout(r, 50));  // the rest of the server's reply, if any
  await frame();
  return {arrived, drawn, log: window.__lablog.slice()};
}
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moves", type=int, default=10)
    parser.add_argument("--stacks", action="store_true", help="name where uncharged passes came from")
    args = parser.parse_args(argv)
    with sync_playwright() as p, serve("app/main.py") as base:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = open_served_lab(browser, base)
        if args.stacks:
            page.evaluate("() => { window.__stacks = true; Error.stackTraceLimit = 60; }")
        print("views instrumented:", page.evaluate(INSTRUMENT_JS))
        for kind in ("snapshot", "run"):
            agg: dict[tuple[str, str], list[float]] = {}
            arrived, drawn = [], []
            for _ in range(args.moves):
                out = page.evaluate(MOVE_JS, [kind, RUNS])
                arrived.append(out["arrived"])
                drawn.append(out["drawn"])
                for e in out["log"]:
                    agg.setdefault((e["what"], e["cause"]), []).append(e["ms"])
            med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
            print(
                f"\n{kind}: {args.moves} moves; median ms from the set to the new weights' arrival "
                f"{med(arrived):.1f}, to the next frame {med(drawn):.1f}; layout passes and paints per move:"
            )
            for (what, cause), ms in sorted(agg.items(), key=lambda kv: -sum(kv[1])):
                print(f"  {sum(ms) / args.moves:7.1f} ms  {len(ms) / args.moves:4.1f}x  {what}  <- {cause}")
        browser.close()
    print(json.dumps(Path("/proc/loadavg").read_text().strip()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
