package io.apm.aggregator;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.datasketches.kll.KllDoublesSketch;
import org.apache.datasketches.memory.Memory;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;

/**
 * The partial summaries of {@code BY server} series that one dedup key holds until their window
 * completes (v5): per (query, server, window end), the same fields as a {@link Partials} row,
 * merged as batches add samples. A window completes when the newest event time the job has
 * seen passes its end plus a grace; {@link Summaries} then hands every key's partials of that
 * window to the window aggregation in one micro-batch, so a server's window row is merged,
 * evaluated and written once, not on every batch while it is open. A sample that arrives after
 * that, within the allowed lateness, is held again and is due at once: the refinement.
 *
 * <p>Due times are compared with the watermark, which trails the newest event time by the
 * watermark's delay: a partial is due when {@code end + grace - delay < watermark}, the same
 * strict test Spark applies to an event-time timeout, so {@link #earliestTimeoutMs} is a
 * timestamp the key's timeout can take. The held partials are part of the key's state value
 * ({@link KeyState}), so a replayed batch or a restart sees them as they were.
 */
public final class HeldPartials {
  private final LinkedHashMap<String, Held> held = new LinkedHashMap<>();

  /**
   * The query_id of a heartbeat: a row that carries no samples, only the newest event time of a
   * key's batch as its window end (rounded up to the second). The window aggregation's input
   * has an event-time watermark of its own, and Spark holds the query's watermark at the least
   * of its watermarks, so one that sees no rows stops it: while every partial of a batch is
   * held (a job whose queries are all {@code BY server}), nothing else would move it. The plan
   * drops heartbeats after that watermark, before the aggregation (aggregator/plan.py).
   */
  public static final String HEARTBEAT = "";

  /** A heartbeat row at the event time {@code micros}. */
  public static Row heartbeat(long micros) {
    long end = Math.floorDiv(micros, 1_000_000L) + (Math.floorMod(micros, 1_000_000L) == 0 ? 0 : 1);
    return RowFactory.create(HEARTBEAT, 0, end, 0L, null, 0L, 0.0, 0.0, 0.0, null);
  }

  public boolean isEmpty() {
    return held.isEmpty();
  }

  public int size() {
    return held.size();
  }

  /** Merges one batch's partial of (query, server, window end) into what is held for it. */
  void add(
      String queryId,
      String server,
      int windowSeconds,
      long end,
      long n,
      long nFixed,
      long high,
      long low,
      boolean overflowed,
      double floatSum,
      double min,
      double max,
      KllDoublesSketch sketch) {
    String key = queryId + '\t' + server + '\t' + end;
    Held h = held.get(key);
    if (h == null) {
      h = new Held(queryId, server, windowSeconds, end);
      held.put(key, h);
    }
    h.merge(n, nFixed, high, low, overflowed, floatSum, min, max, sketch);
  }

  /** The rows of the partials due at {@code watermarkMs} into {@code out}, no longer held. */
  public void takeDue(long watermarkMs, long offsetMs, List<Row> out) {
    for (Iterator<Held> it = held.values().iterator(); it.hasNext(); ) {
      Held h = it.next();
      if (h.timeoutMs(offsetMs) < watermarkMs) {
        out.add(h.row());
        it.remove();
      }
    }
  }

  /** Every held partial's row into {@code out}: the key is evicted. */
  public void takeAll(List<Row> out) {
    for (Held h : held.values()) {
      out.add(h.row());
    }
    held.clear();
  }

  /** The earliest timeout of a held partial (Long.MAX_VALUE: none held). */
  public long earliestTimeoutMs(long offsetMs) {
    long earliest = Long.MAX_VALUE;
    for (Held h : held.values()) {
      earliest = Math.min(earliest, h.timeoutMs(offsetMs));
    }
    return earliest;
  }

