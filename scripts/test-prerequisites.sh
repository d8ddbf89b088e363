#!/usr/bin/env bash
# Run by `npm test` (pretest): the programs the suite drives that npm cannot install, from
# Debian's packages. Chromium for the web console's browser tests (playwright-core drives
# /usr/bin/chromium; no browser is ever downloaded), promtool (package `prometheus`) for the
# metrics test, and the OS sandbox of agents' commands: bubblewrap, and socat for its network
# bridge (`npm run setup:sandbox` installs those two alone, for a machine that serves). Installed when missing and this user may (root with apt-get); otherwise one line
# says what to install, and the tests do not start.
set -euo pipefail

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v socat >/dev/null 2>&1 || missing+=(socat)
# ssh-keygen: people sign their own decisions with `ssh-keygen -Y sign`, and the tests do too.
command -v ssh-keygen >/dev/null 2>&1 || missing+=(openssh-client)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian packages the tests need: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
  exit 0
fi
echo "the tests need Debian packages that are not installed: ${missing[*]} (sudo apt-get install ${missing[*]})" >&2
exit 1
