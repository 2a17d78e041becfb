package io.apm.aggregator;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.GroupState;

/**
 * The state function of the aggregator's one JVM operator. Per key (metric, server bucket,
 * block of event time) and micro-batch it
 *
 * <ol>
 *   <li>drops every sample whose (server, ts) the key has seen, in this batch or an earlier
 *       one: its state is the key's {@link SeenSamples};
 *   <li>hands each new sample to the active queries on its metric whose selection takes its
 *       server ({@link Selection}, matched once per server and batch), and
 *   <li>returns one partial window summary per (query, window) it touched ({@link Partials}),
 *       not one row per sample and query.
 * </ol>
 *
 * The key times out when the event-time watermark passes the block's end; from then on every
 * sample of the block is late, and Spark drops (and counts) it before it gets here.
 */
public final class Summaries implements FlatMapGroupsWithStateFunction<String, Row, byte[], Row> {
  private static final long serialVersionUID = 1L;
  private static final int[] NONE = new int[0];

  private final long blockMicros;
  private final int sketchK;
  private final Selection[] queries;
  private final HashMap<String, int[]> byMetric;
  private final int serverField;
  private final int eventTimeField;
  private final int tsField;
  private final int valueField;
  private final boolean streaming;

  /**
   * {@code fields}: the input's server, event_time, ts and value column indexes; the metric is
   * the key's first part. {@code
   * streaming} false: a batch query, which has no watermark and so no timeouts.
   */
  public Summaries(
      long blockMicros, int sketchK, List<Selection> queries, int[] fields, boolean streaming) {
    if (blockMicros <= 0 || blockMicros > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("block must be 1 us to 2147 s, not " + blockMicros + " us");
    }
    this.blockMicros = blockMicros;
    this.sketchK = sketchK;
    this.queries = queries.toArray(new Selection[0]);
    HashMap<String, List<Integer>> grouped = new HashMap<>();
    for (int i = 0; i < this.queries.length; i++) {
      grouped.computeIfAbsent(this.queries[i].metric, m -> new ArrayList<>()).add(i);
    }
    this.byMetric = new HashMap<>();
    grouped.forEach((m, ix) -> byMetric.put(m, ix.stream().mapToInt(Integer::intValue).toArray()));
    this.serverField = fields[0];
    this.eventTimeField = fields[1];
    this.tsField = fields[2];
    this.valueField = fields[3];
    this.streaming = streaming;
  }

  /** The start (us) of the block holding {@code micros}. */
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
    Partials partials = new Partials(sketchK);
    HashMap<String, int[]> matched = new HashMap<>();
    String metric = key.substring(0, Math.max(0, key.indexOf('|')));
    long start = Long.MIN_VALUE;
    boolean added = false;
    while (rows.hasNext()) {
      Row row = rows.next();
      long micros = micros(row.get(eventTimeField));
      if (start == Long.MIN_VALUE) {
        start = blockStart(micros);
      } else if (blockStart(micros) != start) {
        throw new IllegalStateException("key " + key + " holds samples of two blocks");
      }
      String server = row.getString(serverField);
      if (!seen.add(server, (int) (micros - start))) {
        continue;
      }
      added = true;
      int[] wanted = matched.computeIfAbsent(server, s -> match(metric, s));
      if (wanted.length == 0) {
        continue;
      }
      double ts = row.getDouble(tsField);
      double value = row.getDouble(valueField);
      BigDecimal exact = Partials.fixed(value);
      for (int q : wanted) {
        partials.add(q, queries[q], ts, value, exact);
      }
    }
    if (added) {
      state.update(seen.encode());
    }
    if (streaming && start != Long.MIN_VALUE) {
      // The rows got here, so they are not late: the block's end is at or after the watermark.
      // The max() covers the eviction watermark running ahead of the one for late rows.
      long endMs = Math.floorDiv(start + blockMicros, 1000L);
      state.setTimeoutTimestamp(Math.max(endMs, state.getCurrentWatermarkMs() + 1));
    }
    return partials.rows().iterator();
  }

  /**
   * Spark's timestamp as microseconds: an Instant with spark.sql.datetime.java8API.enabled (the
   * aggregator's session, a cheap conversion), else a java.sql.Timestamp.
   */
  static long micros(Object time) {
    if (time instanceof java.time.Instant instant) {
      return Math.addExact(Math.multiplyExact(instant.getEpochSecond(), 1_000_000L), instant.getNano() / 1000);
    }
    java.sql.Timestamp stamp = (java.sql.Timestamp) time;
    return Math.floorDiv(stamp.getTime(), 1000L) * 1_000_000L + stamp.getNanos() / 1000;
  }

  private int[] match(String metric, String server) {
    int[] candidates = byMetric.getOrDefault(metric, NONE);
    int[] out = new int[candidates.length];
    int n = 0;
    for (int q : candidates) {
      if (queries[q].matches(server)) {
        out[n++] = q;
      }
    }
    return n == out.length ? out : java.util.Arrays.copyOf(out, n);
  }
}
