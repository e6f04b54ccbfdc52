package io.volpool.memory;

/**
 * A single request for host memory is larger than the memory budget can ever grant; the message
 * names what needed the memory, its size and the setting to raise.
 */
public class MemoryBudgetException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final long requested;
  private final long limit;

  public MemoryBudgetException(String message, long requested, long limit) {
    super(message);
    this.requested = requested;
    this.limit = limit;
  }

  public long requested() {
    return requested;
  }

  public long limit() {
    return limit;
  }
}
