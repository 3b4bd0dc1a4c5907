#!/usr/bin/env bash
# `npm test`: build once, typecheck, lint, check the formatting, the unit tier, then the broker tiers
# (integration, e2e, interop) in parallel lanes (scripts/run-lanes.mjs; LANES=1
# runs them one file at a time). Every part runs even if an earlier one failed,
# so one run reports everything; the exit status is non-zero if any failed.
set -u
cd "$(dirname "$0")/.."
npm run build || exit 1
status=0
# The typecheck, the lint and the format check run side by side
# on the cores, each one's output printed whole when all three are done.
checks=$(mktemp -d)
in_background() {
  local name=$1
  shift
  ("$@" >"$checks/$name.out" 2>&1; echo $? >"$checks/$name.rc") &
}
report() {
  echo "=== $2 ==="
  cat "$checks/$1.out"
  [ "$(cat "$checks/$1.rc")" = 0 ] || status=1
}
# The type tests are in both: test/types/*.ts with the tests, test/types/*.js (checkJs) against the built .d.ts.
typecheck() {
  local rc=0
  npx tsc -p tsconfig.test.json || rc=1
  npx tsc -p tsconfig.types.json || rc=1
  return $rc
}
in_background typecheck typecheck
in_background lint npx eslint .
in_background format npx prettier --check --log-level warn .
wait
report typecheck "typecheck (sources, tests, benches, type tests)"
report lint "lint (eslint: layers, typescript-eslint)"
report format "format (prettier --check; npm run format writes it)"
rm -rf "$checks"
echo "=== test:unit ==="
npm run test:unit || status=1
echo "=== test:integration, test:e2e, test:interop (lanes) ==="
node scripts/run-lanes.mjs test/integration test/e2e test/interop || status=1
exit $status
