#!/usr/bin/env python3
"""One place knows the kind of source.

The state's source is a scenario, a checkpoint (AppState::loaded) or attention computed elsewhere
(AppState::imported). app/state/source.{hpp,cpp} is the one place that asks which: views,
panels, actions and exports ask it for what the source can do or give (capabilities, the
checkpoint's pass, the imported file) and never name the two members themselves. This counts the
code (comments and string literals left out) that names `loaded` or `imported` as a word in
app/, outside those two files, and fails when

  - more than LIMIT lines name them in app/, or
  - any line of the command line's exports (app/cli*) does.

Usage: check_source_kind.py SOURCE_DIR [--list]   (exit 1 naming each counted line when over)
"""
import pathlib
import re
import sys

LIMIT = 20
KIND_FILES = {"app/state/source.hpp", "app/state/source.cpp"}
WORD = re.compile(r"\b(loaded|imported)\b")
# A string literal (plain, with escapes) or a character literal; raw strings are not used in app/.
LITERAL = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'')


def code_lines(text: str):
    """Yields (line number, the line's code): comments and literals blanked."""
    in_block = False
    for number, line in enumerate(text.splitlines(), 1):
        line = LITERAL.sub('""', line)
        code = ""
        i = 0
        while i < len(line):
            if in_block:
                end = line.find("*/", i)
                if end < 0:
                    i = len(line)
                else:
                    in_block = False
                    i = end + 2
            elif line.startswith("//", i):
                break
            elif line.startswith("/*", i):
                in_block = True
                i += 2
            else:
                code += line[i]
                i += 1
        yield number, code


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    listing = "--list" in sys.argv[2:]
    counted, in_cli = [], []
    for path in sorted((root / "app").rglob("*")):
        if path.suffix not in (".hpp", ".cpp"):
            continue
        rel = path.relative_to(root).as_posix()
        if rel in KIND_FILES:
            continue
        for number, code in code_lines(path.read_text(encoding="utf-8")):
            if WORD.search(code):
                counted.append(f"{rel}:{number}: {code.strip()[:120]}")
                if rel.startswith("app/cli"):
                    in_cli.append(counted[-1])
    if listing:
        print("\n".join(counted))
    ok = len(counted) <= LIMIT and not in_cli
    if not ok:
        for line in counted if len(counted) > LIMIT else in_cli:
            print(line)
    print(f"{len(counted)} lines of app/ outside the source file name loaded or imported (at most {LIMIT});"
          f" {len(in_cli)} in the command line (none allowed)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
