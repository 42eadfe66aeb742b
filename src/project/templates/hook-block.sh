# >>> agentci >>> written by `agentci install-hooks`; skip once with AGENTCI_SKIP_HOOK=1 or `git push --no-verify`
if [ "${AGENTCI_SKIP_HOOK:-0}" != 1 ]; then
  if ! command -v agentci >/dev/null 2>&1; then
    echo "agentci: not on PATH; install it (cargo install agentci) or skip once with AGENTCI_SKIP_HOOK=1" >&2
    exit 1
  fi
  agentci_status=0
  for agentci_spec in $(grep -l '^agent:' specs/*.yaml specs/*.yml 2>/dev/null); do
    @REPLAY@ --spec "$agentci_spec" || agentci_status=1
  done
  if [ "$agentci_status" != 0 ]; then
    echo "agentci: the replay failed, push stopped (fix or re-record; skip once with AGENTCI_SKIP_HOOK=1)" >&2
    exit 1
  fi
fi
# <<< agentci <<<
