# Sourced by scripts/volpool, scripts/class-archive and the device scripts: a class-data-sharing
# archive (JDK 17's AppCDS) of the classes a volpool job loads, so that a fresh JVM maps them instead
# of reading, verifying and linking about 10,000 classes from jars (Spark's session start, Parquet,
# the operators). Measured on a 2-core machine, the 1,024-volume job as a process: 7.0-8.3 s without,
# 4.6-5.5 s with (docs/benchmarks.md). The JVM maps an archive only for the same Java and a class path
# that starts with the archived one, jar for jar with the same size and time, and with the pointer
# mode it was dumped with (a heap of 32 GiB or more turns compressed pointers off); the stamp beside
# the archive records all three, so that a stale archive is noticed here, not by a JVM warning.

# volpool_job_classpath ROOT: the built job's class path spelled out in a fixed order (a wildcard expands
# in directory order, and an archive maps only onto the class path it was made for); fails saying how to
# build when the job is not built
volpool_job_classpath() {
  local jar
  jar=$(ls "$1"/job/target/volpool-job-*.jar 2>/dev/null | grep -v -e '-spark.jar' -e '-tests.jar' | head -1 || true)
  if [ -z "$jar" ] || [ ! -d "$1/job/target/lib" ]; then
    echo "volpool: the job is not built; run: mvn -q -B -DskipTests package" >&2
    return 1
  fi
  echo "$jar:$(ls "$1"/job/target/lib/*.jar | tr '\n' ':')"
}

# volpool_heap_flags JAVA_OPTIONS: the options among JAVA_OPTIONS that decide the pointer mode
volpool_heap_flags() {
  printf '%s\n' $1 | grep -E '^-Xmx|^-XX:[+-]UseCompressed(Oops|ClassPointers)' | tr '\n' ' '
}

# volpool_pointer_mode JAVA_OPTIONS: whether a JVM started with these options compresses its pointers
# (an explicit -XX:+/-UseCompressedOops, else a heap under 32 GiB; without -Xmx, a quarter of the memory)
volpool_pointer_mode() {
  local t mx="" explicit="" bytes
  for t in $1; do
    case $t in
      -Xmx*) mx=${t#-Xmx} ;;
      -XX:+UseCompressedOops) explicit=compressed ;;
      -XX:-UseCompressedOops) explicit=uncompressed ;;
    esac
  done
  if [ -n "$explicit" ]; then echo "pointers: $explicit"; return; fi
  case $mx in
    "") bytes=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) * 1024 / 4 )) ;;
    *[gG]) bytes=$(( ${mx%[gG]} * 1024 * 1024 * 1024 )) ;;
    *[mM]) bytes=$(( ${mx%[mM]} * 1024 * 1024 )) ;;
    *[kK]) bytes=$(( ${mx%[kK]} * 1024 )) ;;
    *) bytes=$mx ;;
  esac
  if [ "$bytes" -lt $((32 * 1024 * 1024 * 1024)) ]; then echo "pointers: compressed"; else echo "pointers: uncompressed"; fi
}

# volpool_archive_stamp JAVA CLASSPATH JAVA_OPTIONS: what the archive depends on, one line per item
volpool_archive_stamp() {
  local java=$1 cp=$2 e entries=()
  "$java" -version 2>&1
  volpool_pointer_mode "$3"
  local IFS=:
  for e in $cp; do
    [ -n "$e" ] && entries+=("$e")
  done
  # one stat for all entries (one process per jar cost 0.2 s of every start on a 2-core machine)
  [ ${#entries[@]} -eq 0 ] || stat -c '%n %s %Y' "${entries[@]}"
}

# volpool_archive_fresh JAVA CLASSPATH ARCHIVE JAVA_OPTIONS: true when ARCHIVE was made for exactly this Java,
# class path and pointer mode
volpool_archive_fresh() {
  [ -f "$3" ] && [ -f "$3.stamp" ] && [ "$(volpool_archive_stamp "$1" "$2" "$4")" = "$(cat "$3.stamp")" ]
}

# volpool_make_archive JAVA CLASSPATH ARCHIVE JAVA_OPTIONS -- TRAINING_ARGS...: runs VolpoolMain once
# with TRAINING_ARGS to list the classes it loads, then dumps them into ARCHIVE (a static archive: no
# base archive needed, so it works with the jlink'd runtime of the GPU machine too). Logs go to
# ARCHIVE.log. Returns non-zero (and leaves no archive) when either step fails.
volpool_make_archive() {
  local java=$1 cp=$2 archive=$3 opts=$4; shift 5
  local list="$archive.classlist" log="$archive.log"
  rm -f "$archive" "$archive.stamp" "$list"
  mkdir -p "$(dirname "$archive")"
  # shellcheck disable=SC2086
  if ! "$java" $opts -XX:DumpLoadedClassList="$list" -cp "$cp" io.volpool.job.VolpoolMain "$@" >"$log" 2>&1; then
    echo "volpool: the training run for the class archive failed; see $log" >&2
    return 1
  fi
  # the dump takes the training run's heap flags: an archive maps only into a JVM with the same
  # compressed-pointer mode, which a heap of 32 GiB or more turns off
  local heap
  heap=$(volpool_heap_flags "$opts")
  # shellcheck disable=SC2086
  if ! "$java" $heap -Xshare:dump -XX:SharedClassListFile="$list" -XX:SharedArchiveFile="$archive" -cp "$cp" >>"$log" 2>&1; then
    echo "volpool: dumping the class archive failed; see $log" >&2
    rm -f "$archive"
    return 1
  fi
  volpool_archive_stamp "$java" "$cp" "$opts" >"$archive.stamp"
  rm -f "$list"
}
