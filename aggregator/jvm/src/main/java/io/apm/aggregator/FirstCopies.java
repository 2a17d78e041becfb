package io.apm.aggregator;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.GroupState;

/**
 * The state function of the dedup operator: per key (metric, server bucket, time block) and
 * micro-batch, it passes on the rows whose (server, ts) the key has not seen and drops the
 * others. The key's state is its {@link SeenSamples}; it times out when the event-time
 * watermark passes the block's end, from when on every sample of the block is late and
 * Spark drops it before it gets here (and counts it in numRowsDroppedByWatermark).
 */
public final class FirstCopies implements FlatMapGroupsWithStateFunction<String, Row, byte[], Row> {
  private static final long serialVersionUID = 1L;

  private final long blockMicros;
  private final int serverField;
  private final int microsField;
  private final boolean streaming;

  /** {@code streaming} false: a batch query, which has no watermark and so no timeouts. */
  public FirstCopies(long blockMicros, int serverField, int microsField, boolean streaming) {
    if (blockMicros <= 0 || blockMicros > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("block must be 1 us to 2147 s, not " + blockMicros + " us");
    }
    this.blockMicros = blockMicros;
    this.serverField = serverField;
    this.microsField = microsField;
    this.streaming = streaming;
  }

  /** The start (us) of the block holding ``micros``. */
  public long blockStart(long micros) {
    return Math.floorDiv(micros, blockMicros) * blockMicros;
  }

  @Override
  public Iterator<Row> call(String key, Iterator<Row> rows, GroupState<byte[]> state) {
    if (state.hasTimedOut()) {
      state.remove();
      return Collections.emptyIterator();
    }
    SeenSamples seen = state.exists() ? SeenSamples.decode(state.get()) : new SeenSamples();
    List<Row> first = new ArrayList<>();
    long start = Long.MIN_VALUE;
    while (rows.hasNext()) {
      Row row = rows.next();
      long micros = row.getLong(microsField);
      if (start == Long.MIN_VALUE) {
        start = blockStart(micros);
      } else if (blockStart(micros) != start) {
        throw new IllegalStateException("key " + key + " holds samples of two blocks");
      }
      if (seen.add(row.getString(serverField), (int) (micros - start))) {
        first.add(row);
      }
    }
    if (!first.isEmpty()) {
      state.update(seen.encode());
    }
    if (streaming && start != Long.MIN_VALUE) {
      // The rows got here, so they are not late: the block's end is at or after the watermark.
      // The max() covers the eviction watermark running ahead of the one for late rows.
      long endMs = Math.floorDiv(start + blockMicros, 1000L);
      state.setTimeoutTimestamp(Math.max(endMs, state.getCurrentWatermarkMs() + 1));
    }
    return first.iterator();
  }
}
