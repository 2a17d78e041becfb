package io.apm.aggregator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.junit.jupiter.api.Test;

class DecodeTest {
  private static List<String> decoded(String value) {
    List<String> out = new ArrayList<>();
    int kept =
        Decode.lines(
            value.getBytes(StandardCharsets.UTF_8),
            (server, ts, v, d) -> out.add(new String(server, StandardCharsets.UTF_8) + "|" + ts + "|" + v));
    assertEquals(out.size(), kept);
    return out;
  }

  @Test
  void readsTheIngestsLinesInOrder() {
    assertEquals(
        List.of("web-1|1.7000000015E9|0.25", "db-2|1.7000000025E9|-3.0E-7"),
        decoded("web-1\t1700000001.5\t0.25\ndb-2\t1700000002.5\t-3e-07"));
  }

  @Test
  void dropsExactlyTheLinesTheSqlDecodeDropped() {
    String bad =
        String.join(
            "\n",
            "no-tabs",
            "x\tnot-a-ts\t1",
            "y\t1.0",
            "z\t1.0\tNaN",
            "w\t1.0\tInfinity",
            "u\t1.0\t-inf",
            "v\t1.0\t2.0\textra",
            "",
            "ok\t1.0\t2.0",
            "");
    assertEquals(List.of("ok|1.0|2.0"), decoded(bad));
  }

  @Test
  void parsesNumbersAsSparksTryCast() {
    // Java's parseDouble trims, reads hex, a trailing d/f and a sign; Spark's literals any case.
    assertEquals(
        List.of("a|2.0|8.0", "b|1.5|3.0", "c|-0.0|0.0", "d|NaN|1.0", "e|NaN|1.0", "f|Infinity|1.0"),
        decoded(
            String.join(
                "\n",
                "a\t 2 \t0x1p3",
                "b\t1.5d\t+3f",
                "c\t-0.0\t0",
                "d\tNaN\t1",
                "e\t nAn \t1",
                "f\tINF\t1")));
    assertTrue(decoded("g\t1\t1e400").isEmpty()); // overflows to infinity: not finite
  }

  @Test
  void keepsAServerOfAnyBytesAndAnEmptyOne() {
    assertEquals(List.of("|1.0|2.0", "é|1.0|2.0"), decoded("\t1\t2\né\t1\t2"));
  }

  @Test
  void aRecordBecomesOneRowPerSampleWithItsMetricAndArrival() {
    byte[] value = "a\t1\t2\nb\t3\t4".getBytes(StandardCharsets.UTF_8);
    Iterator<Row> rows = new Decode().call(RowFactory.create("cpu", value, 5.5));
    Row first = rows.next();
    assertEquals("cpu", first.get(0));
    assertEquals("a", new String((byte[]) first.get(1), StandardCharsets.UTF_8));
    assertEquals(1.0, first.getDouble(2));
    assertEquals(2.0, first.getDouble(3));
    assertEquals(5.5, first.get(4));
    assertEquals("b", new String((byte[]) rows.next().get(1), StandardCharsets.UTF_8));
    assertTrue(!rows.hasNext());
    assertTrue(!new Decode().call(RowFactory.create("cpu", null, null)).hasNext());
  }
}
