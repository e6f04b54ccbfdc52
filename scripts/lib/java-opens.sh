# Sourced by the scripts that start a Spark JVM: the --add-opens Spark's own launcher adds on Java 17
# (the same list as the pom's spark.opens property, which Maven's test JVMs use).
JAVA_OPENS="-Djdk.reflect.useDirectMethodHandle=false"
for _p in java.lang java.lang.invoke java.lang.reflect java.io java.net java.nio java.util java.util.concurrent \
          java.util.concurrent.atomic jdk.internal.ref sun.nio.ch sun.nio.cs sun.security.action sun.util.calendar; do
  JAVA_OPENS="$JAVA_OPENS --add-opens=java.base/$_p=ALL-UNNAMED"
done
unset _p
