#!/usr/bin/env python3
"""The instructor's guide (docs/course.md) against the kit it describes.

    course/test_docs.py WORK_FOLDER

Checks, from the kit's own lists and from running its commands:
* the folders the guide says grading reads are course/kit.py's LIBRARY_DIRS
  (course/CMakeLists.txt's comment too), and every `grep -rn "BEGIN
  ASSIGNMENT" ...` command shown (guide and course/README.md) names every
  folder that holds a region;
* every subcommand and option of `scripts/course.sh --help` is in the
  guide's table of commands;
* the output shown for `make` is what `make` prints now (run into
  WORK_FOLDER; lines shown as `...` stand for any number of lines, the file
  count for any count);
* every `assignment N NAME P / M` and `total P / M` line shown for `grade`,
  every `reference passes all N hidden tests` and every mutation score line
  shown for `check-tests` have the counts of hidden tests and planted bugs
  the kit has now;
* the points in course/README.md's table and in each assignment's README
  are its number of hidden tests.
"""
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "course"))
import kit  # noqa: E402

problems = []


def problem(msg):
    problems.append(msg)


def blocks(text):
    """[(command line, [output lines])] of the guide's ``` blocks that start with `$ `."""
    out = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        lines = block.rstrip("\n").split("\n")
        if lines and lines[0].startswith("$ "):
            out.append((lines[0][2:], lines[1:]))
    return out


def check_folders(guide):
    dirs = kit.LIBRARY_DIRS
    m = re.search(r"the grader reads only\s+the library's folders \(([^)]*)\)", guide)
    if not m:
        problem("docs/course.md: no sentence 'the grader reads only the library's folders (...)'")
    else:
        shown = re.findall(r"`([a-z_]+)/`", m.group(1))
        if sorted(shown) != sorted(dirs):
            problem(f"docs/course.md lists the graded folders {shown}, course/kit.py's LIBRARY_DIRS are {list(dirs)}")
    cm = (ROOT / "course" / "CMakeLists.txt").read_text()
    m = re.search(r"library folders \(([^)]*)\)", cm)
    shown = re.findall(r"([a-z_]+)/", m.group(1)) if m else []
    if sorted(shown) != sorted(dirs):
        problem(f"course/CMakeLists.txt's comment lists the folders {shown}, LIBRARY_DIRS are {list(dirs)}")
    with_regions = sorted({rel.split("/")[0] for regions in kit.all_regions().values() for rel, _ in regions})
    for name, text in (("docs/course.md", guide), ("course/README.md", (ROOT / "course" / "README.md").read_text())):
        for cmd in re.findall(r'grep -rn "BEGIN ASSIGNMENT" ([a-z_ ]+)', text):
            missing = [d for d in with_regions if d not in cmd.split()]
            if missing:
                problem(f"{name}: 'grep -rn \"BEGIN ASSIGNMENT\" {cmd.strip()}' misses the folders {missing}")


def check_commands(guide):
    after = guide.split("| command | what it does |")[1] if "| command | what it does |" in guide else ""
    table = after.split("\n\n")[0]
    common = after.split("\n\n")[1] if "\n\n" in after else ""  # options several commands take
    if not table:
        problem("docs/course.md: no table of commands ('| command | what it does |')")
    helps = subprocess.run([sys.executable, str(ROOT / "course" / "kit.py"), "--help"], capture_output=True,
                           text=True).stdout
    subs = re.search(r"\{([a-z-,]+)\}", helps).group(1).split(",")
    for sub in subs:
        if f"course.sh {sub} " not in table and f"course.sh {sub}`" not in table:
            problem(f"docs/course.md's table of commands has no row for '{sub}'")
            continue
        row = next(line for line in table.split("\n") if f"course.sh {sub}" in line)
        h = subprocess.run([sys.executable, str(ROOT / "course" / "kit.py"), sub, "--help"], capture_output=True,
                           text=True).stdout
        for opt in sorted(set(re.findall(r"(--[a-z-]+)", h)) - {"--help"}):
            if opt not in row and not (f"`{opt}`" in common and f"`{sub}`" in common):
                problem(f"docs/course.md's row for '{sub}' does not name its option {opt}")


def matches(shown, actual):
    """Shown lines (with `...` for any lines, any file count) against the actual output."""
    pats = []
    for line in shown:
        if line.strip() == "...":
            pats.append(None)
        else:
            p = re.escape(line.rstrip())
            p = re.sub(r"\\\(\d+\\ files\\\)", r"\\(\\d+\\ files\\)", p)
            pats.append(re.compile(p + r"$"))
    i = 0
    for k, p in enumerate(pats):
        if p is None:
            continue
        while i < len(actual) and not p.match(actual[i].rstrip()):
            if k == 0 or pats[k - 1] is not None:
                return f"shown '{shown[k]}', printed '{actual[i] if i < len(actual) else '(end)'}'"
            i += 1
        if i == len(actual):
            return f"shown '{shown[k]}', which is not printed"
        i += 1
    if pats and pats[-1] is not None and i != len(actual):
        return f"printed more after '{shown[-1]}': '{actual[i]}'"
    return None


