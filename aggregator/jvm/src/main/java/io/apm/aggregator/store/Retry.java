package io.apm.aggregator.store;

import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;

/**
 * The JVM side's one retry rule, the same as the Python side's {@code apm.retry.Backoff}:
 * waits that start at {@code initialMs} and double up to {@code capMs}, each moved by up to
 * {@code jitter} of itself either way (so that writers that failed together do not retry
 * together), until a deadline. The clock and the random source are passed in so that the
 * tests never sleep.
 */
public final class Retry {
  private final long initialMs;
  private final long capMs;
  private final double jitter;
  private final long deadlineMs;
  private final LongSupplier clockMs;
  private final DoubleSupplier random;

  public Retry(
      long initialMs, long capMs, double jitter, long deadlineMs, LongSupplier clockMs, DoubleSupplier random) {
    if (initialMs <= 0 || capMs < initialMs || jitter < 0 || jitter >= 1 || deadlineMs < 0) {
      throw new IllegalArgumentException(
          "retry needs 0 < initial <= cap, 0 <= jitter < 1 and a deadline >= 0");
    }
    this.initialMs = initialMs;
    this.capMs = capMs;
    this.jitter = jitter;
    this.deadlineMs = deadlineMs;
    this.clockMs = clockMs;
    this.random = random;
  }

  /** The rule the aggregator uses: 100 ms doubling to 5 s, +-20 %, for {@code deadlineMs}. */
  public static Retry standard(long deadlineMs) {
    return new Retry(
        100, 5_000, 0.2, deadlineMs, System::currentTimeMillis, () -> java.util.concurrent.ThreadLocalRandom.current().nextDouble());
  }

  /** One operation's attempts: when it started, and how many waits it has had. */
  public Attempts start() {
    return new Attempts(clockMs.getAsLong());
  }

  /** The attempts of one operation. */
  public final class Attempts {
    private final long startedMs;
    private int waits;

    private Attempts(long startedMs) {
      this.startedMs = startedMs;
    }

    /**
     * The milliseconds to wait before the next attempt, or -1 when the deadline is passed (or
     * would be by the end of the wait): then the failure is final.
     */
    public long nextWaitMs() {
      double base = Math.min((double) capMs, initialMs * Math.pow(2, Math.min(waits, 62)));
      long wait = Math.max(1L, Math.round(base * (1 + jitter * (2 * random.getAsDouble() - 1))));
      long elapsed = clockMs.getAsLong() - startedMs;
      if (elapsed + wait > deadlineMs) {
        return -1;
      }
      waits++;
      return wait;
    }

    public int waits() {
      return waits;
    }
  }
}
