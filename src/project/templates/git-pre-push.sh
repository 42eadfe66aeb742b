#!/bin/sh
# pre-push: replays the agent specs under specs/ from their committed cassettes
# before anything is pushed (no network, $0). Written by `agentci install-hooks`.
chained="$(dirname "$0")/pre-push.agentci-chained"
if [ -x "$chained" ]; then
  # The hook that was here before runs first, with the same arguments and refs.
  refs=$(cat)
  if [ -n "$refs" ]; then printf '%s\n' "$refs"; fi | "$chained" "$@" || exit $?
fi
