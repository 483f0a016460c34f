#!/bin/sh
# The flowbridge side of the shared ingest benchmark: writes a config for the broker's port (the
# three bench topics onto solar, storage and exchange; stdout; 1 W steps, no deadband, no interval)
# and runs the release binary on it. With PUSH_URL, the widget is also pushed to the widget API
# there (token in $BENCH_TOKEN), so the same run measures the daemon with its libcurl sink.
# usage: flowbridge-consumer.sh BINARY PORT [PUSH_URL]
set -eu
dir=$(mktemp -d)
sed -e "s/@PORT@/$2/" -e "s|@STATE@|$dir/state.json|" "$(dirname "$0")/bench.yaml" > "$dir/config.yaml"
if [ -n "${3:-}" ]; then
  printf '    push: {url: "%s", token_env: BENCH_TOKEN}\noutput: {stdout: true}\n' "$3" >> "$dir/config.yaml"
  exec "$1" run --config "$dir/config.yaml" --log-level warning
fi
exec "$1" run --config "$dir/config.yaml" --dry-run --log-level warning
