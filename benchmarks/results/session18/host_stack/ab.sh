#!/bin/bash
# Alternate the code before (86056f2, a worktree at /tmp/wt-before) and after, fresh processes.
for args in "trpo Pendulum-v1 gymnasium 3 65536" "trpo Hopper-v5 envpool 4 65536" "ddpg Hopper-v5 envpool 1 28000"; do
  out=host_run_$(echo $args | cut -d' ' -f1-2 | tr ' ' _).txt; : > $out
  for side in before after before after; do
    if [ $side = before ]; then pp=/tmp/wt-before; else pp=/work/main; fi
    echo "$side: $(PYTHONPATH=$pp python host_run.py $args 2>&1 | grep -v Warn | tail -1)" | tee -a $out
  done
done
: > host_collector.txt
for side in before after before after; do
  if [ $side = before ]; then pp=/tmp/wt-before; else pp=/work/main; fi
  echo "$side: $(PYTHONPATH=$pp python host_collector.py 2>&1 | grep -v Warn | tail -1)" | tee -a host_collector.txt
done
