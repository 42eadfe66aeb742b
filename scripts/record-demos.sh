#!/usr/bin/env bash
# Re-records the three demo agents' cassettes and baselines from agentci's bundled
# fake provider (scripted replies, real HTTPS, no API key, $0):
#
#   rag-agent       examples/rag-agent/fake-script.json       baselines v1-broken, v2-fixed
#   support-router  examples/support-router/fake-script.json  baseline v1
#   dev-agent       examples/dev-agent/fake-script.json       baseline v1
#
# For each recording it starts `agentci fake-provider` with the demo's script on a
# free port, runs `agentci record --upstream-override api.openai.com=<fake>
# --upstream-ca <its CA>` (the agents use the official openai SDK, which believes
# it talks to api.openai.com), saves the baseline, stops the provider and checks
# that `agentci replay --cassettes-only` passes. Safe to re-run: cassettes are
# re-recorded (record mode `all`) and baselines overwritten.
#
# Usage: scripts/record-demos.sh [rag-agent|support-router|dev-agent]...   (default: all)
# Env:   DEMO_VENV  a venv with the openai SDK (default: .venv, created from
#                   examples/requirements.txt when missing)
#        AGENTCI    the agentci binary (default: target/debug/agentci, built here)
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "record-demos: $*" >&2; exit 1; }

if [ -z "${AGENTCI:-}" ]; then
  cargo build --locked --quiet
  AGENTCI="$PWD/target/debug/agentci"
fi
[ -x "$AGENTCI" ] || die "no agentci binary at $AGENTCI"

VENV="${DEMO_VENV:-$PWD/.venv}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "creating $VENV with the openai SDK (once)..." >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r examples/requirements.txt
fi
"$VENV/bin/python" -c 'import openai' || die "$VENV has no openai SDK (pip install -r examples/requirements.txt)"
# The specs start agents as `python3 …`: this python3 must be the venv's.
export PATH="$VENV/bin:$PATH"
# The fake provider accepts any key; the SDK refuses to start without one. A real key
# in the environment is never sent anywhere: every request goes to the fake.
export OPENAI_API_KEY="sk-agentci-fake-provider"
unset OPENAI_BASE_URL OPENAI_ORG_ID OPENAI_PROJECT_ID

WORK="$(mktemp -d "${TMPDIR:-/tmp}/agentci-record-demos.XXXXXX")"
FAKE_PID=""
stop_fake() {
  if [ -n "$FAKE_PID" ]; then
    kill "$FAKE_PID" 2>/dev/null || true
    wait "$FAKE_PID" 2>/dev/null || true
    FAKE_PID=""
  fi
}
trap 'stop_fake; rm -rf "$WORK"' EXIT

# start_fake SCRIPT: starts the fake provider and sets FAKE_URL and FAKE_CA.
start_fake() {
  local out="$WORK/fake.out"
  FAKE_CA="$WORK/fake-ca.pem"
  : >"$out"
  "$AGENTCI" fake-provider --script "$1" --port 0 --ca-out "$FAKE_CA" >"$out" 2>"$WORK/fake.err" &
  FAKE_PID=$!
  FAKE_URL=""
  for _ in $(seq 1 100); do
    FAKE_URL="$(sed -n 's/^export AGENTCI_FAKE_BASE_URL=//p' "$out")"
    [ -n "$FAKE_URL" ] && break
    kill -0 "$FAKE_PID" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$FAKE_URL" ] || { cat "$WORK/fake.err" >&2; die "the fake provider did not start with $1"; }
}

# record SPEC SCRIPT ALLOWED_EXIT: one recording against a fresh fake provider.
# ALLOWED_EXIT is 0, or 1 for a knowingly broken version.
record() {
  local spec="$1" script="$2" allowed="$3" status=0
  start_fake "$script"
  echo "== agentci record --spec $spec${RAG_AGENT_VERSION:+ (RAG_AGENT_VERSION=$RAG_AGENT_VERSION)} against the fake provider at $FAKE_URL" >&2
  "$AGENTCI" record --spec "$spec" --quiet \
    --upstream-override "api.openai.com=$FAKE_URL" --upstream-ca "$FAKE_CA" || status=$?
  stop_fake
  if [ "$status" -ne 0 ] && [ "$status" -ne "$allowed" ]; then
    die "agentci record --spec $spec exited $status"
  fi
}

# The spec without its `baseline:` line, for the first recording of an agent whose
# baseline does not exist yet (a named baseline that is missing is an error).
without_baseline() {
  local copy="$WORK/$(basename "$1")"
  grep -v '^baseline:' "$1" >"$copy"
  echo "$copy"
}

# record_with_baseline AGENT VERSION: records specs/AGENT.yaml and saves VERSION.
record_with_baseline() {
  local agent="$1" version="$2" spec="specs/$1.yaml" run_spec="specs/$1.yaml"
  if grep -q '^baseline:' "$spec" && [ ! -d "baselines/$agent/$version" ]; then
    echo "note: baselines/$agent/$version does not exist yet; recording without it (save will say the run was scored with another spec: expected)" >&2
    run_spec="$(without_baseline "$spec")"
  fi
  record "$run_spec" "examples/$agent/fake-script.json" 0
  "$AGENTCI" save --spec "$spec" --version "$version" --overwrite
}

rag_agent() {
  # v1 (the broken prompt) first: it fails weather-oos on purpose, so its baseline is forced.
  RAG_AGENT_VERSION=v1 record specs/rag-agent.yaml examples/rag-agent/fake-script.json 1
  "$AGENTCI" save --spec specs/rag-agent.yaml --version v1-broken --force-save --overwrite
  # v2 last, so cassettes/rag-agent/ holds the fixed agent.
  RAG_AGENT_VERSION=v2 record specs/rag-agent.yaml examples/rag-agent/fake-script.json 0
  "$AGENTCI" save --spec specs/rag-agent.yaml --version v2-fixed --overwrite
}

demos=("$@")
[ ${#demos[@]} -gt 0 ] || demos=(rag-agent support-router dev-agent)
for demo in "${demos[@]}"; do
  case "$demo" in
    rag-agent) rag_agent ;;
    support-router | dev-agent) record_with_baseline "$demo" v1 ;;
    *) die "unknown demo $demo (rag-agent, support-router, dev-agent)" ;;
  esac
  # What a fresh clone will run: the committed cassettes must replay green.
  "$AGENTCI" replay --spec "specs/$demo.yaml" --cassettes-only --quiet ||
    die "replay --cassettes-only of specs/$demo.yaml failed after recording"
done
echo "recorded: ${demos[*]} (from the fake provider; review with git diff cassettes/ baselines/)" >&2
