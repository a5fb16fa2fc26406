#!/usr/bin/env bash
# Keep the tuning studies' finished work in the repository, or put it back on a new machine.
#   bash benchmarks/tuning/keep.sh save [STUDIES_DIR]      # studies -> benchmarks/tuning/studies/
#   bash benchmarks/tuning/keep.sh restore [STUDIES_DIR]   # benchmarks/tuning/studies/ -> studies
# What is kept: each study's Optuna journal (study.log: every trial asked, its values, its
# reports and its objective), tune.json (the study's base configuration, checked on resume)
# and its reports (tune.csv, best.json; tune.md is written again by the next worker). A trial
# that was running is not kept: after a restore, the next worker asks its values again (its
# machine is not the one it ran on).
set -euo pipefail
action=${1:?save or restore}
studies=${2:-/work/studies}
kept="$(cd "$(dirname "$0")" && pwd)/studies"
case "$action" in
  save)
    for dir in "$studies"/*/; do
      [ -f "$dir/study.log" ] || continue
      name=$(basename "$dir")
      mkdir -p "$kept/$name"
      for file in study.log tune.json tune.csv best.json; do
        [ -f "$dir/$file" ] && cp "$dir/$file" "$kept/$name/"
      done
      echo "kept $name"
    done
    ;;
  restore)
    for dir in "$kept"/*/; do
      name=$(basename "$dir")
      if [ -e "$studies/$name/study.log" ]; then
        echo "$studies/$name exists: left as it is"
        continue
      fi
      mkdir -p "$studies/$name"
      cp "$dir"/* "$studies/$name/"
      echo "restored $name"
    done
    ;;
  *) echo "keep.sh: save or restore, got $action" >&2; exit 2 ;;
esac
