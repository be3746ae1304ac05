# The checker of the study's tables (check_study_table.cmake) decides what
# a run on a new CPU means: digits for the builds listed beside a table,
# conclusions with tolerances for any other. Each case here writes a run
# (settings.md and results.md) and a checked-in table under WORK, runs the
# checker, and requires its status and a line of its message.
#   cmake -DCHECKER=.../check_study_table.cmake -DWORK=... -P check_study_table_test.cmake
cmake_minimum_required(VERSION 3.25)
foreach(v CHECKER WORK)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check_study_table_test.cmake needs -D${v}=...")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK})
set(header "| task | positional | chance | accuracy, training lengths 4-12 | accuracy, longer 13-16 | of which positions 13-16 | steps to 95% | seconds |\n|---|---|---|---|---|---|---|---|\n")
set(checked_in "${header}| shift | none | 0.077 | 0.193 ± 0.003 | 0.122 ± 0.004 | 0.127 ± 0.002 | never |\n| shift | rotary | 0.077 | 0.779 ± 0.241 | 0.744 ± 0.281 | 0.728 ± 0.287 | 600 |\n")
file(WRITE ${WORK}/fixtures/avx2-fma/compare.md "${checked_in}")
file(WRITE ${WORK}/fixtures/avx2-fma/builds.txt "-march=haswell -mtune=haswell\n")

# One case: the run's build and table, the status wanted (0 or 1) and a
# piece of the message wanted.
function(check_case name build rows want_status want_text)
  set(dir ${WORK}/${name})
  file(WRITE ${dir}/settings.md "| setting | value |\n|---|---|\n| built for | AVX2+FMA: 256-bit vectors, float tiles of 6 x 16 (${build}) |\n")
  # As the study writes it: with the seconds column.
  string(REGEX REPLACE "\\|\n" "| 12.5 |\n" with_seconds "${rows}")
  file(WRITE ${dir}/results.md "${header}${with_seconds}")
  execute_process(COMMAND ${CMAKE_COMMAND} -DDIR=${dir} -DFIXTURES=${WORK}/fixtures -DNAME=compare -P ${CHECKER}
                  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REPLACE "\n" " " all "${out}${err}")
  string(REGEX REPLACE " +" " " all "${all}")
  if(NOT status EQUAL want_status)
    message(FATAL_ERROR "case '${name}': status ${status}, wanted ${want_status}:\n${out}${err}")
  endif()
  string(FIND "${all}" "${want_text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "case '${name}': the message lacks '${want_text}':\n${out}${err}")
  endif()
  message("case '${name}': status ${status}, as wanted")
endfunction()

set(same "| shift | none | 0.077 | 0.193 ± 0.003 | 0.122 ± 0.004 | 0.127 ± 0.002 | never |\n| shift | rotary | 0.077 | 0.779 ± 0.241 | 0.744 ± 0.281 | 0.728 ± 0.287 | 600 |\n")
# Within 0.05 + 2 (0.241 + 0.200) of 0.779, steps changed: the same conclusions.
set(close "| shift | none | 0.077 | 0.190 ± 0.004 | 0.125 ± 0.004 | 0.130 ± 0.002 | never |\n| shift | rotary | 0.077 | 0.400 ± 0.200 | 0.500 ± 0.250 | 0.500 ± 0.250 | 800 (1/2 seeds) |\n")
# 0.293 against 0.193 with spreads of 0.003: past 0.05 + 2 (0.003 + 0.003).
set(far "| shift | none | 0.077 | 0.293 ± 0.003 | 0.122 ± 0.004 | 0.127 ± 0.002 | never |\n| shift | rotary | 0.077 | 0.779 ± 0.241 | 0.744 ± 0.281 | 0.728 ± 0.287 | 600 |\n")
set(nan "| shift | none | 0.077 | nan ± nan | 0.122 ± 0.004 | 0.127 ± 0.002 | never |\n| shift | rotary | 0.077 | 0.779 ± 0.241 | 0.744 ± 0.281 | 0.728 ± 0.287 | 600 |\n")
set(renamed "| shift | none | 0.077 | 0.193 ± 0.003 | 0.122 ± 0.004 | 0.127 ± 0.002 | never |\n| shift | alibi | 0.077 | 0.779 ± 0.241 | 0.744 ± 0.281 | 0.728 ± 0.287 | 600 |\n")
set(fewer "| shift | none | 0.077 | 0.193 ± 0.003 | 0.122 ± 0.004 | 0.127 ± 0.002 | never |\n")

check_case(same_listed "-march=haswell -mtune=haswell" "${same}" 0 "is the table checked in for 'avx2-fma'")
check_case(same_new "-march=znver9 -mtune=znver9" "${same}" 0 "not yet in")
check_case(moved_listed "-march=haswell -mtune=haswell" "${close}" 1 "which build -march=haswell -mtune=haswell printed before")
check_case(close_new "-march=znver9 -mtune=znver9" "${close}" 0 "reaches its conclusions")
check_case(far_new "-march=znver9 -mtune=znver9" "${far}" 1 "shift / none / 0.077, accuracy on training lengths: 293 against 193")
check_case(nan_new "-march=znver9 -mtune=znver9" "${nan}" 1 "a row that is not")
check_case(renamed_new "-march=znver9 -mtune=znver9" "${renamed}" 1 "shift / alibi / 0.077 (task / kind / chance), checked in: shift / rotary / 0.077")
check_case(fewer_new "-march=znver9 -mtune=znver9" "${fewer}" 1 "1 rows, the checked-in table has 2")
file(WRITE ${WORK}/no-vectors/settings.md "| built for | AVX-1024: imaginary (-march=future -mtune=future) |\n")
file(WRITE ${WORK}/no-vectors/results.md "${header}${same}")
execute_process(COMMAND ${CMAKE_COMMAND} -DDIR=${WORK}/no-vectors -DFIXTURES=${WORK}/fixtures -DNAME=compare -P ${CHECKER}
                RESULT_VARIABLE status OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT status EQUAL 1 OR NOT err MATCHES "no table checked in for this build's vectors 'avx-1024'")
  message(FATAL_ERROR "case 'no folder for its vectors': status ${status}:\n${err}")
endif()
message("every case as wanted")
