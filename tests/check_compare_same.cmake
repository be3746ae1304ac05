# Checks that two `train_encoder --compare` runs over the same trainings, one
# after another (--threads 1) in A and side by side (--threads 2) in B, wrote
# the same results: results.csv and results.md the same, digit for digit,
# but for the seconds column (wall time, measured).
foreach(f results.csv results.md)
  foreach(side A B)
    file(STRINGS ${${side}}/${f} rows_${side})
    set(kept_${side} "")
    foreach(row ${rows_${side}})
      # The seconds: the CSV's 7th field (task,positional,seed,acc_train_lengths,
      # acc_longer,steps_to_95,seconds,...), the table's last column "| 12.3 |".
      if(f STREQUAL "results.csv")
        string(REGEX REPLACE "^([^,]*,[^,]*,[^,]*,[^,]*,[^,]*,[^,]*,)[^,]*" "\\1" row "${row}")
      else()
        string(REGEX REPLACE "\\| [0-9.]+ \\|$" "|" row "${row}")
      endif()
      list(APPEND kept_${side} "${row}")
    endforeach()
  endforeach()
  list(LENGTH kept_A n)
  if(n LESS 3)
    message(FATAL_ERROR "${A}/${f} has ${n} lines: nothing to compare")
  endif()
  if(NOT kept_A STREQUAL kept_B)
    message(FATAL_ERROR "${f} differs between the runs one after another and side by side:\n${kept_A}\n--- side by side:\n${kept_B}")
  endif()
endforeach()
message("side by side: the same results, ${n} lines, as one after another")
