#!/bin/sh
# The flowbridge side of the shared ingest benchmark: writes a config for the broker's port (the
# three bench topics onto solar, storage and exchange; stdout; 1 W steps, no deadband, no interval)
# and runs the release binary on it.
# usage: flowbridge-consumer.sh BINARY PORT
set -eu
dir=$(mktemp -d)
sed -e "s/@PORT@/$2/" -e "s|@STATE@|$dir/state.json|" "$(dirname "$0")/bench.yaml" > "$dir/config.yaml"
exec "$1" run --config "$dir/config.yaml" --dry-run --log-level warning
