#!/usr/bin/env python3
"""The code a lone reading runs, in cache lines and pages: what a reading at a home's pace pays for.

A reading that comes alone finds the caches cold: between two readings, 10 ms to a second apart, the
machine's other work has evicted what the last one touched, and each line of code or data it
touches again is a miss (tens of nanoseconds, and a TLB miss for each page). Measured side by side
(bench/NOTES.md, "A lone reading costs its lines, not its instructions"), 21,700 more instructions a
pushed reading in a loop of a few lines cost nothing the paced benchmark can see, and 600 more cold
lines cost more than the whole push. So the figure to bring down is how many lines a reading
touches, which callgrind can count where the timed figure cannot be read to a tenth.

From bench/callgrind.sh's two profiles (run with --dump-instr=yes: each instruction's address and
count), the lines of code whose instructions ran at least N/2 times in the run of N, after the run
of one is taken off (the start, which is not a reading's): those run by (almost) every reading.
Prints one line: the lines, the 4 kB pages they lie in, and both by object (the daemon, libc,
libmosquitto). Data lines are not counted: callgrind does not see them (bench/reading-lines.sh does).

usage: bench/code-lines.py PROFILE_OF_N PROFILE_OF_1 N
"""
import collections
import re
import sys


def counts(path):
    """Instructions run at each (object, address), from a profile with positions "instr line".

    callgrind's compressed format: a name is given once as "(id) name", then "(id)"; a position is
    absolute ("0x1f40"), relative to the one before in its column ("+3", "-8") or the same ("*");
    the line after "calls=" is the call's inclusive cost, at the call's position (a position still,
    but not this instruction's own count). Objects are named in "ob=" and "cob=" lines alike."""
    names = {}
    def name(value):
        m = re.match(r"\((\d+)\)(?: (.*))?$", value)
        if not m:
            return value
        if m.group(2) is not None:
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), "")

    ran = collections.Counter()
    ob = ""
    address = 0
    call_cost = False
    for line in open(path, errors="replace"):
        head = line[:1]
        if head in "0123456789+-*":
            fields = line.split()
            position = fields[0]
            if position.startswith(("+", "-")):
                address += int(position)
            elif position != "*":
                address = int(position, 0)
            if call_cost:
                call_cost = False
                continue
            if len(fields) > 2:
                ran[(ob, address)] += int(fields[2])
        elif line.startswith("ob="):
            ob = name(line[3:].rstrip("\n"))
        elif line.startswith("cob="):
            name(line[4:].rstrip("\n"))  # a callee's object, named here the first time
        elif line.startswith("calls="):
            call_cost = True
    return ran


def main():
    many, one, n = counts(sys.argv[1]), counts(sys.argv[2]), int(sys.argv[3])
    lines = {(ob, address >> 6) for (ob, address), count in many.items() if count - one.get((ob, address), 0) >= n / 2}
    pages = {(ob, line >> 6) for ob, line in lines}
    by_object = collections.defaultdict(lambda: [0, 0])
    for ob, _ in lines:
        by_object[ob.rsplit("/", 1)[-1]][0] += 1
    for ob, _ in pages:
        by_object[ob.rsplit("/", 1)[-1]][1] += 1
    parts = ", ".join(f"{ob} {lines_}/{pages_}" for ob, (lines_, pages_) in sorted(by_object.items(), key=lambda item: -item[1][0]))
    print(f"code lines per message {len(lines)} in {len(pages)} pages ({parts})")


main()
