#!/usr/bin/env bash
# The suite runs real servers and tools from Debian's packages, each started by the tests
# themselves in a temp directory on a free loopback port (never as a system service):
#   chromium (docs test), postgresql (store, queue), redis-server (rate limits),
#   ceph-mon ceph-osd radosgw (S3), prometheus (its promtool, for the alert rules).
# Installs whatever is missing in one apt-get run when we may (root with apt-get), with service
# start-up denied; otherwise names what to install and fails. Usage: ensure-packages.sh [package…]
set -euo pipefail
declare -A PROBE=(
  [chromium]=/usr/bin/chromium
  [postgresql]=/usr/lib/postgresql/15/bin/postgres
  [redis-server]=/usr/bin/redis-server
  [ceph-mon]=/usr/bin/ceph-mon
  [ceph-osd]=/usr/bin/ceph-osd
  [radosgw]=/usr/bin/radosgw
  [prometheus]=/usr/bin/promtool
)
wanted=("$@")
[ ${#wanted[@]} -eq 0 ] && wanted=("${!PROBE[@]}")
missing=()
for p in "${wanted[@]}"; do [ -x "${PROBE[$p]}" ] || missing+=("$p"); done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "Installing from Debian for the test suite: ${missing[*]} (apt-get; services are not started)"
  # A policy-rc.d that exits 101 keeps dpkg from starting the packages' system services.
  policy=/usr/sbin/policy-rc.d
  restore=""
  if [ ! -e "$policy" ]; then printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; restore=1; fi
  # One apt-get at a time on this machine (parallel test files may ask together).
  exec 9>/var/lock/backup-service-apt.lock
  flock 9
  still=()
  for p in "${missing[@]}"; do [ -x "${PROBE[$p]}" ] || still+=("$p"); done
  if [ ${#still[@]} -gt 0 ]; then
    apt-get update -qq
    servers=()
    for p in "${still[@]}"; do
      # Chromium takes its recommended fonts; the servers need none of theirs.
      if [ "$p" = chromium ]; then DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; else servers+=("$p"); fi
    done
    [ ${#servers[@]} -gt 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${servers[@]}" >/dev/null
  fi
  [ -n "$restore" ] && rm -f "$policy"
  exit 0
fi
echo "The test suite needs Debian packages that are missing: sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
exit 1
