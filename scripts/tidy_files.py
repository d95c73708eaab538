#!/usr/bin/env python3
"""The source files scripts/tidy.sh checks: every one, or only those that changed since the last
commit at which every one was clean.

Usage: tidy_files.py BUILD_DIR [--full]

.ci/tidy-clean names a commit at which clang-tidy passed on every file (tidy.sh writes it after a
passing run on a tree without changes). A file that is the same as it was then, and whose every
header of the project's own is the same (the compiler's dependency file in BUILD_DIR lists them),
is still clean: clang-tidy reads nothing else of the project. So the files to check are those
whose source or a header they include changed since that commit, and every file when the checks
(.clang-tidy), this selection, or what sets their compile flags (the top, core's and app's
CMakeLists.txt, cmake/*.cmake) changed, when the commit is not in the history, or with --full. A file without a dependency file is checked.

Prints the files, one a line; the last line on stderr says how many and why.
"""

import json
import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ("core", "app/state", "app/views")
RECORD = ".ci/tidy-clean"
EVERYTHING = (".clang-tidy", "scripts/tidy.sh", "scripts/tidy_files.py")


def flags_of(path):
    """Whether a changed file can change how the checked files compile: the top CMakeLists.txt,
    core's and app's, and cmake/'s modules (the tests', benchmarks', fuzzers' and packaging's cannot)."""
    return path in ("CMakeLists.txt", "core/CMakeLists.txt", "app/CMakeLists.txt") or (path.startswith("cmake/") and path.endswith(".cmake"))


def git(*args):
    return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)


def sources():
    out = []
    for folder in FOLDERS:
        for where, _, names in os.walk(os.path.join(ROOT, folder)):
            out += [os.path.relpath(os.path.join(where, n), ROOT) for n in names if n.endswith(".cpp")]
    return sorted(out)


def dependencies(build_dir):
    """{source: set of the project's files its object depends on} from the compiler's .d files."""
    path = os.path.join(build_dir, "compile_commands.json")
    with open(path, encoding="utf-8") as f:
        entries = json.load(f)
    deps = {}
    for e in entries:
        source = os.path.relpath(os.path.abspath(os.path.join(e["directory"], e["file"])), ROOT)
        args = shlex.split(e["command"]) if "command" in e else e.get("arguments", [])
        output = e.get("output") or next((args[k + 1] for k in range(len(args) - 1) if args[k] == "-o"), None)
        if not output:
            continue
        depfile = os.path.join(e["directory"], output + ".d")
        try:
            with open(depfile, encoding="utf-8") as f:
                text = f.read().replace("\\\n", " ")
        except OSError:
            continue
        files = set()
        for word in text.split(":", 1)[-1].split():
            full = os.path.abspath(os.path.join(e["directory"], word))
            if full.startswith(ROOT + os.sep):
                files.add(os.path.relpath(full, ROOT))
        deps[source] = files
    return deps


def changed_since(base):
    """The files that differ between `base` and the working tree, and files git does not track."""
    diff = git("diff", "--name-only", base)
    if diff.returncode:
        return None
    others = git("ls-files", "--others", "--exclude-standard")
    return set(diff.stdout.split()) | set(others.stdout.split())


def main():
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] != "--full"):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    build_dir = os.path.abspath(sys.argv[1])
    every = sources()

    def all_of(why):
        print("\n".join(every))
        print(f"attnviz: clang-tidy: every file ({len(every)}): {why}", file=sys.stderr)
        return 0

    if len(sys.argv) == 3:
        return all_of("--full")
    try:
        with open(os.path.join(ROOT, RECORD), encoding="utf-8") as f:
            base = f.read().strip()
    except OSError:
        return all_of(f"no {RECORD}")
    if len(base) != 40 or git("cat-file", "-e", base + "^{commit}").returncode:
        return all_of(f"{RECORD} names no commit of this history")
    changed = changed_since(base)
    if changed is None:
        return all_of(f"git could not compare with {base[:10]}")
    if any(c in EVERYTHING or flags_of(c) for c in changed):
        return all_of(f"the checks or the compile flags changed since {base[:10]}")
    deps = dependencies(build_dir)
    chosen = [s for s in every if s in changed or s not in deps or deps[s] & changed]
    print("\n".join(chosen))
    print(f"attnviz: clang-tidy: {len(chosen)} of {len(every)} files, those whose source or headers changed since "
          f"{base[:10]} (every file clean there; the other {len(every) - len(chosen)} are as they were)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
