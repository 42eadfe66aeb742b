#!/usr/bin/env bash
# Installs what benches/proxy.rs compares against: wrk (Debian) and mitmproxy (PyPI, in a venv).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }
if [ ! -x target/bench-venv/bin/mitmdump ]; then
  python3 -m venv target/bench-venv
  target/bench-venv/bin/pip install -q 'mitmproxy==11.0.2'
fi
echo "ready: wrk=$(command -v wrk) mitmdump=target/bench-venv/bin/mitmdump"
