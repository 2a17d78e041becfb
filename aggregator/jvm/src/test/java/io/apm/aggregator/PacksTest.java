package io.apm.aggregator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.junit.jupiter.api.Test;

class PacksTest {
  private static final long BLOCK_US = 8_000_000L;
  private final Packs packs = new Packs(null, 30.0, 32, BLOCK_US);

  /** dedup key -> "server ts value" of each sample in its pack, in order. */
  private static Map<String, List<String>> unpack(Iterator<Row> rows) {
    Map<String, List<String>> out = new HashMap<>();
    rows.forEachRemaining(
        r -> {
          List<String> samples = out.computeIfAbsent(r.getString(0), k -> new ArrayList<>());
          long[] newest = {Long.MIN_VALUE};
          Pack.read(
              (byte[]) r.get(2),
              (server, micros, ts, value, digits) -> {
                samples.add(server + " " + ts + " " + value);
                assertEquals(Packs.micros(ts), micros);
                newest[0] = Math.max(newest[0], micros);
              });
          assertEquals(newest[0], r.getLong(1), "the pack's event time is its newest sample's");
        });
    return out;
  }

  private static Row record(String value, Double arrival) {
    return RowFactory.create("cpu", value.getBytes(StandardCharsets.UTF_8), arrival);
  }

  @Test
  void aRecordSplitsIntoOnePackPerBucketAndBlockKeepingTheOrderWithin() {
    // web and web-7: buckets of Spark's pmod(xxhash64(server), 32) (3 for "web", checked in Spark).
    String value = "web\t1700000000.5\t1\nweb\t1700000007.999\t2\nweb\t1700000008.0\t3\nweb\t1700000001.25\t4";
    Map<String, List<String>> got = unpack(packs.call(record(value, 1700000010.0)));
    long block0 = 1_700_000_000_000_000L / BLOCK_US;
    assertEquals(
        Map.of(
            "cpu|3|" + block0, List.of("web 1.7000000005E9 1.0", "web 1.700000007999E9 2.0", "web 1.70000000125E9 4.0"),
            "cpu|3|" + (block0 + 1), List.of("web 1.700000008E9 3.0")),
        got);
    assertEquals(3L, packs.bucket("web".getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  void samplesAheadOfTheirArrivalAndNaNTimesAreLeftOut() {
    String value = "a\t1000.0\t1\na\t1031.5\t2\na\tNaN\t3\na\t1001.5\t4";
    Map<String, List<String>> got = unpack(packs.call(record(value, 1001.0)));
    assertEquals(List.of(List.of("a 1000.0 1.0", "a 1001.5 4.0")), List.copyOf(got.values()));
    // Without an arrival nothing is ahead; a NaN time still has no event time.
    got = unpack(packs.call(record(value, null)));
    assertEquals(3, got.values().stream().mapToInt(List::size).sum());
    assertTrue(unpack(new Packs(null, Double.NaN, 32, BLOCK_US).call(record("a\t9e9\t1", 1.0))).size() == 1,
        "NaN tolerance: no limit");
  }

  @Test
  void timesFollowSparksTimestampSeconds() {
    assertEquals(-1L, Packs.micros(-1.5e-6), "truncated toward zero, as (d * 1e6).toLong");
    assertEquals(1_700_000_000_123_456L, Packs.micros(1700000000.1234567));
    assertEquals(Long.MAX_VALUE, Packs.micros(9.3e12), "saturated");
    assertEquals(-1L, packs.block(-1), "floor, not truncation");
    assertThrows(IllegalArgumentException.class, () -> new Packs(null, 0, 0, BLOCK_US));
  }

  @Test
  void aRecordWithoutValueOrMetricHasNoPacks() {
    assertTrue(!packs.call(RowFactory.create("cpu", null, 1.0)).hasNext());
    assertTrue(!packs.call(RowFactory.create(null, new byte[] {'a'}, 1.0)).hasNext());
  }
}