  void write(DataOutputStream out) throws IOException {
    // Query ids and servers repeat across the held partials: each is written once.
    Map<String, Integer> queries = new HashMap<>();
    List<String> queryOrder = new ArrayList<>();
    for (Held h : held.values()) {
      if (queries.putIfAbsent(h.queryId, queryOrder.size()) == null) {
        queryOrder.add(h.queryId);
      }
    }
    out.writeInt(queryOrder.size());
    for (String q : queryOrder) {
      out.writeUTF(q);
    }
    out.writeInt(held.size());
    for (Held h : held.values()) {
      out.writeInt(queries.get(h.queryId));
      out.writeUTF(h.server);
      out.writeInt(h.windowSeconds);
      out.writeLong(h.end);
      out.writeLong(h.n);
      out.writeLong(h.nFixed);
      out.writeLong(h.high);
      out.writeLong(h.low);
      out.writeBoolean(h.overflowed);
      out.writeDouble(h.floatSum);
      out.writeDouble(h.min);
      out.writeDouble(h.max);
      byte[] sketch = h.sketchBytes();
      out.writeInt(sketch == null ? -1 : sketch.length);
      if (sketch != null) {
        out.write(sketch);
      }
    }
  }

  static HeldPartials read(DataInputStream in) throws IOException {
    HeldPartials out = new HeldPartials();
    String[] queries = new String[in.readInt()];
    for (int i = 0; i < queries.length; i++) {
      queries[i] = in.readUTF();
    }
    int count = in.readInt();
    for (int i = 0; i < count; i++) {
      Held h = new Held(queries[in.readInt()], in.readUTF(), in.readInt(), in.readLong());
      h.n = in.readLong();
      h.nFixed = in.readLong();
      h.high = in.readLong();
      h.low = in.readLong();
      h.overflowed = in.readBoolean();
      h.floatSum = in.readDouble();
      h.min = in.readDouble();
      h.max = in.readDouble();
      int length = in.readInt();
      if (length >= 0) {
        h.bytes = new byte[length];
        in.readFully(h.bytes);
      }
      out.held.put(h.queryId + '\t' + h.server + '\t' + h.end, h);
    }
    return out;
  }

  /** The encoded form, for tests. */
  byte[] encode() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      write(out);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }

  static HeldPartials decode(byte[] bytes) {
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
      return read(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static final class Held {
    final String queryId;
    final String server;
    final int windowSeconds;
    final long end;
    long n;
    long nFixed;
    long high; // the exact sum, a 128-bit integer at scale 18 (Partials' form)
    long low;
    boolean overflowed;
    double floatSum;
    double min = Double.POSITIVE_INFINITY;
    double max = Double.NEGATIVE_INFINITY;
    // The sketch as the state holds it (compact bytes), heapified only when a batch adds to it.
    byte[] bytes;
    KllDoublesSketch sketch;

    Held(String queryId, String server, int windowSeconds, long end) {
      this.queryId = queryId;
      this.server = server;
      this.windowSeconds = windowSeconds;
      this.end = end;
    }

    long timeoutMs(long offsetMs) {
      return end * 1000L + offsetMs;
    }

    void merge(
        long n,
        long nFixed,
        long high,
        long low,
        boolean overflowed,
        double floatSum,
        double min,
        double max,
        KllDoublesSketch sketch) {
      this.n += n;
      this.floatSum += floatSum;
      this.min = Math.min(this.min, min);
      this.max = Math.max(this.max, max);
      if (overflowed) {
        this.overflowed = true;
      } else if (!this.overflowed) {
        this.high = Partials.sumHigh(this.high, this.low, high, low);
        this.low += low;
        this.nFixed += nFixed;
        this.overflowed = Partials.beyond(this.high, this.low);
      }
      if (sketch != null) {
        if (this.sketch == null && bytes != null) {
          this.sketch = KllDoublesSketch.heapify(Memory.wrap(bytes));
        }
        if (this.sketch == null) {
          this.sketch = sketch;
        } else {
          this.sketch.merge(sketch);
        }
        bytes = null;
      }
    }

    byte[] sketchBytes() {
      if (sketch != null) {
        bytes = sketch.toByteArray();
        sketch = null;
      }
      return bytes;
    }

    Row row() {
      return Partials.row(
          Partials.seriesId(queryId, server),
          windowSeconds,
          end,
          n,
          overflowed,
          nFixed,
          high,
          low,
          floatSum,
          min,
          max,
          sketchBytes());
    }
  }
}
