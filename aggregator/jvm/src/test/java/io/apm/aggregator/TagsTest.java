package io.apm.aggregator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.spark.api.java.Optional;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.TestGroupState;
import org.junit.jupiter.api.Test;

/**
 * Host tags in the operator (issue 37): the tag table the driver encodes, the per-window rule
 * (a version applies from the first window start at or after it was received), selection by
 * {@code key:glob} and WHERE, and the group a sample falls in. The Python side (aggregator/
 * tag_map.py, apm.query_select) is held to the same cases in tests/aggregator/test_tag_map.py
 * and test_tag_selection.py.
 */
class TagsTest {
  private static final long BLOCK_US = 8_000_000L;
  private static final long T0 = 1_700_000_000_000_000L; // a multiple of 8 s and of 10 s
  private static final String KEY = "cpu|1|212500000";

  private static byte[] encoded(String... lines) {
    return (String.join("\n", lines) + "\n").getBytes(StandardCharsets.UTF_8);
  }

  private static Selection tagged(
      String id,
      List<String> names,
      List<String> fromKeys,
      List<String> fromRegexes,
      List<String> whereKeys,
      List<String> whereRegexes,
      List<String> by) {
    return new Selection(
        id, "cpu", 5, false, 0, false, false, names, List.of(), null, fromKeys, fromRegexes,
        whereKeys, whereRegexes, by);
  }

  @Test
  void theTableDecodesTheDriversLines() {
    TagTable t = TagTable.decode(encoded("web-1\t0\trole\u001fweb\u001fdc\u001feu-1", "db-1\t5000\t"));
    assertEquals(2, t.size());
    assertEquals(Map.of("role", "web", "dc", "eu-1"), t.tagsAt("web-1", 0, 10));
    assertEquals(Map.of(), t.tagsAt("db-1", 10, 10)); // a version without tags
    assertEquals(Map.of(), t.tagsAt("nobody", 10, 10));
    assertThrows(IllegalArgumentException.class, () -> TagTable.decode(encoded("x\t1")));
    assertThrows(IllegalArgumentException.class, () -> TagTable.decode(encoded("x\t1\tk")));
  }

  @Test
  void aVersionAppliesFromTheFirstWindowStartAtOrAfterItWasReceived() {
    assertEquals(20, TagTable.effectiveFrom(20_000, 10));
    assertEquals(30, TagTable.effectiveFrom(20_001, 10));
    assertEquals(60, TagTable.effectiveFrom(20_001, 60));
    TagTable t =
        TagTable.decode(encoded("s\t12000\tdc\u001fa", "s\t25000\tdc\u001fb", "s\t25500\tdc\u001fc"));
    assertEquals(Map.of(), t.tagsAt("s", 10, 10)); // before the first version
    assertEquals(Map.of("dc", "a"), t.tagsAt("s", 20, 10));
    // b and c both start at 30: the newest wins, b never applies to a 10 s window
    assertEquals(Map.of("dc", "c"), t.tagsAt("s", 30, 10));
    assertEquals(Map.of(), t.tagsAt("s", 0, 60));
    assertEquals(Map.of("dc", "c"), t.tagsAt("s", 60, 60));
  }

  @Test
  void selectionByTagEntryUnionWhereConditionsAndMissingTags() {
    Selection q =
        tagged(
            "q", List.of("db-9"), List.of("role", "role"), List.of("web", "api"),
            List.of("env", "dc"), List.of("prod", "eu\\-.*"), List.of());
    Map<String, String> web = Map.of("role", "web", "env", "prod", "dc", "eu-1");
    assertTrue(q.matches("a", web));
    assertTrue(q.matches("a", Map.of("role", "api", "env", "prod", "dc", "eu-2")));
    assertFalse(q.matches("a", Map.of("role", "web", "env", "dev", "dc", "eu-1")));
    assertFalse(q.matches("a", Map.of("role", "web", "env", "prod"))); // no dc: ""
    assertFalse(q.matches("a", Map.of("role", "webx", "env", "prod", "dc", "eu-1")));
    assertTrue(q.matches("db-9", Map.of("env", "prod", "dc", "eu-3"))); // by name
    assertFalse(q.matches("db-9", Map.of())); // by name, but WHERE fails
    Selection empty = tagged("e", List.of(), List.of("dc"), List.of(""), List.of(), List.of(), List.of());
    assertTrue(empty.matches("x", Map.of())); // dc: selects the servers without dc
    assertFalse(empty.matches("x", Map.of("dc", "a")));
  }

