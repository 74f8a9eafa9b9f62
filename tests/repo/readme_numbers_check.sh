#!/bin/sh
# README.md quotes figures only inside the command outputs docs/generated.sh regenerates: outside a
# fenced block, a percentage would be a number copied by hand, and it would drift from what the
# commands print. Prints each such line and fails.
#   readme_numbers_check.sh README.md
awk '
  /^```/ { fenced = !fenced; next }
  !fenced && /[0-9]%/ { print FILENAME ":" FNR ": a percentage outside a generated block (quote the command that prints it): " $0; bad = 1 }
  END { exit bad }
' "$1"
