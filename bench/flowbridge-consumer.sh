#!/bin/sh
# flowbridge in the ingest benchmark: bench/bench.yaml (the three bench topics onto solar, storage
# and exchange; stdout; 1 W steps, no deadband, no interval, no settling) for the broker's port,
# run from the release binary as a dry run. With PUSH_URL, a widget API sink as well: the widget
# pushed to PUSH_URL (token in $BENCH_TOKEN; the server's certificate verified against CA_FILE, for
# an https URL) and printed on standard output (which the benchmark watches for its sentinel), in a
# real run.
# usage: flowbridge-consumer.sh BINARY PORT [PUSH_URL [CA_FILE]]
set -eu
dir=$(mktemp -d "${BENCH_BIN:-/tmp}/flowbridge-consumer-XXXXXX")  # run.sh removes its BENCH_BIN
sed -e "s/@PORT@/$2/" -e "s|@STATE@|$dir/state.json|" "$(dirname "$0")/bench.yaml" > "$dir/config.yaml"
if [ $# -lt 3 ]; then
  exec "$1" run --config "$dir/config.yaml" --dry-run --log-level warning
fi
printf '    push: {url: "%s", token_env: BENCH_TOKEN%s}\noutput: {stdout: true}\n' "$3" "${4:+, ca_file: \"$4\"}" >> "$dir/config.yaml"
exec "$1" run --config "$dir/config.yaml" --log-level warning
