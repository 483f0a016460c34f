#!/usr/bin/env python3
"""Where a process's memory goes, by what is mapped: a copy of /proc/PID/smaps summed per file
(every mapping of a library together: its code, read-only data and relocated data) and per kind of
anonymous memory ([heap], [stack], and [anon]: malloc's arenas, thread stacks, the libraries' .bss).

  smaps.py SMAPS               the groups of one process, largest PSS first
  smaps.py BASE OTHER [ROWS]   what OTHER has more than BASE, by group, the largest ROWS (default 25)

Figures are kB: RSS (resident), PSS (shared pages divided among the processes that map them), USS
(private pages) and, of those, the dirty ones (written: a library's relocations and data, the heap),
which no other process can ever share."""
import os
import re
import sys

HEADER = re.compile(r"^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \d+\s*(.*)$")


def groups(path):
    """{group: [rss, pss, uss, dirty]} for one smaps file."""
    result = {}
    current = None
    for line in open(path):
        header = HEADER.match(line)
        if header:
            name = header[1].strip()
            name = os.path.basename(name) if name.startswith("/") else name or "[anon]"
            current = result.setdefault(name, [0, 0, 0, 0])
            continue
        field, _, value = line.partition(":")
        if current is None or field not in ("Rss", "Pss", "Private_Clean", "Private_Dirty"):
            continue
        kb = int(value.split()[0])
        current[{"Rss": 0, "Pss": 1}.get(field, 2)] += kb
        if field == "Private_Dirty":
            current[3] += kb
    return result


def table(rows, title):
    print(f"  {title:34} {'RSS':>7} {'PSS':>7} {'USS':>7} {'dirty':>7}  (kB)")
    for name, (rss, pss, uss, dirty) in rows:
        print(f"  {name[:34]:34} {rss:7d} {pss:7d} {uss:7d} {dirty:7d}")


def main(argv):
    if len(argv) == 2:
        mine = groups(argv[1])
        rows = sorted(mine.items(), key=lambda item: -item[1][1])
        table(rows + [("total", [sum(v[i] for v in mine.values()) for i in range(4)])], "mapping")
        return 0
    if len(argv) in (3, 4):
        base, other = groups(argv[1]), groups(argv[2])
        limit = int(argv[3]) if len(argv) == 4 else 25
        difference = {name: [other.get(name, [0] * 4)[i] - base.get(name, [0] * 4)[i] for i in range(4)]
                      for name in set(base) | set(other)}
        rows = sorted(difference.items(), key=lambda item: -abs(item[1][1]))
        shown = [row for row in rows if any(row[1])][:limit]
        rest = [sum(v[i] for _, v in rows[len(shown):]) for i in range(4)]
        total = [sum(v[i] for v in difference.values()) for i in range(4)]
        table(shown + [("the rest", rest), ("total", total)], "more than the base, by mapping")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
