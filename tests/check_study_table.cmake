# The table a short `train_encoder --compare` prints (DIR/results.md) is the
# one checked in for this build's target, digit for digit but for the
# seconds column (wall time): the run is deterministic, so a change of any
# result (a kernel's order of sums, the training loop, the tasks) fails here
# until the tables are made again and the docs' tables with them
# (tests/README.md, "The README's and docs/results.md's tables"). The target is the "built for"
# row of DIR/settings.md (the vector width changes the order of some float
# sums); the checked-in copy is FIXTURES/<target>/NAME.md. Release builds
# only (tests/CMakeLists.txt): an -O1 build (asan, tsan) rounds otherwise.
#   cmake -DDIR=... -DFIXTURES=... -DNAME=compare [-DFILE=positions.md] [-DUPDATE=1] -P check_study_table.cmake
# FILE is the table's file in DIR (results.md unless given; only results.md
# has the seconds column). UPDATE=1 writes the copy instead of comparing (for
# a new target, or after a change that moves the results on purpose). The
# same script keeps the docs' tables, the full run's, in FIXTURES =
# tests/fixtures/doc_tables (the tests doc_tables and doc_tables_runs).
foreach(v DIR FIXTURES NAME)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check_study_table.cmake needs -D${v}=...")
  endif()
endforeach()
file(STRINGS ${DIR}/settings.md built REGEX "^\\| built for \\| ")
if(NOT built)
  message(FATAL_ERROR "${DIR}/settings.md has no 'built for' row")
endif()
string(REGEX REPLACE "^\\| built for \\| ([^:|]+).*" "\\1" target "${built}")
string(TOLOWER "${target}" target)
string(REGEX REPLACE "[^a-z0-9]+" "-" target "${target}")
if(NOT DEFINED FILE)
  set(FILE results.md)
endif()
# Read whole and split at newlines: read as a CMake list, rows holding "["
# would be joined.
file(READ ${DIR}/${FILE} text)
string(REGEX REPLACE "\n$" "" text "${text}")
set(table "")
while(NOT text STREQUAL "")
  string(FIND "${text}" "\n" end)
  if(end EQUAL -1)
    set(row "${text}")
    set(text "")
  else()
    string(SUBSTRING "${text}" 0 ${end} row)
    math(EXPR next "${end} + 1")
    string(SUBSTRING "${text}" ${next} -1 text)
  endif()
  if(row STREQUAL "")
    continue()  # (as file(STRINGS) did: empty lines are not part of the table)
  endif()
  if(FILE STREQUAL "results.md")
    string(REGEX REPLACE "\\| [0-9.]+ \\|$" "|" row "${row}")  # the seconds column
  endif()
  string(APPEND table "${row}\n")
endwhile()
set(copy ${FIXTURES}/${target}/${NAME}.md)
if(UPDATE)
  file(WRITE ${copy} "${table}")
  message("wrote ${copy}")
  return()
endif()
if(NOT EXISTS ${copy})
  message(FATAL_ERROR "no table checked in for this build's target '${target}' (${copy}); make it with "
                      "-DUPDATE=1 (tests/CMakeLists.txt, example_compare_table)")
endif()
file(READ ${copy} want)
if(NOT table STREQUAL want)
  message(FATAL_ERROR "${DIR}/${FILE} is not the table checked in for '${target}' (${copy}):\n"
                      "${table}\n--- checked in:\n${want}\n"
                      "If the results moved on purpose, make the copies again (-DUPDATE=1) and the docs' tables "
                      "with them (tests/README.md, \"The README's and docs/results.md's tables\").")
endif()
message("${FILE} is the table checked in for '${target}' (${copy})")
