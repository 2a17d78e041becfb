package io.apm.aggregator;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
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
 *
 * <p>v5: when holding (a grace given), the partials of {@code BY server} series are not returned
 * with their batch but kept in the key's state ({@link KeyState}, {@link HeldPartials}) until
 * their window completes, and the key's timeout is the earliest of its held windows' and its
 * block's end; each batch of a key also returns a heartbeat ({@link HeldPartials#heartbeat}).
 *
 * <p>Host tags (issue 37): a query that selects or groups by tags ({@link Selection#usesTags})
 * is matched per server and version of its tags ({@link TagTable}, from the driver's map through
 * {@link TagsRef}): the version that applies to the sample's window, so that one window's row
 * never mixes two versions. Its series is the query's one, or one per group ({@link
 * Selection#group}), held and written as a {@code BY server} query's servers are.
 */
public final class Summaries implements FlatMapGroupsWithStateFunction<String, Row, byte[], Row> {
  private static final long serialVersionUID = 1L;
  private static final int[] NONE = new int[0];
  private static final int UNKNOWN = -2;
  private static final int NOT_SELECTED = -1;

  private final long blockMicros;
  private final int sketchK;
  private final Selection[] queries;
  private final HashMap<String, int[]> byMetric; // the queries that match by name alone
  private final HashMap<String, int[]> taggedByMetric; // the queries that read host tags
  private final TagsRef tags;
  private final int packField;
  private final boolean streaming;
  private final LongAccumulator late;
  private final boolean hold;
  // A held partial of the window ending at e (s) is due when e * 1000 + offsetMs < watermark.
  private final long offsetMs;

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
    this(blockMicros, sketchK, queries, packField, streaming, late, 0L, -1L);
  }

  /**
   * As above; {@code graceMs} >= 0 (and streaming): a {@code BY server} series' partials are
   * held until the newest event time passes their window's end plus {@code graceMs}, which the
   * operator reads as the watermark plus {@code delayMs} (the watermark's delay), and then
   * returned together ({@link HeldPartials}). Below 0: returned with every batch, as before v5.
   */
  public Summaries(
      long blockMicros,
      int sketchK,
      List<Selection> queries,
      int packField,
      boolean streaming,
      LongAccumulator late,
      long delayMs,
      long graceMs) {
    this(blockMicros, sketchK, queries, packField, streaming, late, delayMs, graceMs, null);
  }

  /** As above; {@code tags} (null: none) hands each batch the driver's tag map. */
  public Summaries(
      long blockMicros,
      int sketchK,
      List<Selection> queries,
      int packField,
      boolean streaming,
      LongAccumulator late,
      long delayMs,
      long graceMs,
      TagsRef tags) {
    if (blockMicros <= 0 || blockMicros > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("block must be 1 us to 2147 s, not " + blockMicros + " us");
    }
    this.blockMicros = blockMicros;
    this.sketchK = sketchK;
    this.queries = queries.toArray(new Selection[0]);
    HashMap<String, List<Integer>> grouped = new HashMap<>();
    HashMap<String, List<Integer>> tagged = new HashMap<>();
    for (int i = 0; i < this.queries.length; i++) {
      (this.queries[i].usesTags ? tagged : grouped)
          .computeIfAbsent(this.queries[i].metric, m -> new ArrayList<>())
          .add(i);
    }
    this.byMetric = new HashMap<>();
    grouped.forEach((m, ix) -> byMetric.put(m, ix.stream().mapToInt(Integer::intValue).toArray()));
    this.taggedByMetric = new HashMap<>();
    tagged.forEach(
        (m, ix) -> taggedByMetric.put(m, ix.stream().mapToInt(Integer::intValue).toArray()));
    this.tags = tags;
    this.packField = packField;
    this.streaming = streaming;
    this.late = late;
    this.hold = streaming && graceMs >= 0;
    this.offsetMs = graceMs - delayMs;
  }

  /** The start (us) of the block holding {@code micros}. */
  public long blockStart(long micros) {
    return Math.floorDiv(micros, blockMicros) * blockMicros;
  }

  @Override
  public Iterator<Row> call(String key, Iterator<Row> rows, GroupState<byte[]> state) {
    long watermarkMs = streaming ? state.getCurrentWatermarkMs() : Long.MIN_VALUE;
    KeyState kept = state.exists() ? KeyState.decode(state.get()) : null;
    if (state.hasTimedOut()) {
      return timedOut(key, kept, watermarkMs, state);
    }
    // Late: at or before the batch's watermark in microseconds (Spark's own test for late rows,
    // eventTime <= watermark). The samples cross the shuffle in packs, and Spark would drop or
    // keep a pack whole, so the operator's input carries no event time Spark could test and
    // the operator drops the late samples one by one (docs/aggregator.md, "Lateness").
    long lateUpTo = streaming ? Math.multiplyExact(watermarkMs, 1000L) : Long.MIN_VALUE;
    KeyState keyState = kept == null ? KeyState.empty() : kept;
    Batch batch = new Batch(key, keyState.seen, lateUpTo);
    while (rows.hasNext()) {
      Pack.read(rows.next().getAs(packField), batch);
    }
    if (late != null && batch.late > 0) {
      late.add(batch.late);
    }
    List<Row> out = new ArrayList<>();
    int heldBefore = keyState.held.size();
    if (hold) {
      batch.partials.split(out, keyState.held);
      keyState.held.takeDue(watermarkMs, offsetMs, out);
      if (batch.newest != Long.MIN_VALUE) {
        out.add(HeldPartials.heartbeat(batch.newest));
      }
    } else {
      out.addAll(batch.partials.rows());
      keyState.held.takeAll(out); // held by a run that held them: nothing is left behind
    }
    // Held partials change only with new samples (merged) or when some fall due (taken).
    if (batch.added || keyState.held.size() != heldBefore) {
      // Without holding, the value stays version 1: what a checkpoint before v5 holds.
      state.update(hold ? keyState.encode() : keyState.seen.encode());
    }
    if (streaming && state.exists()) {
      timeout(key, keyState, watermarkMs, state);
    }
    return out.iterator();
  }

  /**
   * A key whose timeout passed: its due partials, and, once the watermark is past its block's
   * end, the rest and its state. Without holding a timeout is only ever the block's end.
   */
  private Iterator<Row> timedOut(
      String key, KeyState kept, long watermarkMs, GroupState<byte[]> state) {
    List<Row> out = new ArrayList<>();
    if (kept == null || !hold || Math.floorDiv(blockEnd(key), 1000L) < watermarkMs) {
      if (kept != null) {
        // Never due after the block's end: the delay is the lateness plus the longest window.
        kept.held.takeAll(out);
      }
      state.remove();
      return out.iterator();
    }
    kept.held.takeDue(watermarkMs, offsetMs, out);
    state.update(kept.encode());
    timeout(key, kept, watermarkMs, state);
    return out.iterator();
  }

  /**
   * The key's next timeout: when the watermark passes its block's end (then it is dropped), or
   * sooner its earliest held partial's. Spark keeps no timeout a call does not set again.
   */
  private void timeout(String key, KeyState keyState, long watermarkMs, GroupState<byte[]> state) {
    // The max() covers the block ending at the watermark plus a microsecond; a held partial
    // not yet due is at or after the watermark, which a timeout may not be before.
    long at = Math.max(Math.floorDiv(blockEnd(key), 1000L), watermarkMs + 1);
    state.setTimeoutTimestamp(Math.min(at, keyState.held.earliestTimeoutMs(offsetMs)));
  }

  /** The end (us) of the key's block: its last part is the block's number. */
  private long blockEnd(String key) {
    long block = Long.parseLong(key.substring(key.lastIndexOf('|') + 1));
    return Math.multiplyExact(block + 1, blockMicros);
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
    final int[] tagged;
    TagTable table;
    // Per server and tag query: the slot of each version of its tags (+1: none), or NOT_SELECTED.
    final HashMap<String, ServerGroups> groups = new HashMap<>();
    final HashMap<String, Integer> groupSlots = new HashMap<>();
    long start = Long.MIN_VALUE;
    long newest = Long.MIN_VALUE; // of the samples not late
    boolean added;
    long late;

    Batch(String key, SeenSamples seen, long lateUpTo) {
      this.key = key;
      this.metric = key.substring(0, Math.max(0, key.indexOf('|')));
      this.seen = seen == null ? new SeenSamples() : seen;
      this.lateUpTo = lateUpTo;
      this.tagged = taggedByMetric.getOrDefault(metric, NONE);
    }

    @Override
    public void sample(String server, long micros, double ts, double value, long digits) {
      if (micros <= lateUpTo) {
        late++;
        return;
      }
      newest = Math.max(newest, micros);
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
      if (wanted.length == 0 && tagged.length == 0) {
        return;
      }
      long[] fixed = Partials.exact(value, digits, exact) ? exact : null;
      if (wanted.length > 0) {
        int[] slot = slots.computeIfAbsent(server, s -> slots(wanted));
        for (int i = 0; i < wanted.length; i++) {
          int q = wanted[i];
          partials.add(slot[i], queries[q], queries[q].byServer ? server : null, ts, value, fixed);
        }
      }
      if (tagged.length > 0) {
        tagged(server, ts, value, fixed);
      }
    }

    /** The sample into each tag query's series, by the version of the window it falls in. */
    private void tagged(String server, double ts, double value, long[] fixed) {
      if (table == null) {
        table = tags == null ? TagTable.EMPTY : tags.table();
      }
      ServerGroups g = groups.computeIfAbsent(server, s -> new ServerGroups(table.versions(s)));
      for (int t = 0; t < tagged.length; t++) {
        Selection q = queries[tagged[t]];
        int width = q.windowSeconds;
        int v = TagTable.at(g.versions, Partials.windowEnd(ts, width) - width, width) + 1;
        int slot = g.slots[t][v];
        if (slot == UNKNOWN) {
          Map<String, String> at = v == 0 ? TagTable.NO_TAGS : g.versions[v - 1].tags;
          String label = q.group(server, at);
          slot = groupSlot(tagged[t], label);
          g.slots[t][v] = slot;
          g.labels[t][v] = label == null || label.isEmpty() ? null : label;
        }
        if (slot != NOT_SELECTED) {
          partials.add(slot, q, g.labels[t][v], ts, value, fixed);
        }
      }
    }

    /** The slot of a tag query's series: its index for its one series, else one per group. */
    private int groupSlot(int query, String label) {
      if (label == null) {
        return NOT_SELECTED;
      }
      if (label.isEmpty()) {
        return query;
      }
      return groupSlots.computeIfAbsent(query + "\t" + label, k -> nextSlot++);
    }

    /** One server's versions, and per tag query of the batch the slot of each. */
    private final class ServerGroups {
      final TagTable.Version[] versions;
      final int[][] slots;
      final String[][] labels; // the series of each slot: null for the query's one series

      ServerGroups(TagTable.Version[] versions) {
        this.versions = versions;
        int n = (versions == null ? 0 : versions.length) + 1;
        this.slots = new int[tagged.length][n];
        this.labels = new String[tagged.length][n];
        for (int[] row : slots) {
          java.util.Arrays.fill(row, UNKNOWN);
        }
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
