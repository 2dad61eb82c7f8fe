#!/usr/bin/env bash
# docs/outbox-relay.8, the manual page the Debian package installs, against
# the binary's own help: every command and subcommand that `outbox-relay help`
# lists, and every option of each command's help, appears in the page (in
# the SYNOPSIS, COMMANDS or OPTIONS), and man(1) renders the page without a
# warning. A command or option added to the CLI without a line in the page
# fails here.
# Usage: tests/ops/check_manpage.sh RELAY_BINARY
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/lib.sh"
bin="${1:?usage: $0 RELAY_BINARY}"
page="$root/docs/outbox-relay.8"
need man "man (Debian package man-db) is needed to render the page"

# The page's text as a reader types it: roff's \- is -, font escapes go.
text=$(sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\&//g' "$page")

# Subcommands of the help of COMMAND... (the lines under "Subcommands:").
subcommands() {
  "$bin" "$@" --help | awk '/^Subcommands:/{s=1; next} s && /^  [a-z]/{print $1} /^$/{s=0}' |
    sort -u
}
# Long and short options of the help of COMMAND... (its "Options:" block; the
# inherited -c and -V are the program's).
options() {
  "$bin" "$@" --help | awk '/^Options:/{s=1; next} /^$/{s=0} s' |
    grep -oE '^ +-[A-Za-z]|^ +--[A-Za-z][A-Za-z-]*|,--?[A-Za-z][A-Za-z-]*' | tr -d ' ,' | sort -u
}

commands=("")
for c in $(subcommands); do
  commands+=("$c")
  for s in $(subcommands "$c"); do commands+=("$c $s"); done
done
for c in "${commands[@]:1}"; do
  # In bold at the start of a line: the COMMANDS item (.TP, .B check) or the
  # SYNOPSIS (.B dead list).
  if grep -qE "^\.B $c( |\$)" <<<"$text"; then
    echo "ok    command '$c' is in the page"
  else
    echo "FAIL  command '$c' (outbox-relay help) is not in $page"; fail=1
  fi
done
for c in "${commands[@]}"; do
  # shellcheck disable=SC2086  # the words are the command's path
  for o in $(options $c); do
    if grep -qE -- "(^|[^A-Za-z-])$o([^A-Za-z-]|$)" <<<"$text"; then
      echo "ok    option $o of '${c:-outbox-relay}' is in the page"
    else
      echo "FAIL  option $o of '${c:-outbox-relay}' is not in $page"; fail=1
    fi
  done
done

warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null || true)
if [[ -n $warnings ]]; then
  echo "FAIL  man --warnings reports:"; sed 's/^/      /' <<<"$warnings"; fail=1
else
  echo "ok    man renders the page without a warning"
fi
if ((fail)); then echo "check_manpage: FAILED"; exit 1; fi
echo "check_manpage: OK"
