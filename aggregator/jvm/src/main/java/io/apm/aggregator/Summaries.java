package io.apm.aggregator;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.util.LongAccumulator;

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
 *       not one row per sample and query; per (query, server, window) for a {@code BY server}
 *       query.
 * </ol>
 *
 * Its input is {@link Pack}s, many samples a row (v4's step b). It drops and counts the samples
 * at or before the batch's watermark itself (Spark would drop or keep a pack whole). The key
 * times out when the watermark passes the block's end; from then on every sample of the block
 * is late.
 */
public final class Summaries implements FlatMapGroupsWithStateFunction<String, Row, byte[], Row> {
  private static final long serialVersionUID = 1L;
  private static final int[] NONE = new int[0];

  private final long blockMicros;
  private final int sketchK;
  private final Selection[] queries;
  private final HashMap<String, int[]> byMetric;
  private final int packField;
  private final boolean streaming;
  private final LongAccumulator late;

  /**
   * {@code packField}: the input's {@link Pack} column; the metric is the key's first part.
   * {@code streaming} false: a batch query, which has no watermark and so no timeouts and no late
   * samples. {@code late} (null: none) is told how many samples were dropped as late.
   */
  public Summaries(
      long blockMicros,
      int sketchK,
      List<Selection> queries,
      int packField,
      boolean streaming,
      LongAccumulator late) {
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
    this.packField = packField;
    this.streaming = streaming;
    this.late = late;
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
    // Late: at or before the batch's watermark in microseconds (Spark's own test for late rows,
    // eventTime <= watermark). The samples cross the shuffle in packs, and Spark would drop or
    // keep a pack whole, so the operator's input carries no event time Spark could test and
    // the operator drops the late samples one by one (docs/aggregator.md, "Lateness").
    long lateUpTo = streaming ? Math.multiplyExact(state.getCurrentWatermarkMs(), 1000L) : Long.MIN_VALUE;
    Batch batch = new Batch(key, state.exists() ? SeenSamples.decode(state.get()) : null, lateUpTo);
    while (rows.hasNext()) {
      Pack.read(rows.next().getAs(packField), batch);
    }
    if (late != null && batch.late > 0) {
      late.add(batch.late);
    }
    if (batch.added) {
      state.update(batch.seen.encode());
    }
    if (streaming && batch.start != Long.MIN_VALUE) {
      // A sample got past the late test, so the block's end is after the watermark.
      // The max() covers the block ending at the watermark plus a microsecond.
      long endMs = Math.floorDiv(batch.start + blockMicros, 1000L);
      state.setTimeoutTimestamp(Math.max(endMs, state.getCurrentWatermarkMs() + 1));
    }
    return batch.partials.rows().iterator();
  }

  /** One key's work in one micro-batch: every sample of its packs, in order. */
  private final class Batch implements Pack.Sink {
    final String key;
    final String metric;
    final long lateUpTo;
    final Partials partials = new Partials(sketchK, queries.length);
    final HashMap<String, int[]> matched = new HashMap<>();
    // Per server, the partials' slot of each matched query: the query's index, or for a BY
    // server query a slot of its own for (query, server), numbered from queries.length on.
    final HashMap<String, int[]> slots = new HashMap<>();
    int nextSlot = queries.length;
    final long[] exact = new long[2];
    SeenSamples seen;
    long start = Long.MIN_VALUE;
    boolean added;
    long late;

    Batch(String key, SeenSamples seen, long lateUpTo) {
      this.key = key;
      this.metric = key.substring(0, Math.max(0, key.indexOf('|')));
      this.seen = seen == null ? new SeenSamples() : seen;
      this.lateUpTo = lateUpTo;
    }

    @Override
    public void sample(String server, long micros, double ts, double value, long digits) {
      if (micros <= lateUpTo) {
        late++;
        return;
      }
      if (start == Long.MIN_VALUE) {
        start = blockStart(micros);
      } else if (blockStart(micros) != start) {
        throw new IllegalStateException("key " + key + " holds samples of two blocks");
      }
      if (!seen.add(server, (int) (micros - start))) {
        return;
      }
      added = true;
      int[] wanted = matched.computeIfAbsent(server, s -> match(metric, s));
      if (wanted.length == 0) {
        return;
      }
      long[] fixed = Partials.exact(value, digits, exact) ? exact : null;
      int[] slot = slots.computeIfAbsent(server, s -> slots(wanted));
      for (int i = 0; i < wanted.length; i++) {
        int q = wanted[i];
        partials.add(slot[i], queries[q], queries[q].byServer ? server : null, ts, value, fixed);
      }
    }

    private int[] slots(int[] wanted) {
      int[] out = wanted;
      for (int i = 0; i < wanted.length; i++) {
        if (queries[wanted[i]].byServer) {
          if (out == wanted) {
            out = wanted.clone();
          }
          out[i] = nextSlot++;
        }
      }
      return out;
    }
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
