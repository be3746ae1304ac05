# Run by ctest (a TEST_INCLUDE_FILES script, after the Catch2 tests are
# discovered): labels each public test with the course assignments whose
# regions its test file checks, so that `ctest -L a3` runs assignment 3's
# public tests. Configured by tests/CMakeLists.txt with
#   EXE     the test program
#   LABELS  "file=aN" items: a test file under tests/ and the label of an
#           assignment that marks a region in the library file it mirrors
# and adds the label aN of a Catch2 tag [aN] on a test case, for the tests
# of an assignment that live in no mirroring file (second derivatives in
# tests/autograd/test_second_order.cpp, say).
# The test names come from --list-test-names-only (exact, as the discovery
# uses them) and each test's file from the verbose listing, in the same order
# (the files' paths are relative there, tests/...: tests/CMakeLists.txt
# compiles the tests with -fmacro-prefix-map, so that no path is wrapped).
set(EXE "@label_exe@")
set(LABELS "@label_map@")
if(NOT EXISTS "${EXE}" OR NOT LABELS)
  return()
endif()
# (Catch2 2's listings exit with the number of tests listed, not 0.)
execute_process(COMMAND "${EXE}" --list-test-names-only OUTPUT_VARIABLE names_out)
execute_process(COMMAND "${EXE}" --list-tests --verbosity high OUTPUT_VARIABLE long_out)
# Names may hold semicolons, CMake's list separator: held as @SEMI@ meanwhile.
string(REPLACE ";" "@SEMI@" names_out "${names_out}")
string(STRIP "${names_out}" names_out)  # no empty name at the end
string(REPLACE "\n" ";" names "${names_out}")
string(REPLACE ";" "@SEMI@" long_out "${long_out}")
string(REPLACE "\n" ";" long_lines "${long_out}")
set(files "")
set(tagged "")  # "index=aN" for a Catch2 tag [aN] on test index (tests whose file mirrors no region's)
set(index -1)
foreach(line IN LISTS long_lines)
  if(line MATCHES "^    (.*tests/.*\\.cpp):[0-9]+$")
    list(APPEND files "${CMAKE_MATCH_1}")
    math(EXPR index "${index} + 1")
  elseif(line MATCHES "^      \\[" AND index GREATER -1)
    string(REGEX MATCHALL "\\[a[0-9]+\\]" tags "${line}")
    foreach(tag IN LISTS tags)
      string(REGEX REPLACE "\\[(a[0-9]+)\\]" "\\1" tag "${tag}")
      list(APPEND tagged "${index}=${tag}")
    endforeach()
  endif()
endforeach()
list(LENGTH names n_names)
list(LENGTH files n_files)
if(NOT n_names EQUAL n_files)
  message(WARNING "assignment labels: ${n_names} test names but ${n_files} locations; tests not labelled")
  return()
endif()
math(EXPR last "${n_names} - 1")
foreach(i RANGE ${last})
  list(GET files ${i} file)
  set(labels "")
  foreach(item IN LISTS LABELS)
    string(REPLACE "=" ";" pair "${item}")
    list(GET pair 0 mapped)
    list(GET pair 1 label)
    if(file MATCHES "(^|/)tests/${mapped}$")
      list(APPEND labels ${label})
    endif()
  endforeach()
  foreach(item IN LISTS tagged)
    if(item MATCHES "^${i}=(a[0-9]+)$")
      list(APPEND labels ${CMAKE_MATCH_1})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES labels)
  if(labels)
    list(GET names ${i} name)
    string(REPLACE "@SEMI@" ";" name "${name}")
    set_tests_properties("${name}" PROPERTIES LABELS "${labels}")
  endif()
endforeach()
