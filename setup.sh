#!/usr/bin/env bash
# Prepare a fresh Debian machine (as root) to serve and test the explorer:
# Debian's Chromium (browser tests) and Firefox ESR (the second browser for layout), nginx (the
# multi-process demo), Node.js (the JavaScript parity test), npm (axe-core for the accessibility tests and
# puppeteer-core, which drives Firefox, into tests/node), redis-server and zbar-tools (the classroom), then
# a virtual environment in .venv with the pinned Python packages.  Safe to run again: it skips what is already there.
set -euo pipefail
cd "$(dirname "$0")"

need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v firefox-esr >/dev/null 2>&1 || need+=(firefox-esr)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
# the class bus between classroom server processes, and the QR decoder its test reads the code with
command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ] || need+=(redis-server)
command -v zbarimg >/dev/null 2>&1 || need+=(zbar-tools)
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
# An older BokehJS (from PyPI's Bokeh 3.4.3 wheel) for the tests that embed the explorer beside another Bokeh.
.venv/bin/python tests/old_bokehjs.py
# axe-core, injected into pages by the accessibility tests, and puppeteer-core, which drives Firefox
# (tests/node/package-lock.json pins both).
if [ ! -f tests/node/node_modules/.package-lock.json ] \
  || [ tests/node/package-lock.json -nt tests/node/node_modules/.package-lock.json ]; then
  npm ci --prefix tests/node --no-audit --no-fund --silent
fi
echo "setup: ready (.venv)"
