package io.apm.aggregator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.datasketches.kll.KllDoublesSketch;
import org.apache.datasketches.memory.Memory;
import org.apache.spark.api.java.Optional;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.TestGroupState;
import org.junit.jupiter.api.Test;

/** v5: a BY server series' partials held by the dedup key until their window completes. */
class HoldingTest {
  private static final long BLOCK_US = 8_000_000L;
  private static final long T0 = 1_700_000_000_000_000L; // a block boundary (a multiple of 8 s)
  private static final String KEY = "cpu|1|212500000"; // the block starting at T0
  private static final long END = 1_700_000_010L; // the 10 s window holding T0
  private static final long DELAY_MS = 70_000L;
  private static final long GRACE_MS = 2_000L;
  // The held partial of END is due once the watermark is past this.
  private static final long DUE_MS = END * 1000 + GRACE_MS - DELAY_MS;
  private static final long BLOCK_END_MS = (T0 + BLOCK_US) / 1000;

  private static final List<Selection> QUERIES =
      List.of(
          new Selection("plain", "cpu", 10, true, 0, false, true, List.of(), List.of(), null),
          new Selection("per", "cpu", 10, true, 64, true, true, List.of(), List.of(), null));

  private final Summaries holding =
      new Summaries(BLOCK_US, 200, QUERIES, 1, true, null, DELAY_MS, GRACE_MS);
  private final Summaries notHolding = new Summaries(BLOCK_US, 200, QUERIES, 1, true, null);

  private static Iterator<Row> samples(Object[]... samples) {
    List<Row> rows = new ArrayList<>();
    for (Object[] s : samples) {
      Pack.Builder pack = new Pack.Builder();
      long micros = (Long) s[1];
      pack.add(((String) s[0]).getBytes(StandardCharsets.UTF_8), micros, micros / 1e6, (Double) s[2], Digits.NONE);
      rows.add(RowFactory.create(KEY, pack.bytes(), Instant.MAX));
    }
    return rows.iterator();
  }

  private static TestGroupState<byte[]> state(byte[] value, long watermarkMs, boolean timedOut) {
    return TestGroupState.create(
        Optional.ofNullable(value), GroupStateTimeout.EventTimeTimeout(), 0L, Optional.of((Object) watermarkMs), timedOut);
  }

  // The window ends of the heartbeats returned, in order.
  private final List<Long> heartbeats = new ArrayList<>();

  private Map<String, Row> bySeries(Iterator<Row> rows) {
    Map<String, Row> out = new HashMap<>();
    rows.forEachRemaining(
        r -> {
          if (r.getString(0).equals(HeldPartials.HEARTBEAT)) {
            heartbeats.add(r.getLong(2));
          } else {
            out.put(r.getString(0) + "@" + r.getLong(2), r);
          }
        });
    return out;
  }

  private static double[] values(Row row) {
    KllDoublesSketch sketch = KllDoublesSketch.heapify(Memory.wrap((byte[]) row.get(9)));
    double[] out = new double[(int) sketch.getN()];
    int i = 0;
    for (var it = sketch.iterator(); it.next(); ) {
      out[i++] = it.getQuantile();
    }
    java.util.Arrays.sort(out);
    return out;
  }

  @Test
  void aServersWindowIsHeldOverBatchesAndReturnedOnceWhenItCompletes() throws Exception {
    TestGroupState<byte[]> first = state(null, 0L, false);
    Map<String, Row> a = bySeries(holding.call(KEY, samples(new Object[] {"web-1", T0, 1.0}, new Object[] {"db-1", T0 + 1, 4.0}), first));
    assertEquals(List.of("plain@" + END), new ArrayList<>(a.keySet()), "the plain series is not held");
    assertEquals(DUE_MS, first.getTimeoutTimestampMs().get(), "the timer is the held window's");
    // One heartbeat a batch at its newest sample (T0 + 1 us), rounded up to the second.
    assertEquals(List.of(T0 / 1_000_000 + 1), heartbeats);

    // A later batch adds a sample and resends one: merged into what is held, still held.
    TestGroupState<byte[]> second = state(first.get(), DUE_MS - 1, false);
    Map<String, Row> b = bySeries(holding.call(KEY, samples(new Object[] {"web-1", T0 + 2_000_000, 3.0}, new Object[] {"web-1", T0, 9.0}), second));
    assertEquals(List.of("plain@" + END), new ArrayList<>(b.keySet()));

    // The watermark passes the window's end plus the grace: both servers' rows, whole.
    TestGroupState<byte[]> due = state(second.get(), DUE_MS + 1, true);
    Map<String, Row> c = bySeries(holding.call(KEY, List.<Row>of().iterator(), due));
    assertEquals(2, heartbeats.size(), "none from a timeout: it has no samples");
    Row web = c.get("per\tweb-1@" + END);
    assertEquals(2L, web.getLong(3));
    assertEquals(new java.math.BigDecimal("4.000000000000000000"), web.getDecimal(4));
    assertEquals(2L, web.getLong(5));
    assertEquals(1.0, web.getDouble(7));
    assertEquals(3.0, web.getDouble(8));
    assertEquals(List.of(1.0, 3.0), java.util.Arrays.stream(values(web)).boxed().toList());
    assertEquals(1L, c.get("per\tdb-1@" + END).getLong(3));
    assertEquals(2, c.size());
    assertTrue(due.exists(), "the block is not done: its samples are still deduplicated");
    assertEquals(BLOCK_END_MS, due.getTimeoutTimestampMs().get());

    // Late data within the lateness: held again and due at once, a refinement of one server.
    TestGroupState<byte[]> late = state(due.get(), DUE_MS + 5, false);
    Map<String, Row> d = bySeries(holding.call(KEY, samples(new Object[] {"web-1", T0 + 3_000_000, 7.0}, new Object[] {"web-1", T0, 1.0}), late));
    assertEquals(1L, d.get("per\tweb-1@" + END).getLong(3), "the refinement's own samples");
    assertEquals(1L, d.get("plain@" + END).getLong(3));
    assertEquals(2, d.size());
  }