def check_outputs(guide, work):
    hidden = {n: kit.hidden_test_count(n, f) for n, f in kit.assignments().items() if (f / "hidden").is_dir()}
    bugs = {n: len(list((f / "bugs").glob("*.bug"))) for n, f in kit.assignments().items()}
    names = {f.name: n for n, f in kit.assignments().items()}
    made = 0
    for cmd, out in blocks(guide):
        m = re.match(r"scripts/course\.sh make (\S+)( \S+)?$", cmd)
        if m:
            made += 1
            target = work / f"make-{made}"
            r = subprocess.run([sys.executable, str(ROOT / "course" / "kit.py"), "make", str(target)]
                               + ([m.group(2).strip()] if m.group(2) else []), capture_output=True, text=True)
            if r.returncode != 0:
                problem(f"'{cmd}' failed: {r.stderr.strip()}")
                continue
            actual = r.stdout.replace(str(target), m.group(1)).rstrip("\n").split("\n")
            why = matches(out, actual)
            if why:
                problem(f"docs/course.md's output of '{cmd}' is not what it prints now: {why}")
        if " grade " in cmd:
            seen = []
            for line in out:
                a = re.match(r"assignment\s+(\d+) (\S+)\s+(\d+) / (\d+)", line)
                if a:
                    n = int(a.group(1))
                    seen.append(n)
                    if names.get(a.group(2)) != n or int(a.group(4)) != hidden.get(n):
                        problem(f"'{cmd}': '{line.strip()}', but assignment {n} has {hidden.get(n)} hidden tests")
                t = re.match(r"total (\d+) / (\d+)", line)
                if t and int(t.group(2)) != sum(hidden[n] for n in seen):
                    problem(f"'{cmd}': '{line.strip()}', but its assignments have {sum(hidden[n] for n in seen)} "
                            "hidden tests")
        if " check-tests" in cmd:
            sel = re.search(r"--assignments (\S+)", cmd)
            chosen = [int(x) for x in sel.group(1).split(",")] if sel else sorted(hidden)
            for line in out:
                r = re.match(r"reference passes all (\d+) hidden tests", line)
                if r and int(r.group(1)) != sum(hidden[n] for n in chosen):
                    problem(f"'{cmd}': '{line.strip()}', but those assignments have "
                            f"{sum(hidden[n] for n in chosen)} hidden tests")
                s = re.match(r"\s+(\d+) (\d\d-\S+)\s+(\d+)/(\d+) = ", line)
                if s and int(s.group(4)) != bugs.get(int(s.group(1))):
                    problem(f"'{cmd}': '{line.strip()}', but assignment {s.group(1)} has "
                            f"{bugs.get(int(s.group(1)))} planted bugs")
            if sel is None and out and not any(re.match(r"\s+(\d+) (\d\d-\S+)", l) for l in out):
                problem(f"'{cmd}': no mutation score shown")
    if not made:
        problem("docs/course.md shows no output of 'scripts/course.sh make'")


def check_points():
    table = (ROOT / "course" / "README.md").read_text()
    for n, folder in kit.assignments().items():
        if not (folder / "hidden").is_dir():
            continue
        want = kit.hidden_test_count(n, folder)
        row = re.search(r"^\| " + str(n) + r" \| `" + re.escape(folder.name) + r"` \|[^|]*\| (\d+)", table, re.M)
        if not row or int(row.group(1)) != want:
            problem(f"course/README.md's row for {folder.name} gives {row.group(1) if row else 'no'} points, "
                    f"it has {want} hidden tests")
        readme = (folder / "README.md").read_text()
        pts = re.search(r"\*\*Points\*\* (\d+)", readme)
        if not pts or int(pts.group(1)) != want:
            problem(f"{folder.name}/README.md gives {pts.group(1) if pts else 'no'} points, it has {want} hidden tests")
        tags = re.search(r"`\[a\d+\.1\]` \.\.\. `\[a\d+\.(\d+)\]`", readme)
        if tags and int(tags.group(1)) != want:
            problem(f"{folder.name}/README.md names hidden tests up to [a{n}.{tags.group(1)}], it has {want}")


def main():
    work = Path(sys.argv[1]).resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    guide = (ROOT / "docs" / "course.md").read_text()
    check_folders(guide)
    check_commands(guide)
    check_outputs(guide, work)
    check_points()
    for p in problems:
        print("FAIL: " + p)
    if problems:
        return 1
    print("docs/course.md matches the kit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
