#!/usr/bin/env python3
"""The tables that README.md and docs/results.md mark as a command's output,

    <!-- table: tests/fixtures/doc_tables/avx-512/compare.md -->

or, for some of its rows only (a regular expression on each row),

    <!-- table: tests/fixtures/doc_tables/avx-512/positions.md rows: ^\\| shift \\| -->

are, line for line, those files: the tables their commands print, checked
in. tests/check_study_table.cmake writes the files from a run (-DUPDATE=1)
and compares a new run with them (the test doc_tables_runs). The table is
the run of lines starting with "|" right after the marker. The seconds
column (wall time, not deterministic) is not in the docs: its cells are not
in the files either (check_study_table.cmake leaves them out), and its
header cell is dropped here.

    tests/doc_tables.py SOURCE_DIR
"""
import re
import sys
from pathlib import Path

MARKER = re.compile(r"^<!-- table: (\S+)(?: rows: (.*))? -->$")


def expected(path, rows):
    lines = path.read_text(encoding="utf-8").splitlines()
    if len(lines) < 2:
        sys.exit(f"FAIL: {path} holds no table")
    header, separator, body = lines[0], lines[1], lines[2:]
    if header.endswith(" seconds |"):
        header = header[: -len(" seconds |")]
        separator = separator[: -len("---|")]
    if rows:
        body = [line for line in body if re.search(rows, line)]
    return [header, separator] + body


def main():
    source = Path(sys.argv[1])
    checked = 0
    for doc in ("README.md", "docs/results.md"):
        lines = (source / doc).read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            m = MARKER.match(line)
            if not m:
                continue
            table = []
            for row in lines[number:]:
                if not row.startswith("|"):
                    break
                table.append(row)
            name = m.group(1)
            if not table:
                sys.exit(f"FAIL: {doc}:{number}: no table right after the marker for {name}")
            if not (source / name).is_file():
                sys.exit(f"FAIL: {doc}:{number}: {name} does not exist")
            want = expected(source / name, m.group(2))
            if table != want:
                diff = [f"  line {i + 1} of the table:\n    doc:  {a}\n    file: {b}"
                        for i, (a, b) in enumerate(zip(table, want)) if a != b]
                if len(table) != len(want):
                    diff.append(f"  the doc's table has {len(table)} lines, the file's {len(want)}")
                sys.exit(f"FAIL: {doc}:{number}: the table is not {name}"
                         + (f" (its rows matching {m.group(2)})" if m.group(2) else "") + ":\n"
                         + "\n".join(diff[:5])
                         + "\nPaste the command's table (tests/README.md, \"The README's and docs/results.md's tables\").")
            checked += 1
    if checked == 0:
        sys.exit("FAIL: no marked table in README.md or docs/results.md: the markers were lost")
    print(f"{checked} tables of README.md and docs/results.md are their commands' output")


if __name__ == "__main__":
    main()
