// The second browser for layout (tests/test_firefox.py): Debian's Firefox ESR, driven by puppeteer-core over
// WebDriver BiDi. One page, opened at the first width and widened step by step, as a reader's window is.
// stdin: {"url", "widths": [[w, h], ...], "checks": {name: "<a JS function, called without arguments>"},
//         "ready": "<a JS function: true once the page is whole>", "move": "<a JS function: makes a move>",
//         "moved": "<a JS function: true once the move is drawn>", "shots": "<folder>"}
// stdout: {"widths": [{"width", "checks": {name: result}}], "moved": bool, "errors": [...]}
'use strict';
const path = require('path');
const puppeteer = require(path.join(__dirname, 'node', 'node_modules', 'puppeteer-core'));

const call = (fn) => `(${fn})()`;

async function main() {
  const job = JSON.parse(require('fs').readFileSync(0, 'utf8'));
  const browser = await puppeteer.launch({
    browser: 'firefox',
    executablePath: process.env.FIREFOX || '/usr/bin/firefox-esr',
    headless: true,
    protocol: 'webDriverBiDi',
  });
  const errors = [];
  try {
    const page = await browser.newPage();
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warn') errors.push(m.text()); });
    const [w0, h0] = job.widths[0];
    await page.setViewport({ width: w0, height: h0 });
    await page.goto(job.url);
    await page.waitForFunction(call(job.ready), { timeout: 60000, polling: 100 });
    const widths = [];
    for (const [width, height] of job.widths) {
      await page.setViewport({ width, height });
      await page.evaluate('window.scrollTo(0, 0)');
      await new Promise((r) => setTimeout(r, 500)); // BokehJS lays the roots out again
      const checks = {};
      for (const [name, fn] of Object.entries(job.checks)) checks[name] = await page.evaluate(call(fn));
      if (job.shots) await page.screenshot({ path: path.join(job.shots, `firefox-${width}.png`), fullPage: true });
      widths.push({ width, checks });
    }
    await page.evaluate(call(job.move));
    let moved = true;
    try {
      await page.waitForFunction(call(job.moved), { timeout: 20000, polling: 100 });
    } catch (err) {
      moved = false;
    }
    process.stdout.write(JSON.stringify({ widths, moved, errors }));
  } finally {
    await browser.close();
  }
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack));
  process.exit(1);
});
