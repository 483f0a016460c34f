#!/bin/sh
# flowbridge in the ingest benchmark with a widget API sink: bench/bench.yaml for the broker's port,
# plus the widget pushed to PUSH_URL (token in $BENCH_TOKEN) and printed on standard output (which
# the benchmark watches for its sentinel). usage: push-consumer.sh BINARY PORT PUSH_URL
set -eu
dir=$(mktemp -d "${BENCH_BIN:-/tmp}/flowbridge-push-consumer-XXXXXX")  # run.sh removes its BENCH_BIN
sed -e "s/@PORT@/$2/" -e "s|@STATE@|$dir/state.json|" "$(dirname "$0")/bench.yaml" > "$dir/config.yaml"
printf '    push: {url: "%s", token_env: BENCH_TOKEN}\noutput: {stdout: true}\n' "$3" >> "$dir/config.yaml"
exec "$1" run --config "$dir/config.yaml" --log-level warning
