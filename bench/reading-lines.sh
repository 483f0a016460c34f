#!/usr/bin/env bash
# The lines of code and of data one reading at a home's pace touches, counted by valgrind's lackey:
# what such a reading costs. Between two readings 10 ms to a second apart the machine's other work
# evicts what the last one touched, so each line a reading touches again is a cache miss (tens of
# nanoseconds) and each page a TLB miss; side by side, 21,700 more instructions a push in a loop of
# a few lines cost nothing the paced benchmark could see, and 600 more cold lines cost more than the
# whole push (bench/NOTES.md, "A lone reading costs its lines, not its instructions").
# The daemon runs under `valgrind --tool=lackey --trace-mem=yes` (every instruction's and every
# load's and store's address, on every thread) as in bench/callgrind.sh, the readings RATE a second
# (10 unless given: lackey runs the daemon some hundred times slower, and a faster pace makes a
# backlog, offered once); bench/reading-lines.py cuts the trace where each reading arrives
# (Connection.didReceive, called once a message) and counts the lines and pages each stretch touched.
# Prints one line: "lines per reading: code <C> in <P> pages, data <D> in <Q> pages (..); means: ..",
# medians over the readings but the first tenth and the last few, then the means (the paced
# benchmark's figure is a mean, the clock's beat once a second in it).
# usage: bench/reading-lines.sh BINARY [N [RATE [POLICY]]]   (N: 200, RATE: 10, POLICY: pushed unless
#   given; needs valgrind, mosquitto, cc, python3, nm; the trace takes some 3 MB a reading)
set -eu
binary=$1 n=${2:-200} rate=${3:-10} policy=${4:-pushed}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/valgrind-daemon.sh
. "$here/valgrind-daemon.sh"

# Where valgrind (amd64) loads a position-independent executable; reading-lines.py says so when no
# stretch starts there (another base), rather than counting the whole run as one.
load_base=0x108000
marker=$(nm "$binary" | awk '/10ConnectionC10didReceive.*tF$/ { print $1; exit }')
[ -n "$marker" ] || { echo "no Connection.didReceive in $binary's symbols" >&2; exit 1; }
daemon_under_valgrind "$n" --tool=lackey --trace-mem=yes --log-file="$dir/trace"
python3 "$here/reading-lines.py" "$dir/trace" "$(printf '%x' $((load_base + 0x$marker)))" "$n" "$(cat "$dir/pushes-$n")" "$policy"
