#!/usr/bin/env bash
# Prints commands exactly as README.md writes them, so that CI (.ci/run) and the newcomer check
# (scripts/newcomer-check.sh) run what a reader is told to run instead of copies that drift:
#   scripts/readme-commands.sh quick-start   each line of the ```sh blocks under "## Quick start"
#   scripts/readme-commands.sh apt           the `apt-get install ...` command under "## Prerequisites"
# Not here: running them.
set -euo pipefail
readme="$(dirname "$0")/../README.md"

section() { awk -v heading="## $1" '$0 == heading { on = 1; next } /^## / { on = 0 } on' "$readme"; }

case "${1:-}" in
  quick-start) section 'Quick start' | awk '/^```sh$/ { code = 1; next } /^```/ { code = 0 } code && NF' ;;
  apt) section 'Prerequisites' | grep -o '`[^`]*apt-get install [^`]*`' | tr -d '`' ;;
  *) echo "usage: $0 quick-start|apt" >&2; exit 2 ;;
esac
