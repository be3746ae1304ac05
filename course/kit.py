#!/usr/bin/python3
"""smallgrad's course kit: make a student tree, grade one, prove the hidden
tests catch the planted bugs. Run it through scripts/course.sh; the
instructor's guide is docs/course.md.

The library is the reference solution. The regions students write are marked
in its own files by comment lines:

    // BEGIN ASSIGNMENT 3: masked_softmax_row: what to write, in one line
    ...the reference code...
    // END ASSIGNMENT 3

`make` replaces each region by a stub that throws sg::Error naming the
assignment and the function; everything else is copied as it is. `grade`
runs each assignment's hidden tests on the student's code of that
assignment and the reference's code of the other regions (`spliced`), so a
mistake costs points only in the assignment whose region holds it.
"""
import argparse
import concurrent.futures
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the kit's (instructor's) checkout
COURSE = ROOT / "course"
BEGIN = re.compile(r"^(\s*)// BEGIN ASSIGNMENT (\d+): (.+?)\s*$")
END = re.compile(r"^(\s*)// END ASSIGNMENT (\d+)\s*$")
# What a student tree never gets: everything under course/ but the READMEs
# (the hidden tests, the planted bugs, the grader and its tests), the kit's
# command and the instructor's guide (which shows a planted bug).
INSTRUCTOR_ONLY = re.compile(r"^(course/(?!README\.md$)(?![^/]+/README\.md$)|scripts/course\.sh$|docs/course\.md$)")
# Text that only one of the two trees has, in any file (README.md,
# scripts/test.sh, ...): a block between lines holding "BEGIN INSTRUCTOR
# ONLY" and "END INSTRUCTOR ONLY", or one line ending in a comment
# "instructor only", is left out of the student tree; a block between "BEGIN
# STUDENT ONLY" and "END STUDENT ONLY" lines (inside an HTML comment in
# Markdown), or a comment line "student only: TEXT", appears only there (as
# TEXT), with {{first}} and {{assignments}} replaced by the handed-out numbers.
INSTRUCTOR_LINE = re.compile(r"\s*(<!--|#|//)\s*instructor only\s*(-->)?\s*$")
STUDENT_LINE = re.compile(r"^(\s*)(?:<!--|#|//)\s*student only: ?(.*?)\s*(?:-->)?\s*$")
# The library's sources, which grading takes from the student's tree.
LIBRARY_DIRS = ("core", "autograd", "nn", "optim", "checkpoint", "parallel", "decoding", "text", "study")


class KitError(Exception):
    pass


def say(*parts):
    print(*parts, flush=True)


# ---------------------------------------------------------------- assignments

def assignments():
    """{number: folder} for every course/NN-name folder."""
    out = {}
    for d in sorted(COURSE.glob("[0-9][0-9]-*")):
        if d.is_dir():
            out[int(d.name[:2])] = d
    return out


def parse_selection(text, known):
    if not text or text == "all":
        return sorted(known)
    chosen = []
    for part in text.split(","):
        if not part.strip().isdigit() or int(part) not in known:
            raise KitError(f"assignment '{part}' is not one of {', '.join(map(str, sorted(known)))} "
                           f"(folders course/NN-name)")
        chosen.append(int(part))
    return sorted(set(chosen))


def regions(lines, path):
    """[(begin_line, end_line, number, what)] of a file's marked regions, checked for pairing."""
    out, open_region = [], None
    for i, line in enumerate(lines):
        b, e = BEGIN.match(line), END.match(line)
        if b:
            if open_region:
                raise KitError(f"{path}:{i + 1}: BEGIN ASSIGNMENT inside the region opened at line {open_region[0] + 1}")
            open_region = (i, int(b.group(2)), b.group(3), b.group(1))
        elif e:
            if not open_region or int(e.group(2)) != open_region[1]:
                raise KitError(f"{path}:{i + 1}: END ASSIGNMENT {e.group(2)} without its BEGIN")
            out.append((open_region[0], i, open_region[1], open_region[2], open_region[3]))
            open_region = None
    if open_region:
        raise KitError(f"{path}:{open_region[0] + 1}: BEGIN ASSIGNMENT {open_region[1]} is never closed")
    return out


def function_of(what):
    """The function a region is, from its marker: the text before the first ': '."""
    return what.split(": ", 1)[0]


def stub_message(number, what, path):
    folder = assignments().get(number)
    where = f"course/{folder.name}/README.md" if folder else "the course's README"
    return f"assignment {number} not written yet: {function_of(what)} in {path} (see {where})"


NOT_A_TYPE = {"return", "case", "else", "new", "delete", "throw", "goto", "co_return", "co_yield", "typename",
              "using", "namespace", "class", "struct", "enum", "template", "operator", "sizeof", "do"}


def _code(line):
    return re.sub(r'"(\\.|[^"\\])*"|//.*', "", line)


def enclosing_block(lines, begin, end):
    """(first, last, lambda_header) around the region on lines begin..end: the
    function holding it (its signature's first line, its closing line), or,
    when the region is inside a lambda, that lambda's header (captures and
    parameters) and the line that closes it."""
    stack = []  # the lines of the braces open at `begin`
    for i in range(begin):
        for ch in _code(lines[i]):
            if ch == "{":
                stack.append(i)
            elif ch == "}" and stack:
                stack.pop()
    opener = None
    for i in reversed(stack):
        if re.search(r"\]\s*\(", _code(lines[i])):
            opener = i
            break
    header = None
    if opener is not None:
        code = _code(lines[opener])
        header = code[code.rindex("[", 0, re.search(r"\]\s*\(", code).start() + 1):]
        first = opener
    else:
        outer = [i for i in stack if not re.match(r"\s*(namespace|extern|class|struct)\b", lines[i])]
        first = outer[0] if outer else 0
        while first > 0 and lines[first - 1].strip() and not _code(lines[first - 1]).rstrip().endswith((";", "}", "{")) \
                and not lines[first - 1].lstrip().startswith(("//", "#")):
            first -= 1  # the signature's earlier lines
        opener = outer[0] if outer else None
    # The line that closes the opener: as deep as the region's block, one up.
    depth, last = len([i for i in stack if opener is None or i >= opener]), len(lines) - 1
    for i in range(end + 1, len(lines)):
        for ch in _code(lines[i]):
            depth += (ch == "{") - (ch == "}")
        if depth <= 0:
            last = i
            break
    return first, last, header


