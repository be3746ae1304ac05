# The table a `train_encoder --compare` prints (DIR/results.md) against the
# one checked in for this build, digit for digit but for the seconds column
# (wall time): the run is deterministic, so a change of any result (a
# kernel's order of sums, the training loop, the tasks) fails here until the
# tables are made again and the docs' tables with them (tests/README.md,
# "The README's and docs/results.md's tables").
#
# Which table: the "built for" row of DIR/settings.md names the vectors and
# the compiler's target, "AVX2+FMA: ... (-march=znver3 -mtune=znver3)". The
# vectors choose the folder, FIXTURES/<vectors>/ (avx2-fma here: the width
# changes the order of some float sums), holding NAME.md and builds.txt, the
# builds (one "-march=... -mtune=..." a line) that were run and printed it.
#   * the same table: passes, whichever the build;
#   * another table from a listed build: fails (a result moved);
#   * another table from a build never run before (a CPU the project has
#     not seen: -march=native picks its own target): the conclusions are
#     checked instead, with tolerances, and the difference is printed. The
#     same rows, the same chance column, and each accuracy within 0.05 plus
#     twice the two spreads of the checked-in one: the digits of a run
#     depend on the order of its float sums, the study's answers must not.
# A run with no folder for its vectors at all fails: make one (UPDATE).
#
#   cmake -DDIR=... -DFIXTURES=... -DNAME=compare [-DFILE=positions.md] [-DUPDATE=1] -P check_study_table.cmake
# FILE is the table's file in DIR (results.md unless given; only results.md
# has the seconds column). UPDATE=1 writes the copy and lists the build in
# builds.txt instead of comparing (a new target, or a change that moves the
# results on purpose: then every listed build must be run again). The same
# script keeps the docs' tables, the full run's, in FIXTURES =
# tests/fixtures/doc_tables (the tests doc_tables and doc_tables_runs).
cmake_minimum_required(VERSION 3.25)  # (script mode: if(IN_LIST) and today's policies)
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
set(build "unknown")
if(built MATCHES "\\(([^()]*)\\) \\|$")
  set(build "${CMAKE_MATCH_1}")
endif()
if(NOT DEFINED FILE)
  set(FILE results.md)
endif()

# The rows of the run's table file, the seconds column cut from results.md's
# (the checked-in copies have none). Read whole and split at newlines: read
# as a CMake list, rows holding "[" would be joined.
function(read_table path out)
  file(READ ${path} text)
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
  set(${out} "${table}" PARENT_SCOPE)
endfunction()

read_table(${DIR}/${FILE} table)
set(folder ${FIXTURES}/${target})
set(copy ${folder}/${NAME}.md)
set(builds_file ${folder}/builds.txt)
set(listed "")
if(EXISTS ${builds_file})
  file(STRINGS ${builds_file} listed)
endif()
if(UPDATE)
  file(WRITE ${copy} "${table}")
  if(NOT build IN_LIST listed)
    list(APPEND listed "${build}")
    list(SORT listed)
    list(JOIN listed "\n" text)
    file(WRITE ${builds_file} "${text}\n")
  endif()
  message("wrote ${copy} (build ${build}, listed in ${builds_file})")
  return()
endif()
if(NOT EXISTS ${copy})
  message(FATAL_ERROR "no table checked in for this build's vectors '${target}' (${copy}); make it with "
                      "-DUPDATE=1 (tests/CMakeLists.txt, example_compare_table)")
endif()
file(READ ${copy} want)
if(table STREQUAL want)
  if(build IN_LIST listed)
    message("${FILE} is the table checked in for '${target}' (${copy}), build ${build}")
  else()
    message("${FILE} is the table checked in for '${target}' (${copy}), also from build ${build}, "
            "not yet in ${builds_file}")
  endif()
  return()
endif()
if(build IN_LIST listed)
  message(FATAL_ERROR "${DIR}/${FILE} is not the table checked in for '${target}' (${copy}), "
                      "which build ${build} printed before:\n"
                      "${table}\n--- checked in:\n${want}\n"
                      "If the results moved on purpose, make the copies again (-DUPDATE=1) for every build "
                      "in ${builds_file}, and the docs' tables with them (tests/README.md, \"The README's and "
                      "docs/results.md's tables\").")
endif()

# ---- a build never run before: the conclusions, with tolerances ----
if(NOT FILE STREQUAL "results.md")
  message(FATAL_ERROR "${DIR}/${FILE} from build ${build} is not the table checked in for '${target}' (${copy}), "
                      "and only a results.md table has conclusions to check instead of digits:\n"
                      "${table}\n--- checked in:\n${want}")
