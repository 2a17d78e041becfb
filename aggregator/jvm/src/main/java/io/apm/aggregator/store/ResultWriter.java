package io.apm.aggregator.store;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * Writes result rows the way Cassandra takes them best: grouped per (table, partition) into
 * unlogged batches of at most {@code batchRows} rows (a single-partition batch is one mutation,
 * and exempt from Cassandra's batch size limits), with at most {@code maxInFlight} batches in
 * flight. Every statement is idempotent (keyed, {@code USING TIMESTAMP}), so a batch that
 * failed for a transient reason is sent again, whole, after a wait ({@link Retry}); one that the
 * database refused (a deterministic error) is sent again row by row, and a row still refused is
 * set aside: counted in {@link #refused()} and told to {@code onRefused}, because failing the
 * micro-batch would fail it again at every replay. A transient failure still there at the
 * deadline is final: {@link #flush()} throws, the micro-batch fails and is replayed from the
 * checkpoint, which writes the same rows again.
 */
public final class ResultWriter {
  /** Runs {@code task} after {@code delayMs}; the tests run it at once on a fake clock. */
  public interface Scheduler {
    void schedule(Runnable task, long delayMs);
  }

  /** The micro-batch's writes failed for good (a transient failure past the deadline). */
  public static final class WriteFailed extends RuntimeException {
    private static final long serialVersionUID = 1L;

    WriteFailed(String message, Throwable cause) {
      super(message, cause);
    }
  }

  private final WriteSink sink;
  private final int batchRows;
  private final Semaphore slots;
  private final int maxInFlight;
  private final Retry retry;
  private final Scheduler scheduler;
  private final Consumer<Object[]> onRefused;
  private final Map<List<Object>, List<Object[]>> pending = new LinkedHashMap<>();
  private final AtomicReference<Throwable> failed = new AtomicReference<>();
  private final AtomicLong rows = new AtomicLong();
  private final AtomicLong batches = new AtomicLong();
  private final AtomicLong retries = new AtomicLong();
  private final AtomicLong refused = new AtomicLong();

  public ResultWriter(
      WriteSink sink,
      int maxInFlight,
      int batchRows,
      Retry retry,
      Scheduler scheduler,
      Consumer<Object[]> onRefused) {
    if (maxInFlight < 1 || batchRows < 1) {
      throw new IllegalArgumentException("maxInFlight and batchRows must be >= 1");
    }
    this.sink = Objects.requireNonNull(sink);
    this.batchRows = batchRows;
    this.maxInFlight = maxInFlight;
    this.slots = new Semaphore(maxInFlight);
    this.retry = retry;
    this.scheduler = scheduler;
    this.onRefused = onRefused;
  }

  /**
   * Queues one row of {@code table} whose partition key is {@code partition} (any value with
   * equals: the key's columns as a list, say). A partition's batch is sent once it holds
   * {@code batchRows} rows; the rest go at {@link #flush()}.
   */
  public void add(String table, List<Object> partition, Object[] row) {
    List<Object> key = new ArrayList<>(2);
    key.add(table);
    key.add(partition);
    List<Object[]> batch = pending.computeIfAbsent(key, k -> new ArrayList<>());
    batch.add(row);
    if (batch.size() >= batchRows) {
      pending.remove(key);
      send(table, batch);
    }
  }

  /** Sends what is queued and waits for every batch; throws {@link WriteFailed} if any failed. */
  public void flush() {
    for (Map.Entry<List<Object>, List<Object[]>> e : pending.entrySet()) {
      send((String) e.getKey().get(0), e.getValue());
    }
    pending.clear();
    try {
      slots.acquire(maxInFlight); // every batch has ended (and its retries)
      slots.release(maxInFlight);
    } catch (InterruptedException exc) {
      Thread.currentThread().interrupt();
      throw new WriteFailed("interrupted while waiting for the writes", exc);
    }
    Throwable failure = failed.getAndSet(null);
    if (failure != null) {
      throw failure instanceof WriteFailed ? (WriteFailed) failure : new WriteFailed(failure.getMessage(), failure);
    }
  }

  private void send(String table, List<Object[]> batch) {
    try {
      slots.acquire();
    } catch (InterruptedException exc) {
      Thread.currentThread().interrupt();
      throw new WriteFailed("interrupted while waiting for a write slot", exc);
    }
    batches.incrementAndGet();
    attempt(table, batch, retry.start(), slots::release);
  }

  /**
   * One try of a batch; {@code ended} runs once when the batch has ended for good (written,
   * refused or failed). Runs in the driver's I/O threads, so it never blocks: the rows of a
   * refused batch are sent one after the other under the batch's own slot.
   */
  private void attempt(String table, List<Object[]> batch, Retry.Attempts attempts, Runnable ended) {
    CompletableFuture<Void> done;
    try {
      done = sink.write(table, batch).toCompletableFuture();
    } catch (RuntimeException exc) {
      done = CompletableFuture.failedFuture(exc);
    }
    done.whenComplete(
        (ok, error) -> {
          if (error == null) {
            rows.addAndGet(batch.size());
            ended.run();
            return;
          }
          Throwable cause = unwrap(error);
          if (sink.isTransient(cause)) {
            long wait = attempts.nextWaitMs();
            if (wait >= 0) {
              retries.incrementAndGet();
              scheduler.schedule(() -> attempt(table, batch, attempts, ended), wait);
              return;
            }
            failed.compareAndSet(
                null,
                new WriteFailed(
                    "writing " + batch.size() + " rows of " + table + " failed after "
                        + attempts.waits() + " retries: " + cause,
                    cause));
            ended.run();
            return;
          }
          if (batch.size() > 1) { // refused: find the rows that are, one statement each
            one(table, batch, 0, ended);
          } else {
            refused.incrementAndGet();
            onRefused.accept(batch.get(0));
            ended.run();
          }
        });
  }

  private void one(String table, List<Object[]> batch, int i, Runnable ended) {
    if (i == batch.size()) {
      ended.run();
      return;
    }
    List<Object[]> single = new ArrayList<>(1);
    single.add(batch.get(i));
    batches.incrementAndGet();
    attempt(table, single, retry.start(), () -> one(table, batch, i + 1, ended));
  }

  private static Throwable unwrap(Throwable error) {
    Throwable t = error;
    while ((t instanceof java.util.concurrent.CompletionException
            || t instanceof java.util.concurrent.ExecutionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  /** Rows written so far. */
  public long rows() {
    return rows.get();
  }

  /** Batches sent (first tries, and the single rows of a refused batch). */
  public long batches() {
    return batches.get();
  }

  /** Batches sent again after a transient failure. */
  public long retries() {
    return retries.get();
  }

  /** Rows the database refused for good, set aside. */
  public long refused() {
    return refused.get();
  }
}
