#!/usr/bin/env bash
# The newcomer check: meets the project the way a new user does. Clones this repository's
# committed HEAD into a temporary folder and runs README.md's Quick start commands exactly as
# written there (read by scripts/readme-commands.sh), in order. A command with `npm start` serves
# until stopped: it runs in the background (PORT set to a free port) until the app's page answers
# on 127.0.0.1, then it is stopped. Any other command must exit 0.
#
#   scripts/newcomer-check.sh                the whole Quick start (the test command runs the whole suite)
#   scripts/newcomer-check.sh --until-start  stop once `npm start` has served the app
#
# Uncommitted changes are not checked: commit first. Not here: the prerequisites themselves
# (README "Prerequisites", checked by scripts/prerequisites.mjs in each command).
set -euo pipefail
until_start=false
case "${1:-}" in
  '') ;;
  --until-start) until_start=true ;;
  *) echo "usage: $0 [--until-start]" >&2; exit 2 ;;
esac

repo="$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)"
head="$(git -C "$repo" rev-parse HEAD)"
work="$(mktemp -d "${TMPDIR:-/tmp}/hearth-newcomer.XXXXXX")"
server=''
finish() {
  status=$?
  if [ -n "$server" ]; then kill -- "-$server" 2>/dev/null || true; fi
  if [ "$status" -eq 0 ]; then rm -rf "$work"; else echo "newcomer check FAILED; the clone is kept in $work" >&2; fi
}
trap finish EXIT

git clone --quiet --no-checkout "$repo" "$work/hearth"
git -C "$work/hearth" checkout --quiet --detach "$head"
cd "$work/hearth"
mapfile -t commands < <(scripts/readme-commands.sh quick-start)
echo "newcomer check of ${head:0:12} in $work/hearth: ${#commands[@]} Quick start commands"

free_port() { node -e "const s = require('net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); })"; }

# Runs a serving command in its own process group until its page answers, then stops it.
serve_once() {
  local command="$1" port
  port="$(free_port)"
  PORT="$port" setsid bash -c "$command" >"$work/start.log" 2>&1 &
  server=$!
  for _ in $(seq 600); do
    if curl -fsS "http://127.0.0.1:$port/" 2>/dev/null | grep -q '<title>'; then
      echo "served the app on http://127.0.0.1:$port/"
      kill -- "-$server"
      wait "$server" 2>/dev/null || true
      server=''
      return 0
    fi
    if ! kill -0 "$server" 2>/dev/null; then
      cat "$work/start.log" >&2
      echo "\`$command\` exited before serving the app" >&2
      return 1
    fi
    sleep 1
  done
  cat "$work/start.log" >&2
  echo "\`$command\` did not serve the app within 10 minutes" >&2
  return 1
}

for command in "${commands[@]}"; do
  echo "\$ $command"
  if [[ $command == *'npm start'* ]]; then
    serve_once "$command"
    if $until_start; then exit 0; fi
  else
    bash -c "$command"
  fi
done
echo "newcomer check passed: every Quick start command ran as written"
