#!/usr/bin/env bash
# `npm test`: build once, then every tier, each even if an earlier one failed,
# so one run reports everything; the exit status is non-zero if any tier failed.
set -u
cd "$(dirname "$0")/.."
npm run build || exit 1
status=0
echo "=== typecheck (sources, tests, benches) ==="
npx tsc -p tsconfig.test.json || status=1
for tier in unit integration e2e interop; do
  echo "=== test:$tier ==="
  npm run "test:$tier" || status=1
done
exit $status
