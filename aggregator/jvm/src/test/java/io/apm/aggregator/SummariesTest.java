package io.apm.aggregator;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.datasketches.kll.KllDoublesSketch;
import org.apache.spark.api.java.Optional;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.TestGroupState;
import org.apache.spark.util.LongAccumulator;
import org.junit.jupiter.api.Test;

class SummariesTest {
  private static final long BLOCK_US = 8_000_000L;
  private static final long T0 = 1_700_000_000_000_000L; // a block boundary (a multiple of 8 s)
  private static final String KEY = "cpu|1|212500000";
  // Input columns as the plan hands them over: dedup_key, pack, the never-late event-time mark.
  private static final int PACK = 1;

  private static Selection query(String id, int window, boolean sketch, List<String> names,
      List<String> prefixes, String regex, boolean all) {
    return new Selection(id, "cpu", window, sketch, all, names, prefixes, regex);
  }

  private static final List<Selection> QUERIES =
      List.of(
          query("all", 10, true, List.of(), List.of(), null, true),
          query("web", 60, false, List.of(), List.of("web-"), null, false),
          query("db1", 10, true, List.of("db-1"), List.of(), null, false),
          query("odd", 10, false, List.of(), List.of(), "^(?:db-[13])$", false),
          new Selection("mem", "mem", 10, false, true, List.of(), List.of(), null));

  private final LongAccumulator late = new LongAccumulator();
  private final Summaries function = new Summaries(BLOCK_US, 200, QUERIES, PACK, true, late);

  private static Row pack(Object[]... samples) {
    Pack.Builder pack = new Pack.Builder();
    for (Object[] s : samples) {
      long micros = (Long) s[1];
      pack.add(((String) s[0]).getBytes(StandardCharsets.UTF_8), micros, micros / 1e6, (Double) s[2], Digits.NONE);
    }
    return RowFactory.create(KEY, pack.bytes(), Instant.MAX);
  }

  /** A pack of one sample: the operator sees no difference between one pack of n and n packs. */
  private static Row sample(String server, long micros, double value) {
    return pack(new Object[] {server, micros, value});
  }

  private static TestGroupState<byte[]> state(Optional<byte[]> value, long watermarkMs, boolean timedOut) {
    return TestGroupState.create(
        value, GroupStateTimeout.EventTimeTimeout(), 0L, Optional.of((Object) watermarkMs), timedOut);
  }

  /** query id -> window end -> partial row. */
  private static Map<String, Map<Long, Row>> byQuery(Iterator<Row> rows) {
    Map<String, Map<Long, Row>> out = new HashMap<>();
    rows.forEachRemaining(r -> out.computeIfAbsent(r.getString(0), q -> new HashMap<>()).put(r.getLong(2), r));
    return out;
  }

  @Test
  void eachNewSampleReachesExactlyTheQueriesThatSelectItsServer() throws Exception {
    List<Row> rows =
        List.of(sample("web-1", T0, 1), sample("db-1", T0 + 1, 2), sample("db-3", T0 + 2, 4), sample("db-2", T0 + 3, 8));
    Map<String, Map<Long, Row>> got = byQuery(function.call(KEY, rows.iterator(), state(Optional.empty(), 0L, false)));
    long end10 = (T0 / 1_000_000L) / 10 * 10 + 10;
    long end60 = (T0 / 1_000_000L) / 60 * 60 + 60;
    assertEquals(4L, got.get("all").get(end10).getLong(3));
    assertEquals(15.0, got.get("all").get(end10).getDouble(6));
    assertEquals(1L, got.get("web").get(end60).getLong(3));
    assertEquals(1L, got.get("db1").get(end10).getLong(3));
    assertEquals(6.0, got.get("odd").get(end10).getDouble(6), "db-1 and db-3, not db-2");
    assertFalse(got.containsKey("mem"), "another metric's query");
    assertNull(got.get("web").get(end60).get(9), "no sketch for a query without percentiles");
  }

  @Test
  void resendsInTheSameAndInLaterBatchesCountOnce() throws Exception {
    TestGroupState<byte[]> first = state(Optional.empty(), 0L, false);
    Map<String, Map<Long, Row>> a =
        byQuery(function.call(KEY, List.of(sample("web-1", T0, 1), sample("web-1", T0, 9)).iterator(), first));
    long end = (T0 / 1_000_000L) / 10 * 10 + 10;
    assertEquals(1L, a.get("all").get(end).getLong(3));
    assertEquals(1.0, a.get("all").get(end).getDouble(7), "the first copy wins");
    assertEquals((T0 + BLOCK_US) / 1000, first.getTimeoutTimestampMs().get());

    TestGroupState<byte[]> later = state(Optional.of(first.get()), 0L, false);
    Map<String, Map<Long, Row>> b =
        byQuery(function.call(KEY, List.of(sample("web-1", T0, 1), sample("web-1", T0 + 1_000_000, 3)).iterator(), later));
    assertEquals(1L, b.get("all").get(end).getLong(3), "only the new second");
    assertEquals(3.0, b.get("all").get(end).getDouble(6));

    TestGroupState<byte[]> again = state(Optional.of(later.get()), 0L, false);
    byte[] before = again.get();
    assertTrue(byQuery(function.call(KEY, List.of(sample("web-1", T0, 1)).iterator(), again)).isEmpty());
    assertArrayEquals(before, again.get(), "an all-duplicate batch leaves the state as it was");
  }

