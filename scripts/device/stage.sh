#!/usr/bin/env bash
# Stages what the GPU machine needs, here (docs/gpu-testing.md, Steps 1-2), into ignored paths under .stage/:
# builds (unless SKIP_BUILD=1), packs the Java runtime and the class path (Spark's jars, then ours last, with the
# test launcher) into parts of at most 30 MiB (../shared/tools/device-stage.sh), and splits part-01's runtime
# archive in two (part-01 and part-01b): a call carries the working tree too, 64 MiB in all, and the tree is
# about 33 MiB. Also copies the golden cases (.stage/golden) and, when PROFILER_JAR names async-profiler's jar
# (tools.profiler:async-profiler:4.2, linux-x64), its library to .stage/prof/libasyncProfiler.so.
# Then, on the GPU machine, one call per part in order (carry .stage/parts/part-NN, command
# bash .stage/parts/part-NN/unpack.sh), back to back while the machine is warm.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ "${SKIP_BUILD:-0}" = 1 ] || mvn -o -q -B -DskipTests install
m2=${M2:-$HOME/.m2/repository}
rm -rf .stage/full .stage/parts .stage/golden
mkdir -p .stage/full/a .stage/full/z .stage/golden
find job/target/lib -name '*.jar' ! -name 'volpool-*' -exec cp {} .stage/full/a/ \;
cp udf/target/volpool-udf-*.jar job/target/volpool-job-*.jar bench/target/volpool-bench-*.jar \
  "$m2/org/assertj/assertj-core/3.27.7/assertj-core-3.27.7.jar" \
  "$m2"/org/junit/platform/junit-platform-console-standalone/1.14.1/junit-platform-console-standalone-1.14.1.jar \
  .stage/full/z/
rm -f .stage/full/z/*-sources.jar
cp -r ../shared/golden/* .stage/golden/
PART_MIB=30 ../shared/tools/device-stage.sh .stage/parts .stage/full/a .stage/full/z
# the runtime's archive (34 MiB) in two halves: part-01 copies the first to /tmp/stage, part-01b joins and unpacks
p1=.stage/parts/part-01
mkdir -p .stage/parts/part-01b/lib
split -b 17M "$p1/jre.tgz" "$p1/jre.tgz."
rm "$p1/jre.tgz"
mv "$p1/jre.tgz.ab" .stage/parts/part-01b/
if compgen -G "$p1/lib/*.jar" >/dev/null; then mv "$p1"/lib/*.jar .stage/parts/part-01b/lib/; fi
cat >"$p1/unpack.sh" <<'SH'
#!/usr/bin/env bash
set -e
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/stage/lib
cp "$here/jre.tgz.aa" /tmp/stage/
echo "staged part-01: first half of the runtime"
SH
cat >.stage/parts/part-01b/unpack.sh <<'SH'
#!/usr/bin/env bash
set -e
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/stage/lib
cat /tmp/stage/jre.tgz.aa "$here/jre.tgz.ab" | tar -xz -C /tmp/stage
rm -f /tmp/stage/jre.tgz.aa
cp "$here"/lib/*.jar /tmp/stage/lib/ 2>/dev/null || true
echo "staged part-01b: runtime $(/tmp/stage/jre/bin/java -version 2>&1 | head -1), $(ls /tmp/stage/lib | wc -l) jars so far"
SH
chmod +x "$p1/unpack.sh" .stage/parts/part-01b/unpack.sh
if [ -n "${PROFILER_JAR:-}" ]; then
  rm -rf .stage/prof /tmp/ap-unzip && mkdir -p .stage/prof /tmp/ap-unzip
  unzip -q -o "$PROFILER_JAR" -d /tmp/ap-unzip
  find /tmp/ap-unzip -name libasyncProfiler.so -exec cp {} .stage/prof/ \;
fi
tree=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
echo "parts (the working tree, $((tree >> 20)) MiB, travels with each):"
for d in .stage/parts/part-*; do
  s=$(du -sb "$d" | cut -f1)
  echo "  $d $((s >> 20)) MiB$([ $((s + tree)) -gt $((64 << 20)) ] && echo ' OVER 64 MiB with the tree')"
done
