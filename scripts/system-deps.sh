#!/usr/bin/env bash
# Install the Debian packages the test suite needs. Currently none: the tests start their own
# servers (the demo agent, scripted OpenAI-compatible and SSE servers) from Python packages.
# Later capabilities add theirs here (e.g. redis-server), installed only when missing.
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
