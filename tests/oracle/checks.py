"""What the oracle scripts share: the record of failed checks, comparing arrays, running the binary.

Each script imports this module once and reads FAILURES, WORST and CHECKS at the end; a script
that imports another's functions (test_import_attention.py takes test_head_stats.py's statistics)
shares one record with it. The self-tests of the float64 oracles (*_checkpoint_selftest.py) keep
theirs here too: expect() and near(), and self_test_summary() for their last line.
"""
import subprocess

import numpy as np

FAILURES = []
WORST = [0.0]        # the largest difference close() has seen
WORST_SHARE = [0.0]  # the largest difference as a share of its tolerance
CHECKS = [0]


def fail(where, what):
    FAILURES.append(f"{where}: {what}" if what else where)
    print(f"FAIL {where}: {what}" if what else f"FAIL {where}", flush=True)


def expect(where, ok, what=""):
    """A counted check: a failure (what says why) unless ok. Returns ok."""
    CHECKS[0] += 1
    if not ok:
        fail(where, what)
    return ok


def close(where, got, want, tol):
    """Every element of got within tol of want, the shapes equal."""
    CHECKS[0] += 1
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        fail(where, f"shape {got.shape}, expected {want.shape}")
        return
    err = float(np.max(np.abs(got - want))) if got.size else 0.0
    WORST[0] = max(WORST[0], err)
    WORST_SHARE[0] = max(WORST_SHARE[0], err / max(tol, 1e-300))
    if not err <= tol:
        fail(where, f"max |got - want| = {err:.3g} > {tol:.3g}")


def near(where, got, want, tol=1e-12):
    """close() at the self-tests' tolerance: float64 against float64 (or hand-computed values), to rounding."""
    close(where, got, want, tol)


def run(attnviz, *args, expect=0):
    """The binary with args; a failed check unless it exits `expect`."""
    p = subprocess.run([attnviz, *args], capture_output=True, text=True, timeout=600)
    CHECKS[0] += 1
    if p.returncode != expect:
        shown = " ".join(a if len(a) < 60 else a[:57] + "..." for a in map(str, args[:8]))
        fail(shown, f"exit {p.returncode}, expected {expect}: {p.stderr.strip()[-400:]}")
    return p


def one_error_line(attnviz, args, flag):
    """A misuse: exit 2, no output, one line on stderr that names `flag`."""
    p = run(attnviz, *args, expect=2)
    lines = p.stderr.strip().splitlines()
    if len(lines) != 1 or flag not in lines[0] or p.stdout:
        fail(" ".join(args), f"expected one error line naming {flag} and no output, got {p.stderr!r}")
    return p


def self_test_summary(covered):
    """A self-test's last line and exit status: how many of its checks failed, or that all passed and
    what they covered."""
    if FAILURES:
        print(f"{len(FAILURES)} of {CHECKS[0]} self-checks failed")
        return 1
    print(f"all {CHECKS[0]} self-checks passed: {covered}")
    return 0
