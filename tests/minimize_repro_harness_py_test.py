#!/usr/bin/env python3
"""The Python repro harness (minimize/harness/repro_harness.py) as a module:
it byte-compiles, imports (with torch), and pyflakes finds nothing in it.
The check is checked too: pyflakes must flag a copy that uses an undefined
name, so a pyflakes that runs but sees nothing fails this test.

Usage: minimize_repro_harness_py_test.py HARNESS PYFLAKES"""
import importlib.util
import os
import py_compile
import subprocess
import sys
import tempfile


def lint(pyflakes, path):
    run = subprocess.run([pyflakes, path], capture_output=True, text=True)
    return run.returncode, (run.stdout + run.stderr).strip()


def main():
    harness, pyflakes = sys.argv[1], sys.argv[2]
    if not os.path.exists(pyflakes):
        print('no pyflakes (%s): install Debian python3-pyflakes (scripts/setup.sh)' % pyflakes)
        return 1
    sys.dont_write_bytecode = True  # nothing written next to the source
    with tempfile.TemporaryDirectory() as tmp:
        py_compile.compile(harness, cfile=os.path.join(tmp, 'harness.pyc'), doraise=True)
    spec = importlib.util.spec_from_file_location('repro_harness', harness)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in ('main', 'run', 'compare', 'comparable', 'check_side', 'check_failure',
                 'check_nondeterminism', 'ulps', 'make_inputs', 'program', 'TOLERANCES'):
        if not hasattr(module, name):
            print('the harness defines no %s' % name)
            return 1
    code, out = lint(pyflakes, harness)
    if code != 0 or out:
        print('pyflakes on %s:\n%s' % (harness, out))
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        broken = os.path.join(tmp, 'undefined_name.py')
        with open(harness) as f, open(broken, 'w') as g:
            g.write(f.read() + '\n\ndef _uses():\n    return NAME_NOBODY_DEFINES\n')
        code, out = lint(pyflakes, broken)
        if code == 0 or 'undefined name' not in out:
            print('pyflakes does not flag an undefined name (exit %d): %s' % (code, out))
            return 1
    print('%s: compiles, imports, lint-clean' % harness)
    return 0


if __name__ == '__main__':
    sys.exit(main())
