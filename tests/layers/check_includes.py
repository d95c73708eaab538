#!/usr/bin/env python3
"""The layers' include rules, checked on every source file.

CMake's targets make a wrong *link* impossible, but a header-only include (a GL header from core,
one panel reaching into another) would still compile. This reads every #include of the project's
own files and fails, naming the file and line, when one breaks the rules that docs/architecture.md
states:

  core rooms     base <- text, attention <- scenario <- models <- io; scenario <- labs
                 (each includes only rooms below it); core includes no app/ header and no ImGui,
                 GL, GLFW, stb or CLI11 header
  app/state      core and state only; no ImGui, GL or GLFW
  app/render     core, render and the font files; no ImGui, GL or GLFW
  app/fonts      font_files, font_stack, shown_text: core only; font_atlas may use ImGui
  app/views      the view table and the figures: core, state, render and views; no ImGui, GL or GLFW
  command line   app/cli*: views, state, render and core; no ImGui, GL, GLFW, panels, gfx or platform
  panels         no GL header (GL lives in app/gfx and app/platform); no other panel's header
                 (but the panel table, which names them all)
  gfx            no panel, no platform header
  app.*          the app (panels, layout, keys, dialogs): ImGui, no GL, GLFW or platform header
  keys.hpp       the key codes the app maps: no header at all
  theme.*        ImGui's style from the state: no GL, GLFW, platform, panel or gfx header
  widgets        ImGui drawing helpers: core, fonts and widgets; no GL, GLFW, state, panel or platform
  platform       the window, GL context and frame loop: GL and GLFW here; no panel or command line
  gui.*, main    compose the window (gui) and the command line (main): no panel, no GL header

Every file under core/ and app/ has a rule: a file none applies to is reported too.

Usage: check_includes.py SOURCE_DIR   (exit 1 and one line per broken rule)
"""
import pathlib
import re
import sys

