#!/usr/bin/env bash
# `npm test`: build once, typecheck, lint, check the formatting, the unit tier, then the broker tiers
# (integration, e2e, interop) in parallel lanes (scripts/run-lanes.mjs; LANES=1
# runs them one file at a time). Every part runs even if an earlier one failed,
# so one run reports everything; the exit status is non-zero if any failed.
set -u
cd "$(dirname "$0")/.."
npm run build || exit 1
status=0
echo "=== typecheck (sources, tests, benches) ==="
npx tsc -p tsconfig.test.json || status=1
echo "=== lint (eslint: layers, typescript-eslint) ==="
npx eslint . || status=1
echo "=== format (prettier --check; npm run format writes it) ==="
npx prettier --check --log-level warn . || status=1
echo "=== test:unit ==="
npm run test:unit || status=1
echo "=== test:integration, test:e2e, test:interop (lanes) ==="
node scripts/run-lanes.mjs test/integration test/e2e test/interop || status=1
exit $status
