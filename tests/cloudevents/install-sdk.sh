#!/usr/bin/env bash
# Installs the CloudEvents SDK for JavaScript (the npm package cloudevents)
# into DIR/node_modules, for tests/integration/cloudevents_sdk_test.cc, an
# implementation of CloudEvents that is not this project's. Nothing is
# installed when DIR already holds the pinned version.
# Node.js and npm come from scripts/lib/deps.sh; CI reaches Debian's archive
# and the npm registry.
# Usage: tests/cloudevents/install-sdk.sh DIR
set -euo pipefail
dir=${1:?usage: install-sdk.sh DIR}
# 9.0.0 runs on Debian 12's Node.js 18 and on 20 (its engines: >=18 <=22).
version=9.0.0
installed=$dir/node_modules/cloudevents/package.json
if [[ -f $installed ]] && grep -q "\"version\": \"$version\"" "$installed"; then
  echo "cloudevents $version is installed in $dir"
  exit 0
fi
for tool in node npm; do
  command -v "$tool" >/dev/null || {
    echo "install-sdk.sh: $tool not found; scripts/lib/deps.sh installs it (apt-get install nodejs npm)" >&2
    exit 1
  }
done
mkdir -p "$dir"
# A package.json of its own: npm installs here, not in a parent directory's project.
[[ -f $dir/package.json ]] || echo '{"name": "outbox-relay-cloudevents-test", "private": true}' >"$dir/package.json"
npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error "cloudevents@$version"
grep -q "\"version\": \"$version\"" "$installed"
echo "cloudevents $version installed in $dir (node $(node --version))"