  @Test
  void partialsMergeToTheSameSummaryHoweverTheSamplesAreSplit() throws Exception {
    Random random = new Random(3);
    List<Row> rows = new ArrayList<>();
    for (int i = 0; i < 500; i++) {
      rows.add(sample("web-" + random.nextInt(40), T0 + random.nextInt(8_000_000), random.nextGaussian() * 100));
    }
    Map<String, Map<Long, Row>> whole = byQuery(function.call(KEY, rows.iterator(), state(Optional.empty(), 0L, false)));
    // The same samples over three batches: sums add up, min and max fold, sketches merge.
    TestGroupState<byte[]> st = state(Optional.empty(), 0L, false);
    long n = 0;
    BigDecimal fixed = BigDecimal.ZERO;
    double min = Double.POSITIVE_INFINITY;
    KllDoublesSketch merged = KllDoublesSketch.newHeapInstance(200);
    for (List<Row> part : List.of(rows.subList(0, 100), rows.subList(100, 350), rows.subList(350, 500))) {
      TestGroupState<byte[]> next = state(st.exists() ? Optional.of(st.get()) : Optional.empty(), 0L, false);
      for (Row r : byQuery(function.call(KEY, part.iterator(), next)).getOrDefault("all", Map.of()).values()) {
        n += r.getLong(3);
        fixed = fixed.add(r.getDecimal(4));
        min = Math.min(min, r.getDouble(7));
        merged.merge(KllDoublesSketch.heapify(org.apache.datasketches.memory.Memory.wrap((byte[]) r.get(9))));
      }
      st = next;
    }
    long total = 0;
    BigDecimal wholeFixed = BigDecimal.ZERO;
    double wholeMin = Double.POSITIVE_INFINITY;
    for (Row r : whole.get("all").values()) {
      total += r.getLong(3);
      wholeFixed = wholeFixed.add(r.getDecimal(4));
      wholeMin = Math.min(wholeMin, r.getDouble(7));
    }
    assertEquals(total, n);
    assertEquals(0, wholeFixed.compareTo(fixed), "the fixed-point sum is exact in any order");
    assertEquals(wholeMin, min);
    assertEquals(n, merged.getN());
  }

  @Test
  void fixedPointFollowsSparksDecimalCast() {
    assertEquals(new BigDecimal("0.100000000000000000"), Partials.fixed(0.1));
    assertEquals(new BigDecimal("-1.500000000000000000"), Partials.fixed(-1.5));
    assertNull(Partials.fixed(1.2345678901234567e-5), "more than 18 decimals: not exact");
    assertNull(Partials.fixed(1e20), "beyond 38 digits");
    assertEquals(0, Partials.fixed(99999999999999.98).compareTo(new BigDecimal("99999999999999.98")));
  }

  @Test
  void anOverflowingPartialSendsItsWindowToTheFloatSum() {
    Selection all = QUERIES.get(0);
    Partials partials = new Partials(0);
    double big = 9e19;
    long[] exact = new long[2];
    assertTrue(Partials.exact(big, Digits.NONE, exact));
    partials.add(0, all, 1.0, big, exact);
    partials.add(0, all, 1.0, big, exact);
    Row row = partials.rows().get(0);
    assertNull(row.get(4));
    assertEquals(0L, row.getLong(5));
    assertEquals(2L, row.getLong(3));
    assertEquals(1.8e20, row.getDouble(6));
  }

  @Test
  void timeoutsAndKeysSpanningTwoBlocks() throws Exception {
    TestGroupState<byte[]> done = state(Optional.of(new SeenSamples().encode()), 10_000L, true);
    assertFalse(function.call(KEY, List.<Row>of().iterator(), done).hasNext());
    assertFalse(done.exists());

    long watermarkMs = (T0 + BLOCK_US) / 1000 + 5;
    TestGroupState<byte[]> behind = state(Optional.empty(), watermarkMs, false);
    long before = late.value();
    assertFalse(function.call(KEY, List.of(sample("a", T0, 1)).iterator(), behind).hasNext());
    assertFalse(behind.exists(), "a block the watermark passed gets no state");
    assertEquals(before + 1, late.value());

    TestGroupState<byte[]> fresh = state(Optional.empty(), 0L, false);
    assertThrows(
        IllegalStateException.class,
        () -> function.call(KEY, List.of(sample("a", T0, 1), sample("a", T0 + BLOCK_US, 1)).iterator(), fresh));
    assertEquals(-BLOCK_US, function.blockStart(-1));
    assertThrows(IllegalArgumentException.class, () -> new Summaries(0, 200, QUERIES, PACK, true, null));
  }