CORE_ROOMS = {
    "base": {"base"},
    "text": {"base", "text"},
    "attention": {"base", "attention"},
    "scenario": {"base", "text", "attention", "scenario"},
    "io": {"base", "text", "attention", "scenario", "models", "io"},
    "labs": {"base", "text", "attention", "scenario", "labs"},
    "models": {"base", "text", "attention", "scenario", "models"},
}
UI_LIBS = ("imgui", "backends/imgui", "GL/", "GLFW/", "glad/")
WINDOW_LIBS = ("GL/", "GLFW/", "glad/", "backends/")
NOT_IN_CORE = UI_LIBS + ("stb_", "CLI/")
ATLAS = "app/fonts/font_atlas"
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def rules_for(rel: str):
    """Yields (predicate over (kind, target), why) for a file's includes."""
    parts = rel.split("/")
    if parts[0] == "core":
        room = parts[1] if len(parts) > 2 else None
        allowed = CORE_ROOMS.get(room, set(CORE_ROOMS))

        def core_rule(kind, target):
            if kind == "<":
                return not target.startswith(NOT_IN_CORE)
            if not target.startswith("core/"):
                return False
            other = target.split("/")[1]
            return other in allowed

        yield core_rule, f"core/{room} may include only core rooms {sorted(allowed)} and no UI or app header"
        return
    if rel.startswith("app/state/"):
        yield (lambda k, t: (k == "<" and not t.startswith(UI_LIBS)) or t.startswith(("core/", "app/state/")),
               "app/state links core only: no ImGui, GL, GLFW or front-end header")
        return
    if rel.startswith("app/render/"):
        yield (lambda k, t: (k == "<" and not t.startswith(UI_LIBS)) or
               (t.startswith(("core/", "app/render/", "app/fonts/")) and not t.startswith(ATLAS)),
               "app/render draws figures on the CPU: core, render and the fonts layer only")
        return
    if rel.startswith("app/fonts/") and not rel.startswith(ATLAS):
        yield (lambda k, t: (k == "<" and not t.startswith(UI_LIBS)) or
               (t.startswith(("core/", "app/fonts/")) and not t.startswith(ATLAS)),
               "the fonts layer is shared with the figures: no ImGui, GL, GLFW or atlas header")
        return
    if rel.startswith("app/views/"):
        yield (lambda k, t: (k == "<" and not t.startswith(UI_LIBS)) or
               (t.startswith(("core/", "app/state/", "app/render/", "app/views/", "app/fonts/")) and not t.startswith(ATLAS)),
               "app/views makes figures from the state: core, state, render and views only")
        return
    if re.match(r"app/cli[^/]*$", rel):
        yield (lambda k, t: (k == "<" and not t.startswith(UI_LIBS)) or
               t.startswith(("core/", "app/state/", "app/render/", "app/views/", "app/cli")),
               "the command line links views, state and render: no window, panel, gfx or platform header")
        return
    if rel == "app/keys.hpp":
        yield (lambda k, t: k == "<" and not t.startswith(UI_LIBS), "the key codes the app maps include nothing of a window")
        return
    if re.match(r"app/app\.[ch]pp$", rel):
        yield (lambda k, t: not t.startswith(WINDOW_LIBS + ("app/platform/", "app/cli")),
               "the app draws with ImGui: no window, GL or platform header (app/platform, gui.cpp)")
        return
    if re.match(r"app/theme\.[ch]pp$", rel):
        yield (lambda k, t: not t.startswith(WINDOW_LIBS + ("app/platform/", "app/panels/", "app/gfx/", "app/cli")),
               "the theme sets ImGui's style: no window, GL, panel or gfx header")
        return
    if rel.startswith("app/widgets/") or rel.startswith(ATLAS):
        yield (lambda k, t: (k == "<" and not t.startswith(WINDOW_LIBS)) or
               t.startswith(("core/", "app/fonts/", "app/widgets/")),
               "widgets and the atlas draw with ImGui: core, fonts and widgets only, no GL or window header")
        return
    if rel.startswith("app/platform/"):
        yield (lambda k, t: not t.startswith(("app/panels/", "app/cli")),
               "the platform owns the window and the frame loop: no panel or command-line header")
        return
    if re.match(r"app/(gui\.[ch]pp|main\.cpp)$", rel):
        yield (lambda k, t: not t.startswith(WINDOW_LIBS + ("app/panels/", "app/gfx/")),
               "gui and main compose the window and the command line: no panel, gfx or GL header")
        return
    if rel.startswith("app/panels/"):
        own = pathlib.PurePosixPath(rel).stem

        def panel_rule(kind, target):
            if kind == "<":
                return not target.startswith(("GL/", "GLFW/", "glad/", "backends/"))
            if target.startswith(("app/platform/",)):
                return False
            if target.startswith("app/panels/"):  # the table is where every panel is named
                return own == "panel_table" or pathlib.PurePosixPath(target).stem in (own, "panel", "panel_table")
            return True

        yield panel_rule, "panels draw with ImGui and gfx only (no GL, no platform) and include no other panel"
        return
    if rel.startswith("app/gfx/"):
        yield (lambda k, t: not t.startswith(("app/panels/", "app/platform/")),
               "gfx owns GL objects and knows no panel or platform")
        return


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    broken = []
    checked = 0
    for path in sorted(list(root.glob("core/**/*.[ch]pp")) + list(root.glob("app/**/*.[ch]pp"))):
        rel = path.relative_to(root).as_posix()
        rules = list(rules_for(rel))
        if not rules:
            broken.append(f"{rel}: no include rule covers this file (tests/layers/check_includes.py)")
            continue
        checked += 1
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            kind, target = m.group(1), m.group(2)
            for ok, why in rules:
                if not ok(kind, target):
                    broken.append(f"{rel}:{number}: includes {target}: {why}")
    for line in broken:
        print(line)
    if checked < 50:
        print(f"only {checked} files checked under {root}: is it the source folder?")
        return 1
    print(f"{checked} files checked, {len(broken)} includes break the layers")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