endif()
# A table row: | task | kind | chance | a ± s | a ± s | a ± s | steps |.
# CMake's math is integer: accuracies are read in thousandths (three
# decimals, as the study prints them).
function(rows_of table out)
  string(REPLACE "\n" ";" lines "${table}")
  set(rows "")
  foreach(line IN LISTS lines)
    if(line STREQUAL "" OR line MATCHES "^\\| task \\|" OR line MATCHES "^\\|---")
      continue()
    endif()
    string(REGEX REPLACE "^\\| (.*) \\|$" "\\1" inner "${line}")
    string(REPLACE " | " ";" cells "${inner}")
    list(LENGTH cells n)
    set(values "")
    if(n EQUAL 7)
      list(SUBLIST cells 3 3 accuracies)
      foreach(a IN LISTS accuracies)
        if(NOT a MATCHES "^([0-9]+)\\.([0-9][0-9][0-9]) ± ([0-9]+)\\.([0-9][0-9][0-9])$")
          break()
        endif()
        math(EXPR mean "${CMAKE_MATCH_1} * 1000 + 1${CMAKE_MATCH_2} - 1000")
        math(EXPR spread "${CMAKE_MATCH_3} * 1000 + 1${CMAKE_MATCH_4} - 1000")
        list(APPEND values ${mean} ${spread})
      endforeach()
    endif()
    list(LENGTH values found)
    if(NOT found EQUAL 6)
      message(FATAL_ERROR "${DIR}/${FILE}: a row that is not 'task | kind | chance | three accuracies "
                          "(mean ± spread, 3 decimals) | steps': '${line}'")
    endif()
    list(SUBLIST cells 0 3 key)
    list(JOIN key "/" key)
    list(JOIN values "," values)
    list(APPEND rows "${key}/${values}")
  endforeach()
  set(${out} "${rows}" PARENT_SCOPE)
endfunction()
rows_of("${table}" got_rows)
rows_of("${want}" want_rows)
list(LENGTH got_rows n_got)
list(LENGTH want_rows n_want)
set(problems "")
if(NOT n_got EQUAL n_want)
  string(APPEND problems "  ${n_got} rows, the checked-in table has ${n_want}\n")
else()
  math(EXPR last "${n_got} - 1")
  set(columns "training lengths;longer lengths;positions 13-16")
  foreach(r RANGE ${last})
    list(GET got_rows ${r} g)
    list(GET want_rows ${r} w)
    string(REPLACE "/" ";" g "${g}")
    string(REPLACE "/" ";" w "${w}")
    list(SUBLIST g 0 3 g_key)
    list(SUBLIST w 0 3 w_key)
    list(JOIN g_key " / " name)
    if(NOT g_key STREQUAL w_key)
      list(JOIN w_key " / " want_name)
      string(APPEND problems "  row ${r}: ${name} (task / kind / chance), checked in: ${want_name}\n")
      continue()
    endif()
    list(GET g 3 g_values)
    list(GET w 3 w_values)
    string(REPLACE "," ";" g_values "${g_values}")
    string(REPLACE "," ";" w_values "${w_values}")
    foreach(c 0 1 2)
      math(EXPR m "2 * ${c}")
      math(EXPR s "2 * ${c} + 1")
      list(GET g_values ${m} gm)
      list(GET g_values ${s} gs)
      list(GET w_values ${m} wm)
      list(GET w_values ${s} ws)
      math(EXPR diff "${gm} - ${wm}")
      if(diff LESS 0)
        math(EXPR diff "-${diff}")
      endif()
      math(EXPR tolerance "50 + 2 * (${gs} + ${ws})")
      list(GET columns ${c} column)
      if(diff GREATER tolerance)
        string(APPEND problems "  ${name}, accuracy on ${column}: ${gm} against ${wm} (thousandths), "
                               "more than ${tolerance} apart\n")
      endif()
    endforeach()
  endforeach()
endif()
if(problems)
  message(FATAL_ERROR "${DIR}/${FILE} from build ${build}, which has no table of its own, does not reach the "
                      "conclusions of the one checked in for '${target}' (${copy}):\n${problems}"
                      "${table}\n--- checked in:\n${want}")
endif()
message("${FILE} from build ${build} differs from the table checked in for '${target}' (${copy}) in its "
        "digits, as a build not in ${builds_file} may, and reaches its conclusions (every accuracy within "
        "0.05 plus twice the spreads):\n${table}\n--- checked in:\n${want}")
