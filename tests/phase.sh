#!/usr/bin/env bash
# `phase.sh FILE NAME COMMAND...` runs COMMAND and adds its wall time to phase NAME in FILE;
# `phase.sh FILE --table` prints each phase's total in the order phases first ran, their sum, and
# the wall time since `make test` began (FILE.start).
set -uo pipefail
file=$1
shift
if [ "${1:-}" = --table ]; then
  [ -s "$file" ] || exit 0
  awk -F'\t' '
    !($1 in total) { order[++n] = $1 }
    { total[$1] += $2; if ($3 != 0) failed[$1] = 1; sum += $2 }
    END {
      printf "\n%-14s %9s\n", "phase", "wall time"
      for (i = 1; i <= n; i++) {
        p = order[i]
        printf "%-14s %6d:%02d%s\n", p, total[p] / 60, total[p] % 60, (p in failed) ? "  FAILED" : ""
      }
      printf "%-14s %6d:%02d\n", "sum", sum / 60, sum % 60
    }' "$file"
  # Phases may run side by side, so the wall time since the start is not their sum.
  if [ -s "$file.start" ]; then
    elapsed=$(( $(date +%s) - $(cat "$file.start") ))
    printf '%-14s %6d:%02d\n' "wall" $(( elapsed / 60 )) $(( elapsed % 60 ))
  fi
  exit 0
fi
name=$1
shift
start=$(date +%s)
"$@"
status=$?
mkdir -p "$(dirname "$file")"
printf '%s\t%d\t%d\n' "$name" "$(( $(date +%s) - start ))" "$status" >> "$file"
exit "$status"
