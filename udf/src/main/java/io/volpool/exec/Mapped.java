package io.volpool.exec;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;

/**
 * Unmaps a spill file's mapping when the engine is done with it, instead of when the collector
 * happens to free its buffer: a deleted file stays on disk (and its pages in memory, counted in the
 * executor's RSS and its container's memory) for as long as it is mapped, so a task spilling volume
 * after volume would otherwise hold them all. Uses {@code sun.misc.Unsafe.invokeCleaner}, as Spark
 * does for its memory-mapped blocks; where that is unavailable the collector does it, as before.
 */
final class Mapped {
  private static final MethodHandle CLEANER = cleaner();

  private Mapped() {}

  private static MethodHandle cleaner() {
    try {
      Class<?> u = Class.forName("sun.misc.Unsafe");
      Field f = u.getDeclaredField("theUnsafe");
      f.setAccessible(true);
      return MethodHandles.lookup().findVirtual(u, "invokeCleaner", MethodType.methodType(void.class, ByteBuffer.class))
          .bindTo(f.get(null));
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  /**
   * Unmaps {@code b} (the buffer {@code FileChannel.map} returned, not a view of it) at once. No view
   * of it may be used afterwards: callers release a mapping only once its last reader is done.
   */
  static void release(MappedByteBuffer b) {
    if (b == null || CLEANER == null) {
      return;
    }
    try {
      CLEANER.invokeExact((ByteBuffer) b);
    } catch (Throwable e) {
      // left to the collector
    }
  }
}
