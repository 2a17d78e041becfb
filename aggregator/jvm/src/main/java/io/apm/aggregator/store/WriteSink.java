package io.apm.aggregator.store;

import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * Where {@link ResultWriter} sends its batches: one table's rows of one partition, written as
 * one unlogged batch (or one statement for a single row). {@link CassandraSink} is the real one;
 * the tests pass fakes that fail the way the driver does.
 */
public interface WriteSink {
  /** Writes {@code rows} (the bound values of {@code table}'s insert, one partition). */
  CompletionStage<Void> write(String table, List<Object[]> rows);

  /** Whether a failure of {@link #write} may pass if the same rows are sent again. */
  boolean isTransient(Throwable failure);
}
