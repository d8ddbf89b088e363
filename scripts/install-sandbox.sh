#!/usr/bin/env bash
# `npm run setup:sandbox`: the OS sandbox agents' commands and stdio MCP servers run in —
# Debian's bubblewrap, and socat for the bridge to its network proxy. Installed when missing and
# this user may (root with apt-get); otherwise one line says what to install.
set -euo pipefail
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v socat >/dev/null 2>&1 || missing+=(socat)
[ ${#missing[@]} -eq 0 ] && { echo "sandbox: bubblewrap $(bwrap --version | cut -d' ' -f2) and socat are installed"; exit 0; }
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
  echo "sandbox: installed ${missing[*]}"
  exit 0
fi
echo "the sandbox needs Debian packages that are not installed: ${missing[*]} (sudo apt-get install ${missing[*]})" >&2
exit 1