  @Test
  void aKeyEvictedAtItsBlocksEndReturnsWhateverItStillHolds() throws Exception {
    TestGroupState<byte[]> st = state(null, 0L, false);
    holding.call(KEY, samples(new Object[] {"web-1", T0 + 7_000_000, 2.0}), st);
    TestGroupState<byte[]> evicted = state(st.get(), BLOCK_END_MS + 1, true);
    Map<String, Row> out = bySeries(holding.call(KEY, List.<Row>of().iterator(), evicted));
    assertEquals(1L, out.get("per\tweb-1@" + END).getLong(3));
    assertFalse(evicted.exists());
  }

  @Test
  void aCheckpointWrittenBeforeV5IsReadOnAndAStopOfHoldingLeavesNothingBehind() throws Exception {
    // Version 1: SeenSamples' encoding alone, what v4 wrote.
    SeenSamples seen = new SeenSamples();
    seen.add("web-1", 0);
    TestGroupState<byte[]> old = state(seen.encode(), 0L, false);
    Map<String, Row> got = bySeries(holding.call(KEY, samples(new Object[] {"web-1", T0, 5.0}, new Object[] {"web-2", T0, 6.0}), old));
    assertEquals(1L, got.get("plain@" + END).getLong(3), "web-1's sample was seen by the old run");
    KeyState now = KeyState.decode(old.get());
    assertEquals(1, now.held.size());
    assertEquals(2L, now.seen.size());

    // The same key under a run that does not hold: the held partial comes out with its batch,
    // and the value is version 1 again.
    TestGroupState<byte[]> next = state(old.get(), 0L, false);
    Map<String, Row> flushed = bySeries(notHolding.call(KEY, samples(new Object[] {"web-3", T0, 1.0}), next));
    assertEquals(1L, flushed.get("per\tweb-2@" + END).getLong(3));
    assertEquals(1L, flushed.get("per\tweb-3@" + END).getLong(3));
    assertEquals(3L, SeenSamples.decode(next.get()).size());
  }

  @Test
  void heldPartialsSurviveTheirEncoding() {
    KeyState ks = KeyState.empty();
    ks.seen.add("a", 3);
    KllDoublesSketch sketch = KllDoublesSketch.newHeapInstance(64);
    sketch.update(2.5);
    ks.held.add("q", "a", 10, END, 1, 1, 0, 2_500_000_000_000_000_000L, false, 2.5, 2.5, 2.5, sketch);
    ks.held.add("q", "b", 10, END + 10, 1, 0, 0, 0, true, 1e300, 1e300, 1e300, null);
    KeyState back = KeyState.decode(ks.encode());
    assertTrue(back.seen.contains("a", 3));
    List<Row> rows = new ArrayList<>();
    back.held.takeAll(rows);
    assertEquals(2, rows.size());
    assertEquals("q\ta", rows.get(0).getString(0));
    assertEquals(new java.math.BigDecimal("2.500000000000000000"), rows.get(0).getDecimal(4));
    assertEquals(List.of(2.5), java.util.Arrays.stream(values(rows.get(0))).boxed().toList());
    assertEquals(null, rows.get(1).get(4), "an overflowed sum has no exact value");
    assertEquals(0L, rows.get(1).getLong(5));
    assertEquals(null, rows.get(1).get(9));
    assertTrue(back.held.isEmpty());
  }
}
