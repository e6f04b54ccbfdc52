package io.volpool.op;

import java.util.function.IntConsumer;

/** Runs independent units of a CPU kernel, on a pool its owner (the CPU backend) sizes and closes. */
@FunctionalInterface
public interface Parallel {
  /** Calls {@code body} for every unit in {@code [0, units)}, in any order and thread, and returns when all are done. */
  void forEach(int units, IntConsumer body);

  /** Everything on the calling thread (tests, the reference path). */
  Parallel SERIAL = (units, body) -> {
    for (int u = 0; u < units; u++) {
      body.accept(u);
    }
  };
}
