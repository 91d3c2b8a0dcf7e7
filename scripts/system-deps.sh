#!/usr/bin/env bash
# Install the Debian packages named as arguments (the Makefile's system-deps target names them), only
# when missing. The tests start their own servers from Python packages; chromium is for the HTML report
# test (Playwright drives /usr/bin/chromium: no browser is ever downloaded); redis-server for the stream
# consumer tests, which start their own on a free loopback port.
set -euo pipefail
needed=()
for pkg in "$@"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || needed+=("$pkg")
done
if [ ${#needed[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${needed[@]}"
fi
