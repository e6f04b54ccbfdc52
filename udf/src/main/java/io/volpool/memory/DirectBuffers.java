package io.volpool.memory;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;

/**
 * Frees a direct or mapped buffer when its owner is done with it, instead of when the collector
 * happens to find it: a large page buffer or a spill file's mapping would otherwise stay in the
 * executor's memory (and its container's) until a collection that may come much later. Uses
 * {@code sun.misc.Unsafe.invokeCleaner}, as Spark and Netty do; where that is unavailable the
 * collector frees the buffer, as before.
 */
public final class DirectBuffers {
  private static final MethodHandle CLEANER = cleaner();

  private DirectBuffers() {}

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
   * Frees {@code b} at once: a buffer from {@code allocateDirect} or {@code FileChannel.map}, not a
   * view of one. No view of it may be used afterwards. Heap buffers and null are ignored.
   */
  public static void free(ByteBuffer b) {
    if (b == null || !b.isDirect() || CLEANER == null) {
      return;
    }
    try {
      CLEANER.invokeExact(b);
    } catch (Throwable e) {
      // left to the collector
    }
  }
}
