#!/bin/sh
# Compares two curve.csv files of train_encoder_mpi --float64: the same
# steps, and the losses equal to a relative 1e-6 (summed in another order:
# rounding only). Usage: check_mpi_curve.sh ONE.csv TWO.csv
set -eu
[ -s "$1" ] && [ -s "$2" ] || { echo "missing $1 or $2"; exit 1; }
paste -d, "$1" "$2" | awk -F, '
  NR == 1 { next }
  {
    rows++
    if ($1 != $6) { print "step " $1 " against step " $6; bad = 1; exit }
    d = $2 - $7; if (d < 0) d = -d
    rel = d / ($2 > 0 ? $2 : 1)
    if (!(rel <= 1e-6)) { print "step " $1 ": loss " $2 " one process, " $7 " two ranks"; bad = 1 }
    else print "step " $1 ": loss " $2 " and " $7
  }
  END {
    if (rows < 2) { print "only " rows " rows"; exit 1 }
    if (bad) exit 1
    print "the same loss curve, " rows " points"
  }'