  @Test
  void aServerFallsInTheGroupOfItsValuesForTheByKeys() {
    Selection q =
        tagged("q", List.of(), List.of("role"), List.of("web"), List.of(), List.of(), List.of("dc", "env"));
    assertEquals("dc=eu-1,env=prod", q.group("a", Map.of("role", "web", "dc", "eu-1", "env", "prod")));
    assertEquals("dc=,env=prod", q.group("a", Map.of("role", "web", "env", "prod")));
    assertEquals("dc=a\\,b\\\\c,env=", q.group("a", Map.of("role", "web", "dc", "a,b\\c")));
    assertNull(q.group("a", Map.of("role", "db")));
    Selection plain = tagged("p", List.of(), List.of("role"), List.of("web"), List.of(), List.of(), List.of());
    assertEquals("", plain.group("a", Map.of("role", "web")));
  }

  private static Row sample(String server, long micros, double value) {
    Pack.Builder pack = new Pack.Builder();
    pack.add(server.getBytes(StandardCharsets.UTF_8), micros, micros / 1e6, value, Digits.NONE);
    return RowFactory.create(KEY, pack.bytes(), Instant.MAX);
  }

  /** series id -> window end -> n. */
  private static Map<String, Map<Long, Long>> counts(Iterator<Row> rows) {
    Map<String, Map<Long, Long>> out = new HashMap<>();
    rows.forEachRemaining(
        r -> out.computeIfAbsent(r.getString(0), q -> new HashMap<>()).merge(r.getLong(2), r.getLong(3), Long::sum));
    return out;
  }

  @Test
  void theOperatorGroupsEachSampleByTheVersionOfItsWindow() throws Exception {
    long s0 = T0 / 1_000_000; // seconds
    TagsRef ref = new TagsRef();
    // web-1 moves from eu-1 to eu-2, received 3 s into the window [s0, s0 + 5): from s0 + 5.
    String a = "web-1\t" + (s0 - 100) * 1000 + "\trole\u001fweb\u001fdc\u001feu-1";
    String b = "web-1\t" + (s0 + 3) * 1000 + "\trole\u001fweb\u001fdc\u001feu-2";
    String c = "web-2\t0\trole\u001fweb"; // no dc
    String d = "db-1\t0\trole\u001fdb\u001fdc\u001feu-1";
    assertTrue(ref.set(null, encoded(a, b, c, d), 1));
    assertFalse(ref.set(null, encoded(a), 1)); // the same version is not set again
    Selection byDc =
        tagged("q", List.of(), List.of("role"), List.of("web"), List.of(), List.of(), List.of("dc"));
    Selection all = tagged("w", List.of(), List.of("role"), List.of("w.*"), List.of(), List.of(), List.of());
    Selection names = new Selection("n", "cpu", 10, false, false, List.of("db-1"), List.of(), null);
    Summaries f =
        new Summaries(BLOCK_US, 200, List.of(byDc, all, names), 1, false, null, 0L, -1L, ref);
    List<Row> rows =
        List.of(
            sample("web-1", T0 + 1_000_000, 1),
            sample("web-1", T0 + 4_000_000, 2),
            sample("web-1", T0 + 6_000_000, 3),
            sample("web-2", T0 + 2_000_000, 4),
            sample("db-1", T0 + 2_000_000, 5),
            sample("nobody", T0 + 2_000_000, 6));
    TestGroupState<byte[]> state =
        TestGroupState.create(Optional.empty(), GroupStateTimeout.NoTimeout(), 0L, Optional.empty(), false);
    Map<String, Map<Long, Long>> got = counts(f.call(KEY, rows.iterator(), state));
    long e1 = s0 + 5;
    long e2 = s0 + 10;
    assertEquals(Map.of(e1, 2L), got.get("q\tdc=eu-1"));
    assertEquals(Map.of(e2, 1L), got.get("q\tdc=eu-2"));
    assertEquals(Map.of(e1, 1L), got.get("q\tdc="));
    assertEquals(Map.of(e1, 3L, e2, 1L), got.get("w")); // its one series
    assertEquals(Map.of(s0 + 10, 1L), got.get("n")); // a 10 s window, by name
    assertEquals(5, got.size());
  }
}