def unused_after_stub(lines, begin, end):
    """The parameters and locals declared before a region that only the region
    uses: the stub names them in `(void)x;` so that no unused-variable or
    unused-parameter warning appears in a file the student has not touched yet."""
    first, last, header = enclosing_block(lines, begin, end)
    before = header if header is not None else "\n".join(_code(l) for l in lines[first:begin])
    region = "\n".join(_code(l) for l in lines[begin + 1:end])
    after = "\n".join(_code(l) for l in lines[end + 1:last + 1])
    captures = set()
    if header is not None:  # [a, b, q = out.detach()](...): the names captured
        captures = {m.group(1) for m in re.finditer(r"(?:^|,)\s*[&=]?\s*(\w+)", header[1:header.index("]")])}
    names = []
    for name in dict.fromkeys(re.findall(r"\b[A-Za-z_]\w*\b", region)):
        declared = name in captures or any(
            m.group(1) not in NOT_A_TYPE for m in
            re.finditer(r"(\w[\w:<>]*)\s*[&*]*\s+(?:__restrict\s+)?" + name + r"\s*(?:[=,)\[{;]|$)", before, re.M))
        if declared and not re.search(r"\b" + name + r"\b", after):
            names.append(name)
    return names


def stubbed(text, path, handed_out):
    """The file with the handed-out regions replaced by stubs and the other markers removed."""
    lines = text.split("\n")
    found = regions(lines, path)
    if not found:
        return text
    out, pos = [], 0
    for begin, end, number, what, indent in found:
        out.extend(lines[pos:begin])
        if number in handed_out:
            msg = stub_message(number, what, path).replace("\\", "\\\\").replace('"', '\\"')
            unused = unused_after_stub(lines, begin, end)
            out += [lines[begin],
                    f"{indent}// Your code here. Until it is written this throws:"]
            if unused:
                out.append(f"{indent}" + " ".join(f"(void){n};" for n in unused) + "  // what your code will use")
            out += [f'{indent}::sg::fail("{msg}");', lines[end]]
        else:
            out.extend(lines[begin + 1:end])
        pos = end + 1
    out.extend(lines[pos:])
    return "\n".join(out)


def for_students(text, path, handed_out):
    """The text of a file as the student tree has it (see INSTRUCTOR_LINE)."""
    if not re.search(r"(?i)(instructor|student) only", text):
        return text
    out, block = [], None
    for i, line in enumerate(text.split("\n")):
        for kind in ("INSTRUCTOR", "STUDENT"):
            if f"BEGIN {kind} ONLY" in line:
                if block:
                    raise KitError(f"{path}:{i + 1}: BEGIN {kind} ONLY inside a {block} ONLY block")
                block = kind
                break
            if f"END {kind} ONLY" in line:
                if block != kind:
                    raise KitError(f"{path}:{i + 1}: END {kind} ONLY without its BEGIN")
                block = None
                break
        else:
            if block == "INSTRUCTOR" or INSTRUCTOR_LINE.search(line):
                continue
            m = STUDENT_LINE.match(line)
            out.append(m.group(1) + m.group(2) if m else line)
    if block:
        raise KitError(f"{path}: BEGIN {block} ONLY is never closed")
    return ("\n".join(out).replace("{{first}}", str(min(handed_out)))
            .replace("{{assignments}}", ", ".join(map(str, handed_out))))


def names_of_missing_files(tree, stripped):
    """[(file, line, name)]: the places in the student tree's text files that
    name a file or folder the tree does not have (stripped: paths relative to
    the root of the instructor's tree)."""
    names = set()
    for rel in stripped:
        names.add(rel)
        m = re.match(r"^(course/[^/]+/(hidden|bugs))/", rel)
        if m:
            names.add(m.group(1))
    names = {n for n in names if not (tree / n).exists()}
    pattern = re.compile("|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)))
    found = []
    for p in sorted(tree.rglob("*")):
        if not p.is_file():
            continue
        try:
            text = p.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        for i, line in enumerate(text.split("\n")):
            for m in pattern.finditer(line):
                found.append((p.relative_to(tree).as_posix(), i + 1, m.group(0)))
    return found


def tracked_files(root):
    r = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True, text=True)
    if r.returncode != 0:
        raise KitError(f"git ls-files in {root} failed: {r.stderr.strip()}")
    return [f for f in r.stdout.split("\0") if f]


def all_regions():
    """{number: [(path, what)]} over the library's tracked sources."""
    out = {}
    for rel in tracked_files(ROOT):
        if not rel.startswith(LIBRARY_DIRS) or not rel.endswith((".cpp", ".hpp")):
            continue
        lines = (ROOT / rel).read_text().split("\n")
        for _, _, number, what, _ in regions(lines, rel):
            out.setdefault(number, []).append((rel, what))
    return out


# ---------------------------------------------------------------- make

