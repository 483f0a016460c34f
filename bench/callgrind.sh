#!/usr/bin/env bash
# Instructions per message of flowbridge under the ingest benchmark's flood, counted by callgrind:
# the CPU figure that holds still on a shared machine, where the timed ratio of `make bench` moves
# by a fifth between runs (bench/NOTES.md, "CPU per message"). The daemon runs under
# `valgrind --tool=callgrind` as bench/valgrind-daemon.sh runs it, with N readings and again with
# one: the run of one is the fixed cost (start, config, connection, exit), so the figure is
# (instructions for N - instructions for 1) / (N - 1).
# With RATE, the readings go out one at a time, RATE a second (meterpub -r), each reaching the daemon
# alone as a home's meters send them (bench/paced.sh's pace), and POLICY says which widget policy
# takes them: pushed (bench.yaml's, every reading pushed, as in the flood) or default (its policy
# line removed: the defaults, a burst settled for 2 s, a push at most every 10 s).
# Prints two lines: "instructions per message <I> (N <N>: <total> in <P> pushes, 1: <total>)", and
# the lines of code a message runs (bench/code-lines.py: at a home's pace, what a reading costs is
# the lines it touches more than its instructions; bench/reading-lines.sh counts its data too).
# With PROFILE_OUT=DIR, both runs' callgrind profiles are kept there (callgrind-N.out, callgrind-1.out),
# their functions named as the linker names them (--demangle=no: bench/hot-functions.sh reads them).
# usage: bench/callgrind.sh BINARY [N [RATE [POLICY]]]
#   (N: 20000 unless given; RATE: a flood unless given; POLICY: pushed unless given;
#    needs valgrind, mosquitto, cc, python3)
set -eu
binary=$1 n=${2:-20000} rate=${3:-} policy=${4:-pushed}
here=$(cd "$(dirname "$0")" && pwd)
keep_profiles() { for run in $n 1; do cp "$dir/run-$run/callgrind.out" "$PROFILE_OUT/callgrind-$run.out"; done; }
before_cleanup=${PROFILE_OUT:+keep_profiles}
# shellcheck source=bench/valgrind-daemon.sh
. "$here/valgrind-daemon.sh"

# The instructions callgrind counts in the whole daemon for a run of $1 readings, in $dir/total-$1.
instructions() {
  daemon_under_valgrind "$1" --tool=callgrind --dump-instr=yes ${PROFILE_OUT:+--demangle=no} --callgrind-out-file="$dir/run-$1/callgrind.out"
  awk '/^(summary|totals):/ { print $2; exit }' "$dir/run-$1/callgrind.out" > "$dir/total-$1"
}

instructions "$n"
instructions 1
awk -v many="$(cat "$dir/total-$n")" -v one="$(cat "$dir/total-1")" -v n="$n" -v pushes="$(cat "$dir/pushes-$n")" 'BEGIN {
  printf "instructions per message %.0f (N %d: %d in %d pushes, 1: %d)\n", (many - one) / (n - 1), n, many, pushes, one
}'
python3 "$here/code-lines.py" "$dir/run-$n/callgrind.out" "$dir/run-1/callgrind.out" "$n"
