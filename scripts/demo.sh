#!/usr/bin/env bash
# Builds agentci, installs the demo agent's one dependency (the official openai
# SDK) into .venv/, and replays the rag-agent demo from its committed cassettes:
# no network, no API key, $0. Extra arguments go to `agentci replay`.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --locked --quiet
if [ ! -x .venv/bin/python ]; then
  echo "creating .venv with the openai SDK (once)..." >&2
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r examples/requirements.txt
fi
PATH="$PWD/.venv/bin:$PATH" exec ./target/debug/agentci replay --spec specs/rag-agent.yaml "$@"
