#!/bin/sh
# The course kit (docs/course.md):
#   scripts/course.sh make OUT [1,3,...|all]     a student tree with those assignments stubbed
#   scripts/course.sh grade STUDENT_TREE [--out DIR]   grade.json and grade.junit.xml
#   scripts/course.sh check-tests                 every planted bug caught by a hidden test
#   scripts/course.sh self-check [--public-build build/release]
# The work is done by course/kit.py (Python 3's standard library only).
exec /usr/bin/python3 "$(dirname "$0")/../course/kit.py" "$@"