def cmd_make(args):
    known = assignments()
    chosen = parse_selection(args.assignments, known)
    marked = all_regions()
    for n in chosen:
        if n not in marked:
            raise KitError(f"assignment {n} ({known[n].name}) marks no region in the library's sources")
    out = Path(args.out).resolve()
    if out.exists() and any(out.iterdir()):
        raise KitError(f"{out} exists and is not empty: give a new folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=out.name + ".tmp-", dir=out.parent))
    try:
        count, stripped = 0, []
        for rel in tracked_files(ROOT):
            m = re.match(r"^course/(\d\d)-[^/]+/", rel)
            if INSTRUCTOR_ONLY.match(rel) or (m and int(m.group(1)) not in chosen):
                stripped.append(rel)  # only the handed-out assignments' READMEs
                continue
            src, dst = ROOT / rel, tmp / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            if rel.startswith(LIBRARY_DIRS) and rel.endswith((".cpp", ".hpp")):
                dst.write_text(stubbed(src.read_text(), rel, chosen))
            else:
                try:
                    text = src.read_text()
                except UnicodeDecodeError:
                    text = None
                student = text if text is None else for_students(text, rel, chosen)
                if student is None or student == text:
                    shutil.copy2(src, dst)
                else:
                    dst.write_text(student)
                    shutil.copymode(src, dst)
            count += 1
        # Nothing in the tree may send a student to a file it does not have.
        missing = names_of_missing_files(tmp, stripped)
        if missing:
            for path, line, name in missing[:20]:
                say(f"  {path}:{line} names {name}")
            raise KitError(f"the student tree names {len(missing)} times files it does not have (above): mark "
                           "those lines 'instructor only' (see for_students in course/kit.py)")
        if out.exists():
            out.rmdir()
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    say(f"student tree: {out} ({count} files), assignments {', '.join(map(str, chosen))} stubbed:")
    for n in chosen:
        for rel, what in marked[n]:
            say(f"  {n}  {rel}: {function_of(what)}")


# ---------------------------------------------------------------- the scratch build

def run(cmd, log, env=None, cwd=None, timeout=None):
    with open(log, "a") as f:
        f.write("$ " + " ".join(map(str, cmd)) + "\n")
        f.flush()
        return subprocess.run(list(map(str, cmd)), stdout=f, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                              timeout=timeout).returncode


def spliced(text, reference, path, own):
    """A student's library file with the code of every marked region of an
    assignment other than `own` replaced by the reference's code of that
    region (`own` None: the file as it is). The student tree keeps the
    markers of the handed-out assignments; the others are the reference's
    code already. A region is matched to the reference's by its number and
    marker text (the k-th of equal ones to the k-th)."""
    lines = text.split("\n")
    found = regions(lines, path)
    if own is None or all(number == own for _, _, number, _, _ in found):
        return text
    if reference is None:
        raise KitError(f"{path}: marks regions of assignments, but the reference has no such file")
    ref_lines = reference.split("\n")
    ref = {}
    for begin, end, number, what, _ in regions(ref_lines, path):
        ref.setdefault((number, what), []).append(ref_lines[begin + 1:end])
    out, pos, used = [], 0, {}
    for begin, end, number, what, _ in found:
        out.extend(lines[pos:begin + 1])
        if number == own:
            out.extend(lines[begin + 1:end])
        else:
            k = used[(number, what)] = used.get((number, what), -1) + 1
            bodies = ref.get((number, what), [])
            if k >= len(bodies):
                raise KitError(f"{path}:{begin + 1}: the marker 'BEGIN ASSIGNMENT {number}: {what}' is not the "
                               "reference's: a region's marker lines must stay as handed out")
            out.extend(bodies[k])
        out.append(lines[end])
        pos = end + 1
    out.extend(lines[pos:])
    return "\n".join(out)


def prepare_scratch(scratch, library_root, own=None):
    """scratch/src: the library's sources from library_root (the student's tree
    or the reference), with the kit's own CMakeLists.txt and test helpers;
    scratch/src/kit: the kit's grading project and hidden tests. With `own`
    an assignment number, the student's code of the other assignments'
    regions is replaced by the reference's (spliced): the library that
    grades assignment `own` holds the student's code for it alone, so a
    mistake is charged to the assignment whose region holds it. Files whose
    content is unchanged keep their time stamps, so a rebuild compiles only
    what differs from the last build in this scratch folder."""
    src = scratch / "src"
    wanted = {}
    for d in LIBRARY_DIRS:
        base = library_root / d
        if base.is_dir():
            for p in base.rglob("*"):
                if p.is_file() and p.suffix in (".cpp", ".hpp", ".h"):
                    wanted[p.relative_to(library_root).as_posix()] = p
    if not (library_root / "smallgrad.hpp").is_file():
        raise KitError(f"{library_root} has no smallgrad.hpp: not a smallgrad tree")
    wanted["smallgrad.hpp"] = library_root / "smallgrad.hpp"
    contents = {}
    if own is not None:
        for rel, p in wanted.items():
            if p.suffix in (".cpp", ".hpp"):
                text = p.read_text(errors="replace")
                if "BEGIN ASSIGNMENT" in text:
                    ref = ROOT / rel
                    contents[rel] = spliced(text, ref.read_text() if ref.is_file() else None, rel, own).encode()
    # Never the student's: the build of the library and everything the tests use.
    wanted["CMakeLists.txt"] = ROOT / "CMakeLists.txt"
    wanted["tests/test_util.hpp"] = ROOT / "tests" / "test_util.hpp"
    wanted["tests/nn_util.hpp"] = ROOT / "tests" / "nn_util.hpp"
    wanted["kit/CMakeLists.txt"] = COURSE / "CMakeLists.txt"
    wanted["kit/hidden_util.hpp"] = COURSE / "hidden_util.hpp"
    for folder in assignments().values():
        for p in (folder / "hidden").glob("*"):
            if p.is_file():
                wanted[f"kit/{folder.name}/hidden/{p.name}"] = p
    if src.exists():
        for p in list(src.rglob("*")):
            if p.is_file() and p.relative_to(src).as_posix() not in wanted:
                p.unlink()
    for rel, p in wanted.items():
        dst = src / rel
        data = contents[rel] if rel in contents else p.read_bytes()
        if dst.is_file() and dst.read_bytes() == data:
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(data)
    return src


def configure(scratch, log):
    build = scratch / "build"
    # Configured every time, also over an earlier scratch build: the kit's
    # CMakeLists globs the course/NN-name folders, and an assignment added
    # since the last run has no target until CMake runs again (a second run
    # over a cache takes a moment; the objects stay).
    cmd = ["cmake", "-S", scratch / "src" / "kit", "-B", build, "-DCMAKE_BUILD_TYPE=Release",
           f"-DSMALLGRAD_SOURCE={scratch / 'src'}"]
    if shutil.which("ccache"):
        # Its cache beside the scratch trees (a fresh clone starts with none,
        # and `rm -rf build` empties it), paths hashed relative to them: the
        # trees of check-tests' workers share their objects.
        base = default_scratch("")
        os.environ.setdefault("CCACHE_DIR", str(base / "ccache"))
        os.environ.setdefault("CCACHE_BASEDIR", str(base))
        cmd.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
    if run(cmd, log) != 0:
        raise KitError(f"configuring the grading build failed: see {log}")
    return build


def build_targets(build, targets, log, jobs):
    return run(["cmake", "--build", build, "-j", str(jobs), "--target", *targets], log)


def hidden_exe(build, n):
    for p in (build / f"hidden_{n:02d}", build / "kit" / f"hidden_{n:02d}"):
        if p.is_file():
            return p
    return build / f"hidden_{n:02d}"


def test_names(binary):
    r = subprocess.run([str(binary), "--list-test-names-only"], capture_output=True, text=True, timeout=60)
    names = [l for l in r.stdout.split("\n") if l.strip()]
    for name in names:
        if re.search(r"[,\[\]~\\*\"]", name):
            raise KitError(f"{binary.name}: test name '{name}' has a character Catch2 reads as syntax "
                           "(, [ ] ~ \\ * \"): rename it")
    return names


def failure_message(case):
    """The first failure of a Catch2 XML TestCase: expression, exception or FAIL text."""
    parts = []
    for el in case.iter():
        if el.tag == "Expression" and el.get("success") == "false":
            info = " ".join((el.findtext("Expanded") or "").split())
            exc = el.findtext("Exception")
            parts.append(f"{el.get('filename', '').split('/')[-1]}:{el.get('line')}: "
                         + (f"threw: {exc.strip()}" if exc else f"{(el.findtext('Original') or '').strip()} with {info}"))
            break
        if el.tag in ("Exception", "Failure", "FatalErrorCondition"):
            parts.append(f"{el.get('filename', '').split('/')[-1]}:{el.get('line')}: {(el.text or '').strip()}")
            break
    infos = [" ".join((i.text or "").split()) for i in case.iter("Info")]
    msg = parts[0] if parts else "failed"
    if infos:
        msg += " [" + "; ".join(infos[:3]) + "]"
    return msg[:2000]


def run_test(binary, name, timeout, env):
    """(passed, message) of one hidden test case, in its own process with a time limit."""
    try:
        r = subprocess.run([str(binary), name, "-r", "xml"], capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return False, f"timed out after {timeout} s"
    if r.returncode < 0:
        # A crash or an exception that escaped (std::terminate): libstdc++
        # prints the exception's message on stderr, after "what():".
        what = re.search(r"what\(\):\s*(.*)", r.stderr)
        return False, f"crashed (signal {-r.returncode})" + (f": {what.group(1).strip()}" if what else "")
    try:
        root = ET.fromstring(r.stdout)
    except ET.ParseError:
        return False, f"no report (exit code {r.returncode}): {r.stderr.strip()[:500]}"
    cases = list(root.iter("TestCase"))
    if len(cases) != 1:
        return False, f"expected one test case named '{name}', ran {len(cases)}"
    ok = cases[0].find("OverallResult").get("success") == "true"
    return ok, "" if ok else failure_message(cases[0])


def grade_tree(tree, chosen, scratch, timeout, jobs, log):
    """{number: (folder, [(name, passed, message)], build_error)}: each
    assignment's hidden tests run against a library that holds the tree's
    code in that assignment's regions and the reference's in the others'
    (prepare_scratch's `own`), so a mistake costs points only in the
    assignment whose region holds it."""
    results = {}
    known = assignments()
    env = dict(os.environ)
    build = None
    for n in chosen:
        folder = known[n]
        try:
            prepare_scratch(scratch, tree, own=n)
        except KitError as e:  # a region's marker lines changed: its code cannot be told apart
            results[n] = (folder, [], str(e))
            continue
        if build is None:
            build = configure(scratch, log)
        if build_targets(build, ["smallgrad"], log, jobs) != 0:
            results[n] = (folder, [], f"the library did not build with this assignment's code: see {log}")
            continue
        if build_targets(build, [f"hidden_{n:02d}"], log, jobs) != 0:
            results[n] = (folder, [], f"the hidden tests did not build against this library: see {log}")
            continue
        binary = hidden_exe(build, n)
        tests = [(name, *run_test(binary, name, timeout, env)) for name in test_names(binary)]
        results[n] = (folder, tests, None)
    return results


def hidden_test_count(n, folder):
    return len(re.findall(r"^TEST_CASE\(", "\n".join(p.read_text() for p in (folder / "hidden").glob("*.cpp")), re.M))


def write_grade(results, out_dir, tree):
    out_dir.mkdir(parents=True, exist_ok=True)
    doc = {"tree": str(tree), "assignments": []}
    suites = ET.Element("testsuites")
    total = total_max = 0
    for n, (folder, tests, error) in sorted(results.items()):
        max_points = hidden_test_count(n, folder)  # one point per hidden test case
        points = sum(1 for _, ok, _ in tests if ok) if not error else 0
        total, total_max = total + points, total_max + max_points
        entry = {"number": n, "name": folder.name, "points": points, "max_points": max_points,
                 "tests": [{"name": name, "passed": ok, "message": msg} for name, ok, msg in tests]}
        if error:
            entry["error"] = error
        doc["assignments"].append(entry)
        suite = ET.SubElement(suites, "testsuite", name=folder.name,
                              tests=str(max(len(tests), 1) if error else len(tests)),
                              failures=str(1 if error else sum(1 for _, ok, _ in tests if not ok)))
        if error:
            case = ET.SubElement(suite, "testcase", classname=folder.name, name="build")
            ET.SubElement(case, "failure", message=error)
        for name, ok, msg in tests:
            case = ET.SubElement(suite, "testcase", classname=folder.name, name=name)
            if not ok:
                ET.SubElement(case, "failure", message=msg).text = msg
    doc["points"], doc["max_points"] = total, total_max
    for name, data in (("grade.json", json.dumps(doc, indent=2) + "\n"),
                       ("grade.junit.xml", ET.tostring(suites, encoding="unicode") + "\n")):
        tmp = out_dir / f".{name}.tmp-{os.getpid()}"
        tmp.write_text(data)
        tmp.replace(out_dir / name)
    return doc


def default_scratch(kind):
    return Path(os.environ.get("COURSE_SCRATCH", ROOT / "build" / "course")) / kind


def handed_out(tree, known):
    """The assignments whose README the tree holds (course/NN-name/README.md),
    among the known ones: those a student tree was made with."""
    return sorted(n for n, f in known.items() if (tree / "course" / f.name / "README.md").is_file())


def cmd_grade(args):
    tree = Path(args.tree).resolve()
    if not tree.is_dir():
        raise KitError(f"student tree {tree} is not a folder")
    known = {n: f for n, f in assignments().items() if (f / "hidden").is_dir()}
    if args.assignments is None:
        # By default the assignments handed out in this tree: a student tree
        # holds the READMEs of those only (make leaves the others out).
        given = handed_out(tree, known)
        if not given:
            raise KitError(f"{tree} holds no course/NN-name/README.md of an assignment: not a student tree "
                           "made by scripts/course.sh make; name the assignments with --assignments")
        chosen = given
    else:
        chosen = parse_selection(args.assignments, known)
    scratch = Path(args.scratch).resolve() if args.scratch else default_scratch("grade")
    scratch.mkdir(parents=True, exist_ok=True)
    log = scratch / "build.log"
    log.write_text("")
    start = time.time()
    say(f"grading assignments {', '.join(map(str, chosen))}"
        + (" (those handed out in the tree)" if args.assignments is None else ""))
    results = grade_tree(tree, chosen, scratch, args.timeout, args.jobs, log)
    doc = write_grade(results, Path(args.out).resolve(), tree)
    for a in doc["assignments"]:
        say(f"assignment {a['number']:2d} {a['name']:<28} {a['points']:3d} / {a['max_points']}"
            + (f"   {a['error']}" if "error" in a else ""))
        for t in a["tests"]:
            if not t["passed"]:
                say(f"    FAILED {t['name']}: {t['message'][:300]}")
    say(f"total {doc['points']} / {doc['max_points']}; grade.json and grade.junit.xml in {Path(args.out).resolve()} "
        f"({time.time() - start:.0f} s)")
    return doc


# ---------------------------------------------------------------- planted bugs

def read_bug(path):
    """A planted bug: 'file:' and 'why:' lines, then the text to find and its
    replacement, between '<<<<', '====' and '>>>>' lines."""
    text = path.read_text()
    m = re.search(r"^file:\s*(\S+)\s*$", text, re.M)
    w = re.search(r"^why:\s*(.+)$", text, re.M)
    body = re.search(r"^<<<<\n(.*?)\n====\n(.*?)\n?>>>>$", text, re.M | re.S)
    if not (m and w and body):
        raise KitError(f"{path}: a bug file needs 'file: PATH', 'why: TEXT' and <<<< search ==== replace >>>>")
    return m.group(1), w.group(1).strip(), body.group(1), body.group(2)


def apply_bug(src_root, bug_path, number):
    rel, why, search, replace = read_bug(bug_path)
    target = src_root / rel
    if not target.is_file():
        raise KitError(f"{bug_path}: {rel} is not a library file")
    text = target.read_text()
    if text.count(search) != 1:
        raise KitError(f"{bug_path}: the text to replace occurs {text.count(search)} times in {rel}, not once")
    at = text.index(search)
    inside = any(text[:at].count("\n") > b and text[:at].count("\n") < e and n == number
                 for b, e, n, _, _ in regions(text.split("\n"), rel))
    if not inside:
        raise KitError(f"{bug_path}: the bug is not inside a region of assignment {number} in {rel}")
    target.write_text(text.replace(search, replace))
    return target, text, why


def cmd_check_tests(args, known=None):
    known = known or {n: f for n, f in assignments().items() if (f / "hidden").is_dir()}
    chosen = parse_selection(args.assignments, known)
    scratch = default_scratch("reference")
    scratch.mkdir(parents=True, exist_ok=True)
    log = scratch / "build.log"
    log.write_text("")
    start = time.time()
    # The reference must pass every hidden test first.
    results = grade_tree(ROOT, chosen, scratch, args.timeout, args.jobs, log)
    bad = [(n, name, msg) for n, (_, tests, err) in results.items() for name, ok, msg in tests if not ok]
    errors = [(n, err) for n, (_, _, err) in results.items() if err]
    if errors or bad:
        for n, err in errors:
            say(f"reference: assignment {n}: {err}")
        for n, name, msg in bad:
            say(f"reference FAILS hidden test of assignment {n}: {name}: {msg}")
        raise KitError("the reference (the library itself) must pass every hidden test")
    say(f"reference passes all {sum(len(t) for _, t, _ in results.values())} hidden tests "
        f"({time.time() - start:.0f} s)")
    # The planted bugs are tried `jobs` at a time, each worker in a scratch
    # tree of its own (a copy of the reference's, built once: with ccache,
    # from the first tree's objects), compiling with one job: a bug
    # recompiles one file, relinks and runs one test program, one core's
    # work, so two workers keep two cores busy where one left the second
    # idle (docs/course.md, "Self-check's time").
    trees = [(scratch / "build", scratch / "src", log)]
    for w in range(1, max(1, min(args.jobs, sum(len(list((known[n] / "bugs").glob("*.bug"))) for n in chosen)))):
        extra = default_scratch(f"reference-{w + 1}")
        extra.mkdir(parents=True, exist_ok=True)
        extra_log = extra / "build.log"
        extra_log.write_text("")
        prepare_scratch(extra, ROOT)
        extra_build = configure(extra, extra_log)
        if build_targets(extra_build, [f"hidden_{n:02d}" for n in chosen], extra_log, args.jobs) != 0:
            raise KitError(f"the reference did not build in a second scratch tree: see {extra_log}")
        trees.append((extra_build, extra / "src", extra_log))
    free = queue.Queue()
    for tree in trees:
        free.put(tree)
    printing = threading.Lock()

    def try_bug(n, bug):
        """(caught?, its line): one planted bug in a free scratch tree."""
        build, src, tree_log = free.get()
        try:
            t0 = time.time()
            target, original, why = apply_bug(src, bug, n)
            try:
                if build_targets(build, [f"hidden_{n:02d}"], tree_log, 1) != 0:
                    raise KitError(f"{bug}: the mutant does not compile (see {tree_log}); a planted bug must build")
                binary = hidden_exe(build, n)
                try:
                    r = subprocess.run([str(binary), "-r", "compact", "--abort"], capture_output=True, text=True,
                                       timeout=args.timeout)
                    hit = r.returncode != 0
                    first = next((l for l in r.stdout.split("\n") if "failed" in l), "").strip()
                except subprocess.TimeoutExpired:
                    hit, first = True, f"timed out after {args.timeout} s"
            finally:
                target.write_text(original)
            line = (f"  {n}  {'caught ' if hit else 'MISSED '} {bug.name:<40} {time.time() - t0:5.1f} s  {why}"
                    + (f"\n        {first[:200]}" if hit and args.verbose else ""))
            with printing:
                say(line)
            return hit
        finally:
            free.put((build, src, tree_log))

    scores, all_caught = {}, True
    work = []
    for n in chosen:
        bugs = sorted((known[n] / "bugs").glob("*.bug"))
        if len(bugs) < 5:
            say(f"assignment {n}: only {len(bugs)} planted bugs (at least 5 wanted)")
            all_caught = False
        work += [(n, bug) for bug in bugs]
        scores[n] = [0, len(bugs)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(trees)) as pool:
        for (n, _), hit in zip(work, pool.map(lambda nb: try_bug(*nb), work)):
            scores[n][0] += hit
    for n, (c, t) in scores.items():
        all_caught &= c == t
    # Rebuild the reference so the scratch trees are left as they were.
    for build, _, tree_log in trees:
        build_targets(build, [f"hidden_{n:02d}" for n in chosen], tree_log, args.jobs)
    say("mutation score per assignment:")
    for n, (c, t) in scores.items():
        say(f"  {n:2d} {known[n].name:<28} {c}/{t} = {100 * c / max(t, 1):.0f}%")
    say(f"check-tests: {time.time() - start:.0f} s")
    if not all_caught:
        raise KitError("mutation score below 100%: a hidden test must fail for every planted bug")


# ---------------------------------------------------------------- self-check

def cmd_self_check(args):
    start = time.time()
    known = {n: f for n, f in assignments().items() if (f / "hidden").is_dir()}
    # 1 and 2: the reference passes every hidden test; every planted bug is caught.
    cmd_check_tests(args, known)
    chosen = sorted(known)
    # 3: a student tree with every assignment handed out, and one with a
    # single one: the first fails every hidden test with a stub message, the
    # second only that assignment's.
    base = default_scratch("self-check")
    shutil.rmtree(base, ignore_errors=True)
    # The student trees build in check-tests' scratch folder: only the files
    # their stubs change recompile (prepare_scratch keeps the time stamps of
    # unchanged files), not a whole library again.
    grade_scratch = default_scratch("reference")
    single = max(chosen)
    for label, handed in (("all", chosen), (f"only-{single}", [single])):
        tree = base / f"student-{label}"
        cmd_make(argparse.Namespace(out=str(tree), assignments=",".join(map(str, handed))))
        log = base / f"grade-{label}.log"
        results = grade_tree(tree, chosen, grade_scratch, args.timeout, args.jobs, log)
        problems = []
        for n, (_, tests, err) in results.items():
            if err:
                problems.append(f"assignment {n}: {err}")
            for name, ok, msg in tests:
                # Its own stub's message: the other assignments' regions are
                # the reference's when it is graded (grade_tree).
                if n in handed and (ok or f"assignment {n} not written yet" not in msg):
                    problems.append(f"assignment {n} handed out, but '{name}' "
                                    + ("passes" if ok else f"fails without its stub message: {msg}"))
                if n not in handed and not ok:
                    problems.append(f"assignment {n} not handed out, but '{name}' fails: {msg}")
        # The stubs compile without warnings (the library's own flags,
        # -Wall -Wextra; ccache replays a cached compiler's warnings too).
        problems += [f"warning in a stubbed tree: {line.strip()}" for line in log.read_text().split("\n")
                     if "warning:" in line]
        if problems:
            for p in problems:
                say("  " + p)
            raise KitError(f"student tree with assignments {handed}: {len(problems)} problems")
        say(f"student tree ({label}): builds; hidden tests fail exactly for assignments {handed}, "
            f"each with its own stub's message")
        if args.public_build:
            # The public suite runs on the whole student tree's library (every
            # handed-out stub in it), not on the last assignment's spliced one.
            prepare_scratch(grade_scratch, tree)
            if build_targets(grade_scratch / "build", ["smallgrad"], log, args.jobs) != 0:
                raise KitError(f"student tree with assignments {handed}: its library does not build (see {log})")
            check_public_suite(handed, grade_scratch, args)
    if 0 in chosen and 1 in chosen:
        check_charged_where_held(base, grade_scratch, args)
    say(f"self-check passed in {time.time() - start:.0f} s")


def check_charged_where_held(base, scratch, args, bug_name="overwrite.bug"):
    """A student tree handing out 0 and 1, both written as the reference
    but for one planted engine bug (a tensor used twice keeps only its last
    gradient, which assignment 1's test of `(a * b) * a` would see through
    the engine): only assignment 0 loses points."""
    known = assignments()
    tree = base / "student-engine-bug"
    cmd_make(argparse.Namespace(out=str(tree), assignments="0,1"))
    for rel in tracked_files(ROOT):
        if rel.startswith(LIBRARY_DIRS) and rel.endswith((".cpp", ".hpp")) and (tree / rel).is_file():
            (tree / rel).write_text((ROOT / rel).read_text())  # the student wrote the reference's code
    _, _, why = apply_bug(tree, known[0] / "bugs" / bug_name, 0)
    results = grade_tree(tree, [0, 1], scratch, args.timeout, args.jobs, base / "grade-engine-bug.log")
    failed = {n: [name for name, ok, _ in tests if not ok] for n, (_, tests, _) in results.items()}
    errors = [f"assignment {n}: {err}" for n, (_, _, err) in results.items() if err]
    if errors or not failed[0] or failed[1]:
        for e in errors:
            say("  " + e)
        raise KitError(f"a tree whose only mistake is the engine's ({bug_name}: {why}) fails {len(failed[0])} "
                       f"hidden tests of assignment 0 and {len(failed[1])} of assignment 1 ({', '.join(failed[1])}): "
                       "it must lose points in assignment 0 alone")
    say(f"student tree with an engine bug ({bug_name}): fails {len(failed[0])} hidden tests of assignment 0, "
        "none of assignment 1")


def check_public_suite(handed, scratch, args):
    """The public suite of the main build (README's commands), run by ctest
    against the student tree's library (LD_LIBRARY_PATH comes before the
    test programs' RUNPATH): every failing test fails with a stub message,
    and every handed-out assignment has public tests that fail."""
    build = Path(args.public_build).resolve()
    if not (build / "CTestTestfile.cmake").is_file():
        raise KitError(f"--public-build {build} is not a configured build with tests")
    lib_dir = scratch / "build" / "smallgrad"
    junit = scratch / "public-suite.xml"
    env = dict(os.environ, LD_LIBRARY_PATH=str(lib_dir))
    start = time.time()
    # Not the two tests that install and build programs of their own: they
    # would test the install of the main build, not the student's library;
    # nor the two that compare the study's tables with the fixtures of an -O3
    # build to the last digit: the grading library is built at -O1, which
    # rounds differently (tests/check_study_table.cmake).
    subprocess.run(["ctest", "--test-dir", str(build), "-j", str(args.jobs), "--timeout", "600",
                    "-E", "^(install_and_consume|readme_commands|example_compare_table|example_compare_causal_table)$",
                    "--output-junit", str(junit)], capture_output=True, text=True, env=env)
    failing = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        if case.get("status") in ("fail", "failed") or case.find("failure") is not None:
            failing.append((case.get("name"), case.findtext("system-out") or ""))
    wrong = [name for name, out in failing if "not written yet" not in out]
    hit = {int(m) for _, out in failing for m in re.findall(r"assignment (\d+) not written yet", out)}
    # Assignment 0 is the engine: with it handed out, every backward and
    # every NoGradGuard stops at its stub first, which can hide the stubs of
    # the assignments that are backwards (a test stops at its first error).
    need = {0} if 0 in handed else set(handed)
    if wrong or not need <= hit:
        for name in wrong[:20]:
            say(f"  public test '{name}' fails without a stub message")
        raise KitError(f"public suite against the student library: {len(wrong)} tests fail for another reason; "
                       f"stub messages seen for assignments {sorted(hit)}, handed out {handed}")
    # `ctest -L aN` (the labels of tests/CMakeLists.txt) runs assignment N's
    # public tests: some of them fail with that assignment's stub message
    # (or the engine's, which stops them first when assignment 0 is out too).
    for n in handed:
        listed = subprocess.run(["ctest", "--test-dir", str(build), "-N", "-L", f"^a{n}$"], capture_output=True,
                                text=True).stdout
        labelled = set(re.findall(r"Test +#\d+: (.*)", listed))
        stubs = {n} | need
        if not any(name in labelled and any(f"assignment {s} not written yet" in out for s in stubs)
                   for name, out in failing):
            raise KitError(f"ctest -L a{n} lists {len(labelled)} public tests, and none fails with assignment "
                           f"{n}'s stub message: the label does not reach the assignment's tests")
    say(f"public suite against the student library: {len(failing)} tests fail, all with stub messages "
        f"(assignments {sorted(hit)}); ctest -L aN runs failing tests of each ({time.time() - start:.0f} s)")


# ---------------------------------------------------------------- summary

def read_grades(folder):
    """[(student, doc)] of every grade.json under folder (student: its
    folder's path under `folder`), checked; a KitError names a bad file."""
    folder = Path(folder)
    if not folder.is_dir():
        raise KitError(f"{folder} is not a folder")
    paths = sorted(folder.rglob("grade.json"))
    if not paths:
        raise KitError(f"no grade.json under {folder} (scripts/course.sh grade TREE --out {folder}/NAME writes one)")
    out = []
    for p in paths:
        try:
            doc = json.loads(p.read_text())
            for a in doc["assignments"]:
                int(a["number"]), str(a["name"]), int(a["points"]), int(a["max_points"])
                for t in a["tests"]:
                    str(t["name"]), bool(t["passed"]), str(t.get("message", ""))
            int(doc["points"]), int(doc["max_points"])
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as e:
            kind = "not JSON" if isinstance(e, json.JSONDecodeError) else f"not a grade ({type(e).__name__}: {e})"
            raise KitError(f"{p}: {kind}; grade.json files are written by scripts/course.sh grade")
        rel = p.parent.relative_to(folder).as_posix()
        out.append((rel if rel != "." else p.parent.name, doc))
    return out


def summarize(grades):
    """The class's numbers: per assignment and per hidden test."""
    assignments = {}
    for student, doc in grades:
        for a in doc["assignments"]:
            e = assignments.setdefault(a["number"], {"name": a["name"], "max": a["max_points"], "points": {},
                                                     "errors": 0, "tests": {}})
            e["max"] = max(e["max"], a["max_points"])
            e["points"][student] = a["points"]
            e["errors"] += "error" in a
            for t in a["tests"]:
                r = e["tests"].setdefault(t["name"], {"passed": 0, "failed": 0, "messages": {}})
                if t["passed"]:
                    r["passed"] += 1
                else:
                    r["failed"] += 1
                    # Grouped by the failed check (file, line, expression); the
                    # page shows the first full message of each group, with the
                    # context the test printed (what it got and wanted).
                    full = t.get("message") or "failed"
                    first = full.split(" [")[0][:160]
                    count, example = r["messages"].get(first, (0, full))
                    r["messages"][first] = (count + 1, example)
    return assignments


def test_order(name):
    """A hidden test's sort key: its number as numbers ("0.2" before "0.10"), then its name."""
    m = re.match(r"(\d+)\.(\d+)\b", name)
    return (int(m.group(1)), int(m.group(2)), name) if m else (1 << 30, 0, name)


def summary_html(grades, title):
    from html import escape as esc
    assignments = summarize(grades)
    n = len(grades)
    totals = sorted(doc["points"] for _, doc in grades)
    total_max = max(doc["max_points"] for _, doc in grades)

    def bar(frac, cls=""):
        return f'<span class="bar {cls}"><span style="width:{100 * frac:.1f}%"></span></span>'

    def histogram(values, top):
        counts = [values.count(v) for v in range(top + 1)]
        peak = max(counts) or 1
        cols = "".join(f'<div class="col" title="{c} student(s) with {v} point(s)"><span class="h" style="height:'
                       f'{60 * c / peak:.0f}px"></span><span class="c">{c or ""}</span><span class="v">{v}</span></div>'
                       for v, c in enumerate(counts))
        return f'<div class="hist">{cols}</div>'

    rows = []
    for num in sorted(assignments):
        a = assignments[num]
        pts = list(a["points"].values())
        full = sum(1 for p in pts if p == a["max"])
        mean = sum(pts) / len(pts)
        rows.append(f"<tr><td>{num}</td><td>{esc(a['name'])}</td><td>{len(pts)}</td>"
                    f"<td>{full} {bar(full / len(pts), 'ok')}</td><td>{mean:.1f} / {a['max']}</td>"
                    f"<td>{a['errors'] or ''}</td><td>{histogram(pts, a['max'])}</td></tr>")
    tests = []
    for num in sorted(assignments):
        for name, r in sorted(assignments[num]["tests"].items(), key=lambda kv: test_order(kv[0])):
            tests.append((num, name, r))
    worst = sorted((t for t in tests if t[2]["failed"]), key=lambda t: (-t[2]["failed"], t[0], test_order(t[1])))

    def test_row(num, name, r):
        ran = r["passed"] + r["failed"]
        msg = max(r["messages"].values(), key=lambda v: v[0]) if r["messages"] else None
        why = (f'<div class="msg">{esc(msg[1][:600])}{f" ({msg[0]} students)" if msg[0] > 1 else ""}</div>'
               if msg else "")
        return (f"<tr><td>{num}</td><td>{esc(name)}{why}</td><td>{r['passed']} / {ran}</td>"
                f"<td>{bar(r['passed'] / ran if ran else 0, 'ok')}</td></tr>")

    per_test = "\n".join(test_row(*t) for t in tests)
    worst_rows = "\n".join(test_row(*t) for t in worst[:10]) or '<tr><td colspan="4">every test passes for every student</td></tr>'
    nums = sorted(assignments)
    student_rows = "\n".join(
        f"<tr><td>{esc(student)}</td><td>{doc['points']} / {doc['max_points']}</td>" + "".join(
            (lambda a: f'<td class="{"full" if a and a["points"] == a["max_points"] else "part" if a and a["points"] else "zero"}">'
                       + (f"{a['points']}" + (" (did not build)" if "error" in a else "") if a else "") + "</td>")(next((x for x in doc["assignments"] if x["number"] == k), None))
            for k in nums) + "</tr>"
        for student, doc in sorted(grades, key=lambda g: g[0]))
    median = totals[len(totals) // 2] if len(totals) % 2 else (totals[len(totals) // 2 - 1] + totals[len(totals) // 2]) / 2
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; max-width: 1150px; }}
h1 {{ font-size: 22px; }} h2 {{ font-size: 17px; margin-top: 28px; }}
table {{ border-collapse: collapse; width: 100%; }}
th, td {{ border-bottom: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }}
th {{ background: #f3f3f3; }}
.bar {{ display: inline-block; width: 110px; height: 10px; background: #f1d0d0; vertical-align: middle; }}
.bar span {{ display: block; height: 100%; background: #4a9a5b; }}
.msg {{ color: #8a3b3b; font-size: 12px; font-family: monospace; white-space: pre-wrap; }}
.hist {{ display: flex; align-items: flex-end; gap: 2px; }}
.col {{ display: flex; flex-direction: column; align-items: center; width: 22px; font-size: 11px; }}
.col .h {{ width: 16px; background: #5b7fbf; }} .col .v {{ color: #666; }}
td.full {{ background: #d8efdc; }} td.part {{ background: #fbefc8; }} td.zero {{ background: #f6d3d3; }}
</style></head><body>
<h1>{esc(title)}</h1>
<p>{n} students; total points: median {median:g} of {total_max}, lowest {totals[0]}, highest {totals[-1]}.</p>
<h2>Per student</h2>
<table><tr><th>student</th><th>total</th>{"".join(f"<th>{k}</th>" for k in nums)}</tr>
{student_rows}
</table>
<h2>Totals</h2>
{histogram(totals, total_max)}
<h2>Per assignment</h2>
<table><tr><th>#</th><th>assignment</th><th>graded</th><th>full marks</th><th>mean points</th>
<th>did not build</th><th>points (students per value)</th></tr>
{"".join(rows)}
</table>
<h2>Tests that fail most</h2>
<table><tr><th>#</th><th>hidden test (and its most common first failure)</th><th>pass / ran</th><th></th></tr>
{worst_rows}
</table>
<h2>Every hidden test</h2>
<table><tr><th>#</th><th>hidden test</th><th>pass / ran</th><th></th></tr>
{per_test}
</table>
</body></html>
"""


def cmd_summary(args):
    grades = read_grades(args.folder)
    out = Path(args.out) if args.out else Path(args.folder) / "summary.html"
    page = summary_html(grades, args.title or f"Class summary: {Path(args.folder).resolve().name}")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    tmp.write_text(page)
    tmp.replace(out)
    say(f"summary of {len(grades)} grade.json files: {out.resolve()}")


# ---------------------------------------------------------------- main

def main():
    p = argparse.ArgumentParser(prog="scripts/course.sh", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make", help="write a student tree with the chosen assignments stubbed")
    m.add_argument("out")
    m.add_argument("assignments", nargs="?", default="all", help="comma-separated numbers, or all (default)")
    for name, hlp in (("grade", "grade a student tree: grade.json and grade.junit.xml"),
                      ("check-tests", "prove the hidden tests catch every planted bug"),
                      ("self-check", "check-tests, then student trees fail exactly the handed-out assignments")):
        s = sub.add_parser(name, help=hlp)
        if name == "grade":
            s.add_argument("tree")
            s.add_argument("--out", default=".", help="folder for grade.json and grade.junit.xml (default .)")
            s.add_argument("--scratch", help="scratch build folder (default build/course/grade)")
            s.add_argument("--assignments", default=None,
                           help="comma-separated numbers, or all (default: those handed out in TREE, "
                                "whose course/NN-name/README.md it holds)")
        else:
            s.add_argument("--assignments", default="all", help="comma-separated numbers, or all (default)")
        s.add_argument("--timeout", type=int, default=120, help="seconds per test case (default 120)")
        s.add_argument("--jobs", type=int, default=2)
        s.add_argument("--verbose", action="store_true")
        if name == "self-check":
            s.add_argument("--public-build", help="the main build (build/release): its public suite is "
                                                  "run by ctest against each student tree's library too")
    sm = sub.add_parser("summary", help="one offline HTML page from a folder of grade.json files (one per student)")
    sm.add_argument("folder", help="the folder of grade.json files, FOLDER/NAME/grade.json at any depth")
    sm.add_argument("--out", help="the page to write (default FOLDER/summary.html)")
    sm.add_argument("--title")
    args = p.parse_args()
    try:
        {"make": cmd_make, "grade": cmd_grade, "check-tests": cmd_check_tests, "self-check": cmd_self_check,
         "summary": cmd_summary}[args.cmd](args)
    except KitError as e:
        print(f"course.sh {args.cmd}: {e}", file=sys.stderr)
        return 1
    except subprocess.TimeoutExpired as e:
        print(f"course.sh {args.cmd}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"course.sh {args.cmd}: interrupted", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
