#!/usr/bin/env bash
# The functions a lone reading runs, in the order `make release` links them first, side by side
# (bench/hot-functions.txt, lld's --symbol-ordering-file). A reading at a home's pace (a few a
# second) finds the caches cold: left where the compiler put them, the few hundred functions it
# runs are spread over some 170 pages of a 36 MB executable (perf's samples of a paced run), where
# mosquitto_sub's reading touches some 30; each page is a TLB miss and a few cold cache lines of
# its own. Linked together they share pages and lines (bench/NOTES.md, "A lone reading's code, side
# by side").
#
# The functions are those of BINARY's own code (the daemon's modules, Swift's static standard
# library and runtime) that callgrind counts at least once every two readings in bench/callgrind.sh's
# paced runs of 2,000 readings, every reading pushed and with the default policy, less what the run
# of one reading calls (the start: the runtime scans its conformances and reads the config with
# loops of thousands of calls); the most called first, named as the linker names them (the
# runtime's C++ functions mangled). A name the build no longer has is passed over by the linker: the
# list ages without breaking the build, and is made again after changes to the way of a reading.
# usage: bench/hot-functions.sh BINARY > bench/hot-functions.txt   (a release binary, as make release
#   builds it; needs what bench/callgrind.sh needs, and python3)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
binary=$(cd "$(dirname "$1")" && pwd -P)/$(basename "$1")  # as callgrind names it: links resolved
work=$(mktemp -d /tmp/flowbridge-hot-XXXXXX)
trap 'rm -rf "$work"' EXIT
readings=2000
for policy in pushed default; do
  mkdir "$work/$policy"
  PROFILE_OUT="$work/$policy" "$here/callgrind.sh" "$binary" "$readings" 100 "$policy" >&2
done
python3 - "$binary" "$readings" "$work" <<'PY'
import collections, re, sys

binary, readings, work = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def calls_in(path):
    """How often each of the binary's functions is called in one profile."""
    # callgrind's format: names given once as "(id) name", then "(id)"; a call is "cob=" (the
    # callee's object, the caller's when absent), "cfn=" and "calls=COUNT ...".
    names = {"ob": {}, "fn": {}}
    def name(space, value):
        m = re.match(r"\((\d+)\)(?: (.*))?$", value)
        if not m:
            return value
        if m.group(2) is not None:
            names[space][m.group(1)] = m.group(2)
        return names[space].get(m.group(1), "")
    ob = cob = cfn = None
    calls = collections.Counter()
    for line in open(path, errors="replace"):
        key, _, value = line.rstrip("\n").partition("=")
        if key == "ob":
            ob = name("ob", value)
        elif key == "cob":
            cob = name("ob", value)
        elif key == "fn":
            name("fn", value)  # a function's id, named for the calls to it that follow
        elif key == "cfn":
            cfn = name("fn", value)
        elif key == "calls":
            if (cob or ob) == binary and cfn:
                calls[re.sub(r"'\d+$", "", cfn)] += int(value.split()[0])
            cob = cfn = None
    return calls

calls = collections.Counter()
for policy in ("pushed", "default"):
    run = calls_in(f"{work}/{policy}/callgrind-{readings}.out")
    run.subtract(calls_in(f"{work}/{policy}/callgrind-1.out"))
    for function, count in run.items():
        if count * 2 >= readings:
            calls[function] += count

print("# The functions a lone reading runs, linked first and side by side by make release;")
print("# made by bench/hot-functions.sh (the most called first).")
for function, _ in sorted(calls.items(), key=lambda item: (-item[1], item[0])):
    # A name the linker can look up: not an address (code without a symbol), nothing demangled.
    if re.fullmatch(r"[A-Za-z0-9_$.]+", function) and not function.startswith("0x"):
        print(function)
PY
