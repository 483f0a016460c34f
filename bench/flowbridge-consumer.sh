#!/bin/sh
# flowbridge in the ingest benchmark: bench/bench.yaml (the three bench topics onto solar, storage
# and exchange; stdout; 1 W steps, no deadband, no interval, no settling) for the broker's port,
# run from the release binary. usage: flowbridge-consumer.sh BINARY PORT
set -eu
dir=${BENCH_BIN:-/tmp}/flowbridge-consumer-$$
mkdir -p "$dir"
sed -e "s/@PORT@/$2/" -e "s|@STATE@|$dir/state.json|" "$(dirname "$0")/bench.yaml" > "$dir/config.yaml"
exec "$1" run --config "$dir/config.yaml" --dry-run --log-level warning
