#!/usr/bin/env python3
"""Writes flowbridge's man pages from the texts they document, so neither is a second copy:
flowbridge(1) from what the binary's `help` prints (the overview, then `help COMMAND` for every
command it lists), flowbridge.yaml(5) from the commented reference config, Config/flowbridge.yaml
(its head as the description, each top-level key with the comment above it and its lines).

usage: packaging/man.py BINARY REFERENCE_CONFIG SUMMARY DATE VERSION OUT_DIR
  SUMMARY: the one line for NAME (the package's short description); DATE: YYYY-MM-DD.
"""
import os
import re
import subprocess
import sys


def roff(text):
    """One line of text as roff reads it literally: backslashes and minus signs escaped, and a
    line that would start with a control character made plain."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text.startswith((".", "'")) else text


def help_text(binary, *words):
    return subprocess.run([binary, "help", *words], check=True, capture_output=True, text=True).stdout.rstrip("\n")


def option_rows(lines):
    """The option table `help COMMAND` prints (two spaces, the label, its help in a column, or on
    the lines below a long label), as (label, help) pairs."""
    rows = []
    for line in lines:
        if re.match(r"^  \S", line):
            label, _, help_ = line.strip().partition("  ")
            rows.append([label, help_.strip()])
        elif line.strip() and rows:
            rows[-1][1] = (rows[-1][1] + " " + line.strip()).strip()
    return rows


def command_page(binary, summary, date, version):
    overview = help_text(binary).splitlines()
    end = overview.index("") if "" in overview else len(overview)
    synopsis = [line.strip().removeprefix("usage:").strip() for line in overview[:end]]
    closing = [line for line in overview[end:] if line.strip()]
    names = [line.split()[1] for line in synopsis]
    out = [f'.TH FLOWBRIDGE 1 "{date}" "flowbridge {version}" "User Commands"',
           ".SH NAME", roff(f"flowbridge - {summary}"),
           ".SH SYNOPSIS", ".nf", *(roff(" ".join(line.split())) for line in synopsis), ".fi",
           ".SH DESCRIPTION", *(roff(line) for line in closing),
           ".SH COMMANDS"]
    for name in names:
        if name == "help":
            continue
        text = help_text(binary, name.lstrip("-")).splitlines()  # `help version` explains --version
        usage = text[0][len("usage: "):]
        blank = [i for i, line in enumerate(text) if not line.strip()]
        abstract = " ".join(line.strip() for line in text[blank[0] + 1:blank[1]])
        out += [".SS " + roff(name), ".B " + roff(usage), ".PP", roff(abstract)]
        for label, help_ in option_rows(text[blank[1] + 1:]):
            out += [".TP", ".B " + roff(label), roff(help_)]
    out += [".SH FILES", ".TP", ".B /etc/flowbridge/config.yaml",
            roff("the config run and check read by default; see flowbridge.yaml(5)"),
            ".SH SEE ALSO", ".BR flowbridge.yaml (5),", ".BR systemctl (1)"]
    return "\n".join(out) + "\n"


def config_sections(lines):
    """The reference config cut into its head (the comment paragraph that opens it) and its
    sections: each top-level key (or a block whose key is commented out) with the comment above
    it and its lines as written."""
    head_end = lines.index("") if "" in lines else len(lines)
    head = [line.lstrip("#").strip() for line in lines[:head_end]]
    sections, pending, current = [], [], None

    def standalone(comments):
        at = next((i for i, line in enumerate(comments) if re.match(r"^# ?[a-z_]+:", line)), len(comments))
        title = re.match(r"^# ?([a-z_]+):", comments[at]).group(1) if at < len(comments) else None
        if title:
            sections.append([title, comments[:at], comments[at:]])
        elif sections:
            sections[-1][2] += [""] + comments

    for line in lines[head_end:]:
        if not line.strip():
            if pending:
                standalone(pending)
                pending, current = [], None
            elif current:
                current[2].append("")
        elif line.startswith("#"):
            pending.append(line)
        elif line.startswith(" "):
            if current is None:
                continue
            current[2] += pending + [line]
            pending = []
        else:
            current = [line.split(":")[0], pending, [line]]
            sections.append(current)
            pending = []
    if pending:
        standalone(pending)
    for section in sections:
        while section[2] and not section[2][-1].strip():
            section[2].pop()
    return head, sections


def config_page(reference, date, version):
    with open(reference, encoding="utf-8") as f:
        lines = f.read().splitlines()
    head, sections = config_sections(lines)
    out = [f'.TH FLOWBRIDGE.YAML 5 "{date}" "flowbridge {version}" "File Formats"',
           ".SH NAME", roff("flowbridge.yaml - flowbridge's configuration file"),
           ".SH DESCRIPTION", ".PP"]
    for line in head:
        out += [".PP"] if not line else [roff(line)]
    out += [".SH KEYS"]
    for title, prose, body in sections:
        out += [".SS " + roff(title), ".PP"]
        out += [roff(line.lstrip("#").strip()) for line in prose]
        out += [".PP", ".RS 2", ".nf", *(roff(line) for line in body), ".fi", ".RE"]
    out += [".SH FILES", ".TP", ".B /etc/flowbridge/config.yaml",
            roff("the config the service reads; the package installs a commented example there"),
            ".TP", ".B /usr/share/doc/flowbridge/examples/",
            roff("configs for common devices (OpenDTU, Shelly, Tasmota, Victron Venus OS, evcc and more)"),
            ".SH SEE ALSO", ".BR flowbridge (1)"]
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    binary, reference, summary, date, version, out_dir = sys.argv[1:]
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "flowbridge.1"), "w", encoding="utf-8") as f:
        f.write(command_page(binary, summary, date, version))
    with open(os.path.join(out_dir, "flowbridge.yaml.5"), "w", encoding="utf-8") as f:
        f.write(config_page(reference, date, version))


main()
