#!/usr/bin/env bash
# The docs test drives Debian's Chromium through playwright-core (no browser is downloaded).
# Install it when it is missing and we may (root with apt-get); otherwise say what to install.
set -euo pipefail
[ -x /usr/bin/chromium ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "Installing Debian's chromium for the docs browser test (apt-get)…"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  exit 0
fi
echo "The docs test needs Chromium at /usr/bin/chromium: sudo apt-get install -y chromium" >&2
exit 1
