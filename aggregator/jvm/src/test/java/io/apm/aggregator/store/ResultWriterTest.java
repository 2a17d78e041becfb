package io.apm.aggregator.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The writer's batching, its bound on batches in flight and its retries, on a fake sink. */
class ResultWriterTest {
  static final class Transient extends RuntimeException {
    private static final long serialVersionUID = 1L;
  }

  static final class Refused extends RuntimeException {
    private static final long serialVersionUID = 1L;
  }

  /** A sink that completes writes when told to, and fails the ones a rule says. */
  static final class FakeSink implements WriteSink {
    final List<String> batches = new ArrayList<>();
    final List<CompletableFuture<Void>> open = new ArrayList<>();
    final AtomicInteger inFlight = new AtomicInteger();
    int maxInFlight;
    boolean hold;
    java.util.function.Function<List<Object[]>, RuntimeException> fail = rows -> null;

    @Override
    public synchronized CompletionStage<Void> write(String table, List<Object[]> rows) {
      batches.add(table + ":" + rows.size());
      RuntimeException error = fail.apply(rows);
      if (error != null) {
        return CompletableFuture.failedFuture(error);
      }
      CompletableFuture<Void> done = new CompletableFuture<>();
      if (!hold) {
        done.complete(null);
        return done;
      }
      maxInFlight = Math.max(maxInFlight, inFlight.incrementAndGet());
      open.add(done);
      return done;
    }

    synchronized void completeAll() {
      for (CompletableFuture<Void> f : open) {
        inFlight.decrementAndGet();
        f.complete(null);
      }
      open.clear();
    }

    @Override
    public boolean isTransient(Throwable failure) {
      return failure instanceof Transient;
    }
  }

  static final class FakeClock {
    final AtomicLong now = new AtomicLong(1_000);
  }

  static ResultWriter writer(FakeSink sink, FakeClock clock, int inFlight, int rows, List<Object[]> refused) {
    Retry retry = new Retry(100, 5_000, 0.2, 60_000, clock.now::get, () -> 0.5);
    // The scheduler advances the fake clock by the wait and runs the retry at once: no sleeping.
    ResultWriter.Scheduler now =
        (task, delayMs) -> {
          clock.now.addAndGet(delayMs);
          task.run();
        };
    return new ResultWriter(sink, inFlight, rows, retry, now, refused::add);
  }

  static Object[] row(int i) {
    return new Object[] {"q", "s" + i, i};
  }

  @Test
  void rowsAreBatchedPerPartitionUpToTheBatchSize() {
    FakeSink sink = new FakeSink();
    ResultWriter w = writer(sink, new FakeClock(), 4, 3, new ArrayList<>());
    for (int i = 0; i < 7; i++) {
      w.add("window_servers", List.of("q", 10L), row(i)); // one partition
    }
    w.add("server_series", List.of("q", "a", 1), row(0));
    w.add("server_series", List.of("q", "b", 1), row(1));
    w.flush();
    assertEquals(List.of("window_servers:3", "window_servers:3", "window_servers:1", "server_series:1", "server_series:1"), sink.batches);
    assertEquals(9, w.rows());
  }

  @Test
  void noMoreBatchesInFlightThanTheBound() throws Exception {
    FakeSink sink = new FakeSink();
    sink.hold = true;
    ResultWriter w = writer(sink, new FakeClock(), 2, 1, new ArrayList<>());
    Thread adder =
        new Thread(
            () -> {
              for (int i = 0; i < 6; i++) {
                w.add("t", List.of(i), row(i));
              }
              w.flush();
            });
    adder.start();
    for (int i = 0; i < 100 && sink.batches.size() < 6; i++) {
      Thread.sleep(5); // the adder blocks at the bound until the fake completes what is open
      sink.completeAll();
    }
    adder.join(5_000);
    sink.completeAll();
    assertEquals(6, sink.batches.size());
    assertTrue(sink.maxInFlight <= 2, "in flight: " + sink.maxInFlight);
    assertEquals(6, w.rows());
  }

  @Test
  void aTransientFailureIsRetriedWholeWithGrowingWaits() {
    FakeSink sink = new FakeSink();
    AtomicInteger failures = new AtomicInteger(3);
    sink.fail = rows -> failures.getAndDecrement() > 0 ? new Transient() : null;
    FakeClock clock = new FakeClock();
    ResultWriter w = writer(sink, clock, 4, 10, new ArrayList<>());
    for (int i = 0; i < 5; i++) {
      w.add("t", List.of("p"), row(i));
    }
    w.flush();
    assertEquals(List.of("t:5", "t:5", "t:5", "t:5"), sink.batches); // the same rows again
    assertEquals(3, w.retries());
    assertEquals(5, w.rows());
    assertEquals(1_000 + 100 + 200 + 400, clock.now.get()); // jitter 0 at random 0.5
  }

  @Test
  void aTransientFailurePastTheDeadlineFailsTheFlush() {
    FakeSink sink = new FakeSink();
    sink.fail = rows -> new Transient();
    ResultWriter w = writer(sink, new FakeClock(), 4, 10, new ArrayList<>());
    w.add("t", List.of("p"), row(0));
    ResultWriter.WriteFailed failed = assertThrows(ResultWriter.WriteFailed.class, w::flush);
    assertTrue(failed.getMessage().contains("retries"), failed.getMessage());
    assertEquals(0, w.rows());
    assertTrue(w.retries() > 5);
  }

  @Test
  void aRefusedBatchIsWrittenRowByRowAndOnlyTheBadRowIsSetAside() {
    FakeSink sink = new FakeSink();
    sink.fail = rows -> rows.stream().anyMatch(r -> r[1].equals("s2")) ? new Refused() : null;
    List<Object[]> refused = new ArrayList<>();
    ResultWriter w = writer(sink, new FakeClock(), 4, 10, refused);
    for (int i = 0; i < 4; i++) {
      w.add("t", List.of("p"), row(i));
    }
    w.flush(); // no exception: a refusal would fail every replay of the batch
    assertEquals(3, w.rows());
    assertEquals(1, w.refused());
    assertEquals("s2", refused.get(0)[1]);
    assertEquals(List.of("t:4", "t:1", "t:1", "t:1", "t:1"), sink.batches);
  }

  @Test
  void retryWaitsDoubleUpToTheCapWithJitter() {
    FakeClock clock = new FakeClock();
    Retry retry = new Retry(100, 400, 0.2, 10_000, clock.now::get, () -> 1.0);
    Retry.Attempts a = retry.start();
    assertEquals(120, a.nextWaitMs()); // +20 % at random 1.0
    assertEquals(240, a.nextWaitMs());
    assertEquals(480, a.nextWaitMs()); // capped at 400, then +20 %
    assertEquals(480, a.nextWaitMs());
    clock.now.addAndGet(9_600);
    assertEquals(-1, a.nextWaitMs()); // past the deadline
  }
}
