#!/usr/bin/env python3
"""The class summary (scripts/course.sh summary) on synthetic grade.json files.

    course/test_summary.py WORK_FOLDER

Writes four students' grades with the grader's own write_grade (nested
folders, one a level deeper, one with an assignment that did not build),
makes the page and checks its numbers; then bad input: no grade.json (status 1, one line), a malformed
one (status 1, naming the file), a usage error (status 2). Last, the page
in headless Chromium (Debian's chromium; scripts/setup.sh installs it): the
rendered DOM holds the tables, and a screenshot is saved next to the page.
The page must reference nothing outside itself (no network).
"""
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KIT = [sys.executable, str(ROOT / "course" / "kit.py")]


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def grade(path, tests_by_assignment, error=None):
    """A grade.json written by the grader's own write_grade: {number: (name, [passed...])}."""
    sys.path.insert(0, str(ROOT / "course"))
    import kit
    results = {}
    for num, (name, passed) in tests_by_assignment.items():
        folder = path.parent.parent / ".assignments" / name  # its hidden/ gives max_points
        (folder / "hidden").mkdir(parents=True, exist_ok=True)
        (folder / "hidden" / "test_hidden.cpp").write_text("".join(f'TEST_CASE("{k}") {{}}\n' for k in range(len(passed))))
        tests = [] if error == num else [
            (f"{num}.{k + 1} test {k + 1} of {name}", ok,
             "" if ok else f"test_hidden.cpp:{10 + k}: threw: assignment {num} wrong [context]")
            for k, ok in enumerate(passed)]
        results[num] = (folder, tests, "the hidden tests did not build against this library: see build.log"
                        if error == num else None)
    kit.write_grade(results, path.parent, f"/submissions/{path.parent.name}")


def run(args, expect):
    r = subprocess.run(KIT + args, capture_output=True, text=True)
    if r.returncode != expect:
        fail(f"course.sh {' '.join(args)}: status {r.returncode}, wanted {expect}: {r.stdout}{r.stderr}")
    return r


def main():
    work = Path(sys.argv[1]).resolve()
    shutil.rmtree(work, ignore_errors=True)
    grades = work / "grades"
    a0, a1 = "00-engine", "01-broadcasting"
    grade(grades / "alice" / "grade.json", {0: (a0, [True, True, True]), 1: (a1, [True, True])})
    grade(grades / "bob" / "grade.json", {0: (a0, [True, False, True]), 1: (a1, [False, True])})
    grade(grades / "section2" / "carol" / "grade.json", {0: (a0, [True, False, False]), 1: (a1, [False, True])})
    grade(grades / "dave" / "grade.json", {0: (a0, [True, True, True]), 1: (a1, [False, False])}, error=1)
    page = work / "page" / "summary.html"
    r = run(["summary", str(grades), "--out", str(page)], 0)
    if "summary of 4 grade.json files" not in r.stdout:
        fail("summary did not count 4 files: " + r.stdout)
    html = page.read_text()
    # Offline: no reference to anything outside the page.
    if re.search(r"https?://|<script|<link|<img|url\(", html):
        fail("the page references something outside itself")
    # Assignment 0 counts (number 0 is an assignment like any other).
    for want in ["4 students", "00-engine", "01-broadcasting", "section2/carol",
                 # 0.2 fails for bob and carol, 0.3 for carol: most failing first
                 "0.2 test 2 of 00-engine", "assignment 0 wrong", "(2 students)"]:
        if want not in html:
            fail(f"the page lacks '{want}'")
    worst = html.split("Tests that fail most")[1].split("Every hidden test")[0]
    order = [m for m in re.findall(r"<td>(\d\.\d) test", worst)]
    # 1.1 fails for bob and carol (dave's did not build: no test ran), 0.2 for bob and carol.
    if order[:2] != ["0.2", "1.1"] or "0.3" not in order:
        fail(f"tests that fail most in the wrong order: {order}")
    if not re.search(r"<td>0</td><td>00-engine</td><td>4</td><td>2 ", html):
        fail("assignment 0: 4 graded, 2 with full marks expected")
    if not re.search(r"<td>1</td><td>01-broadcasting</td><td>4</td><td>1 .*?<td>1</td>", html):
        fail("assignment 1: 1 with full marks and 1 that did not build expected")
    # Each failure keeps the context its test printed (the got and want of
    # a comparison), not only the failed check's first line.
    if "wrong [context]" not in html:
        fail("the page drops the failure's context (got/want)")
    # The students come first: the per-student table before the class's numbers.
    if not 0 < html.find("<h2>Per student</h2>") < html.find("<h2>Totals</h2>"):
        fail("the per-student table does not come first")
    # Tests in the order of their numbers: 0.2 before 0.10.
    many = work / "many"
    grade(many / "eve" / "grade.json", {0: (a0, [k % 2 == 0 for k in range(11)])})
    grade(many / "frank" / "grade.json", {0: (a0, [True] * 11)})
    run(["summary", str(many), "--out", str(many / "summary.html")], 0)
    every = (many / "summary.html").read_text().split("Every hidden test")[1]
    listed = re.findall(r"<td>(\d+\.\d+) test", every)
    if listed != [f"0.{k}" for k in range(1, 12)]:
        fail(f"every hidden test not in numeric order: {listed}")
    # Bad input: one clear line and status 1; usage 2.
    empty = work / "empty"
    empty.mkdir()
    r = run(["summary", str(empty)], 1)
    if "no grade.json under" not in r.stderr or len(r.stderr.strip().split("\n")) != 1:
        fail("an empty folder: " + r.stderr)
    bad = work / "bad"
    grade(bad / "ok" / "grade.json", {1: (a1, [True])})
    (bad / "broken").mkdir()
    (bad / "broken" / "grade.json").write_text('{"assignments": [')
    r = run(["summary", str(bad)], 1)
    if "broken/grade.json: not JSON" not in r.stderr or len(r.stderr.strip().split("\n")) != 1:
        fail("a malformed grade.json: " + r.stderr)
    (bad / "broken" / "grade.json").write_text('{"assignments": [{"number": 1}]}')
    r = run(["summary", str(bad)], 1)
    if "broken/grade.json: not a grade" not in r.stderr:
        fail("a grade.json without its fields: " + r.stderr)
    run(["summary", str(work / "no-such-folder")], 1)
    run(["summary"], 2)
    run(["summary", str(grades), "--bogus"], 2)
    # In a browser.
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        fail("chromium is not installed (scripts/setup.sh installs Debian's chromium)")
    base = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            f"--user-data-dir={work / 'profile'}", "--window-size=1200,1600"]
    dom = subprocess.run(base + ["--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    if dom.returncode != 0 or "Tests that fail most" not in dom.stdout or dom.stdout.count("<tr>") < 10:
        fail(f"chromium did not render the page (status {dom.returncode}): {dom.stderr[-500:]}")
    shot = page.with_suffix(".png")
    s = subprocess.run(base + [f"--screenshot={shot}", page.as_uri()], capture_output=True, text=True, timeout=120)
    if s.returncode != 0 or not shot.is_file() or shot.stat().st_size < 10000:
        fail(f"no screenshot (status {s.returncode}): {s.stderr[-500:]}")
    print(f"summary page checked: {page} (screenshot {shot})")


if __name__ == "__main__":
    main()
