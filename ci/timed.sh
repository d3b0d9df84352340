#!/usr/bin/env bash
# Run one command under GNU time and keep it as a timed log for
# `harness report timings --record`: header lines (name, command, commit,
# date, machine), then the command's output, then GNU time's report.
#
#   bash ci/timed.sh LOG NAME DIR COMMAND
#
# COMMAND is one string, run by bash -c in DIR (a git checkout, whose
# commit the log names); the environment passes through. With
# TIMED_TEE=1 the output also goes to stdout. Exits with the command's
# status.
set -uo pipefail
[ $# -eq 4 ] || { echo "usage: bash ci/timed.sh LOG NAME DIR COMMAND" >&2; exit 2; }
log=$1 name=$2 dir=$3 cmd=$4
[ -x /usr/bin/time ] || { echo "GNU time is missing (apt-get install time)" >&2; exit 3; }
{
  echo "# name: $name"
  echo "# command: $cmd"
  echo "# commit: $(git -C "$dir" rev-parse --short HEAD)"
  echo "# date: $(date -u +%F)"
  echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f", $2/1048576}' /proc/meminfo) GiB"
} > "$log" || exit 2
cd "$dir" || exit 2
# time -v's labels, the ones `harness report timings` reads, appended to
# the log only.
format='Elapsed (wall clock) time (h:mm:ss or m:ss): %E
User time (seconds): %U
System time (seconds): %S
Maximum resident set size (kbytes): %M
Exit status: %x'
timed() { /usr/bin/time -o "$log" -a -f "$format" bash -c "$cmd"; }
if [ -n "${TIMED_TEE:-}" ]; then
  timed 2>&1 | tee -a "$log"
  exit "${PIPESTATUS[0]}"
fi
timed >> "$log" 2>&1