  @Test
  void samplesAtOrBeforeTheWatermarkAreDroppedOneByOneAndCounted() throws Exception {
    // One pack across the watermark: Spark would have kept or dropped it whole.
    long watermarkMs = T0 / 1000 + 3_000; // 3 s into the block
    long w = watermarkMs * 1000;
    TestGroupState<byte[]> st = state(Optional.empty(), watermarkMs, false);
    long before = late.value();
    Row row =
        pack(
            new Object[] {"web-1", w - 1, 1.0},
            new Object[] {"web-1", w, 2.0}, // at the watermark: late, as Spark's eventTime <= watermark
            new Object[] {"web-1", w + 1, 4.0},
            new Object[] {"web-2", T0 + 7_000_000L, 8.0});
    Map<String, Map<Long, Row>> got = byQuery(function.call(KEY, List.of(row).iterator(), st));
    long end = (T0 / 1_000_000L) / 10 * 10 + 10;
    assertEquals(2L, got.get("all").get(end).getLong(3));
    assertEquals(12.0, got.get("all").get(end).getDouble(6));
    assertEquals(before + 2, late.value());
    assertEquals((T0 + BLOCK_US) / 1000, st.getTimeoutTimestampMs().get());
    // The late ones left no trace in the dedup state: later copies are late again, not duplicates.
    TestGroupState<byte[]> next = state(Optional.of(st.get()), watermarkMs, false);
    function.call(KEY, List.of(sample("web-1", w - 1, 1.0)).iterator(), next);
    assertEquals(before + 3, late.value());
  }

  @Test
  void aPackReadsBackEverySampleInOrder() {
    Pack.Builder b = new Pack.Builder();
    b.add("é-1".getBytes(StandardCharsets.UTF_8), -5L, -5e-6, -0.0, Digits.NONE);
    b.add("é-1".getBytes(StandardCharsets.UTF_8), Long.MAX_VALUE, 1e300, Double.MIN_VALUE, 42L);
    b.add(new byte[0], 7L, 7e-6, Double.NaN, -1L);
    assertEquals(3, b.count());
    assertEquals(Long.MAX_VALUE, b.newest());
    List<Object[]> out = new ArrayList<>();
    Pack.read(b.bytes(), (server, micros, ts, value, digits) -> out.add(new Object[] {server, micros, ts, value, digits}));
    assertEquals(3, out.size());
    assertArrayEquals(new Object[] {"é-1", -5L, -5e-6, -0.0, Digits.NONE}, out.get(0));
    assertArrayEquals(new Object[] {"é-1", Long.MAX_VALUE, 1e300, Double.MIN_VALUE, 42L}, out.get(1));
    assertEquals("", out.get(2)[0]);
    assertTrue(Double.isNaN((Double) out.get(2)[3]));
  }

  @Test
  void aByServerQueryGetsOneExactSeriesPerServerBesideThePlainOnes() throws Exception {
    Selection perServer = new Selection("per", "cpu", 10, true, 64, true, true, List.of(), List.of(), null);
    List<Selection> queries = List.of(QUERIES.get(0), perServer);
    Summaries both = new Summaries(BLOCK_US, 200, queries, PACK, true, late);
    List<Row> rows = new ArrayList<>();
    for (int i = 0; i < 300; i++) { // 300 values of web-1: more than the partial's first buffer
      rows.add(sample("web-1", T0 + i, i));
    }
    rows.add(sample("db-1", T0 + 1, 7));
    rows.add(sample("web-1", T0 + 5, 99)); // a duplicate (server, ts): counted nowhere
    Map<String, Map<Long, Row>> got = byQuery(both.call(KEY, rows.iterator(), state(Optional.empty(), 0L, false)));
    long end = (T0 / 1_000_000L) / 10 * 10 + 10;
    assertEquals(301L, got.get("all").get(end).getLong(3), "the query's one series: every server");
    Row web = got.get(Partials.seriesId("per", "web-1")).get(end);
    Row db = got.get(Partials.seriesId("per", "db-1")).get(end);
    assertEquals("per\tweb-1", web.getString(0));
    assertEquals(300L, web.getLong(3));
    assertEquals(1L, db.getLong(3));
    assertEquals(7.0, db.getDouble(7));
    assertFalse(got.containsKey("per"), "a BY server query has no series over all servers");
    // Each server's sketch holds exactly its own values, at the query's k (64), not the
    // operator's (200): web-1's 300 values are past it, so its sketch estimates.
    KllDoublesSketch dbSketch = KllDoublesSketch.heapify(org.apache.datasketches.memory.Memory.wrap((byte[]) db.get(9)));
    assertEquals(1L, dbSketch.getN());
    assertFalse(dbSketch.isEstimationMode());
    KllDoublesSketch webSketch = KllDoublesSketch.heapify(org.apache.datasketches.memory.Memory.wrap((byte[]) web.get(9)));
    assertEquals(300L, webSketch.getN());
    assertEquals(64, webSketch.getK());
    assertTrue(webSketch.isEstimationMode());
    assertEquals(64, dbSketch.getK());
    assertEquals(0.0, webSketch.getMinItem());
    assertEquals(299.0, webSketch.getMaxItem());
  }
}
