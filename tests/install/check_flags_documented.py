#!/usr/bin/env python3
"""Every flag of `attnviz --help` is in the manual page and in the bash completion, and neither
names a flag the program does not have.

The help is the program's own list (CLI11 prints every option defineFlags declares). The manual
page is read from its troff source (\\- is a hyphen): the tag of each entry (.TP) under OPTIONS.
The completion is run, not read: bash sources it and completes "-", and the words it offers are
compared with the help's.

Usage: check_flags_documented.py ATTNVIZ MANPAGE COMPLETION   (exit 1, one line per difference)
"""
import re
import subprocess
import sys

FLAG = re.compile(r"(?<![\w-])(--?[a-z][a-z0-9-]*)")


def help_flags(binary):
    """The option names of --help: the first column of each option line, and the positionals."""
    text = subprocess.run([binary, "--help"], capture_output=True, text=True, check=True).stdout
    flags, positionals, section = set(), set(), ""
    for line in text.splitlines():
        if line and not line.startswith(" "):
            section = line.strip().rstrip(":").upper()
            continue
        first = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0] if line.strip() else ""
        if section == "POSITIONALS" and first:
            positionals.add(first.split()[0])
        elif section == "OPTIONS" and first.startswith("-"):
            flags.update(FLAG.findall(first))
    return flags, positionals, text


def man_flags(path):
    """The flags with an entry of their own in OPTIONS: the tag line after each .TP."""
    source = open(path, encoding="utf-8").read().replace("\\-", "-")
    options = source.split("\n.SH OPTIONS", 1)[-1].split("\n.SH ", 1)[0]
    tags = re.findall(r"^\.TP\n(.*)$", options, re.M)
    return {f for tag in tags for f in FLAG.findall(tag)}, tags


def completion_words(path):
    script = f'source "{path}"; COMP_WORDS=(attnviz -); COMP_CWORD=1; _attnviz; printf "%s\\n" "${{COMPREPLY[@]}}"'
    out = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True, check=True).stdout
    return {w for w in out.split() if w}


def main():
    binary, manpage, completion = sys.argv[1:4]
    flags, positionals, help_text = help_flags(binary)
    failures = []
    if len(flags) < 40 or "--scenario" not in flags:
        failures.append(f"--help: read only {len(flags)} flags; has its layout changed?\n{help_text[:400]}")
    in_man, man_tags = man_flags(manpage)
    for f in sorted(flags - in_man):
        failures.append(f"{manpage}: {f} is a flag of attnviz but the manual page has no entry for it")
    for f in sorted(in_man - flags):
        failures.append(f"{manpage}: has an entry for {f}, which attnviz --help does not list")
    for p in sorted(positionals):
        if f".I {p}" not in man_tags:
            failures.append(f"{manpage}: the positional {p} has no entry of its own (.TP, .I {p})")
    if not positionals:
        failures.append("--help: lists no positional FILE (the desktop entry runs attnviz %f)")
    offered = completion_words(completion)
    for f in sorted(flags - offered):
        failures.append(f"{completion}: completing '-' does not offer {f}")
    for f in sorted(offered - flags):
        failures.append(f"{completion}: offers {f}, which attnviz --help does not list")
    for line in failures:
        print(line)
    print(f"{len(flags)} flags and {len(positionals)} positional: "
          + ("all documented and completed" if not failures else f"{len(failures)} problems"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
