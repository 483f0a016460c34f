#!/usr/bin/env bash
# What an idle flowbridge costs, thread by thread: one daemon (bench/bench.yaml without its policy
# line: the default policy, the window listening, nothing scraping it) subscribed to a private
# broker that carries no reading. After a settling pause, SECONDS (10 unless given) are counted per
# thread from /proc/PID/task/*: time on a processor (schedstat) and context switches (status),
# each a second. Every wake-up of an idle daemon is one its home pays all day.
# usage: bench/idle.sh FLOWBRIDGE_BINARY [SECONDS]   (needs mosquitto)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
binary=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
seconds=${2:-10}
work=$(mktemp -d /tmp/flowbridge-idle-XXXXXX)
pids=()
# shellcheck disable=SC2154 # pid: the loop's, in the trap's own text
trap 'for pid in "${pids[@]}"; do kill $pid 2>/dev/null; done; wait 2>/dev/null; rm -rf "$work"' EXIT
# shellcheck source=bench/common.sh
. "$here/common.sh"
start_broker "$work" "log_type all"
pids+=("$broker_pid")
bench_config "$broker_port" "$work/state.json" "$(free_port)" default > "$work/config.yaml"
"$binary" run --config "$work/config.yaml" --log-level warning > "$work/out" 2> "$work/err" & flowbridge=$!
pids+=("$flowbridge")
wait_subscribed "$work" 1
sleep 3  # the start's own work done: the first state save, Dispatch's first workers retired
threads_now $flowbridge > "$work/before"
sleep "$seconds"
threads_now $flowbridge > "$work/after"
echo "an idle flowbridge over $seconds s, a second:"
threads_per "$work/before" "$work/after" "$seconds"
