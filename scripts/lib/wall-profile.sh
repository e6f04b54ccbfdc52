# Sourced by the benchmarks that take PROFILER=.../libasyncProfiler.so (Maven Central: tools.profiler:async-profiler,
# its linux-x64/libasyncProfiler.so): one way to record a JVM's wall clock and to report it.
# wall_profile_opt FILE: the JVM option that records every thread every 5 ms into FILE (collapsed stacks).
wall_profile_opt() {
  echo "-agentpath:$PROFILER=start,event=wall,interval=5ms,threads,collapsed,file=$1"
}
# loop_profile_opt EVENT DIR: the same at EVENT (wall, or cpu: on-core time), one file of collapsed stacks a second
# in DIR (w-N.txt), for scripts/bench/steady-window.py to take the seconds of a run's steady window
loop_profile_opt() {
  echo "-agentpath:$PROFILER=start,event=$1,interval=5ms,threads,collapsed,loop=1s,file=$2/w-%n{9999}.txt"
}
# wall_profile_report FILE NAME: the task threads' time by frame (scripts/bench/wall-profile.py, 60 lines) on
# standard output, and the stacks gzipped as $OUT/wall-NAME.txt.gz
wall_profile_report() {
  python3 "$(dirname "${BASH_SOURCE[0]}")/../bench/wall-profile.py" "$1" 5 60 2>&1
  gzip -c "$1" >"$OUT/wall-$2.txt.gz"
}
