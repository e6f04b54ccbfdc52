package io.volpool.testing;

import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.TestWatcher;

/**
 * Prints why a test skipped (a GPU test on a machine without one, a tool that is missing) on the
 * console, where Maven's summary only counts skips. Registered for every test of both modules through
 * {@code junit-platform.properties} (extension autodetection).
 */
public final class SkipReasons implements TestWatcher {
  @Override
  public void testAborted(ExtensionContext context, Throwable cause) {
    System.out.println("[SKIPPED] " + context.getRequiredTestClass().getSimpleName() + " " + context.getDisplayName()
        + ": " + (cause == null ? "no reason given" : cause.getMessage()));
  }

  @Override
  public void testDisabled(ExtensionContext context, java.util.Optional<String> reason) {
    System.out.println("[SKIPPED] " + context.getRequiredTestClass().getSimpleName() + " " + context.getDisplayName()
        + ": " + reason.orElse("disabled"));
  }
}
