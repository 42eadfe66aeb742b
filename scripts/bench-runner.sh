#!/usr/bin/env bash
# The runner benchmark in one command: installs the pinned promptfoo it compares
# against (npm, into target/bench-promptfoo; no global install), then runs
# benches/runner.rs in the release (bench) profile. See docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
PROMPTFOO_VERSION=0.121.20 # keep in step with PROMPTFOO_VERSION in benches/runner.rs
dir=target/bench-promptfoo
if [ "$(node -p "require('./$dir/node_modules/promptfoo/package.json').version" 2>/dev/null)" != "$PROMPTFOO_VERSION" ]; then
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo '{"private": true}' > "$dir/package.json"
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error "promptfoo@$PROMPTFOO_VERSION")
fi
exec cargo bench --bench runner "$@"
