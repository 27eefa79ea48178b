#!/usr/bin/env bash
# The kill soaks with more kills than the suite's 50 per engine: a redb writer SIGKILLed inside
# its commit and a PostgreSQL writer SIGKILLed inside its transaction (as pg_stat_activity shows
# it), KILLS times each (default 200), each kill followed by the checks that nothing
# acknowledged is lost, the struck batch is whole or absent, and the bank verifies. Each test
# prints its figures (kills inside, batches left whole or absent, misses made again).
#
# Usage: bash scripts/soak.sh [KILLS]
set -euo pipefail
cd "$(dirname "$0")/.."
kills="${1:-200}"
case "$kills" in
  '' | *[!0-9]*) echo "scripts/soak.sh: KILLS must be a whole number, got '$kills'" >&2; exit 2 ;;
esac
# The suite's release build (.ci/run's flags), so that a run after .ci/run compiles nothing.
export CARGO_PROFILE_RELEASE_LTO=off
TUNEBANK_SOAK_KILLS="$kills" cargo nextest run --workspace --all-features --release \
  --no-fail-fast --no-capture -E 'binary_id(tunebank::it) &
    test(/^(multiprocess::writers_killed_inside_their_commit|pg_crash::pg_writers_killed_inside_their_transaction)/)'
