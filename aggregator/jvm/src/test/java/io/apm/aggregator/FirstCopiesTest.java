package io.apm.aggregator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.api.java.Optional;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.TestGroupState;
import org.junit.jupiter.api.Test;

class FirstCopiesTest {
  private static final long BLOCK_US = 8_000_000L;
  // Columns as the plan hands them over: metric, server, ts, value, ts_us.
  private final FirstCopies function = new FirstCopies(BLOCK_US, 1, 4, true);

  private static Row sample(String server, long micros, double value) {
    return RowFactory.create("cpu", server, micros / 1e6, value, micros);
  }

  private static TestGroupState<byte[]> state(Optional<byte[]> value, long watermarkMs, boolean timedOut) {
    return TestGroupState.create(
        value, GroupStateTimeout.EventTimeTimeout(), 0L, Optional.of((Object) watermarkMs), timedOut);
  }

  private static List<Row> list(Iterator<Row> rows) {
    List<Row> out = new ArrayList<>();
    rows.forEachRemaining(out::add);
    return out;
  }

  @Test
  void copiesInTheSameBatchAndInLaterBatchesAreDropped() throws Exception {
    long t = 1_700_000_000_000_000L; // a block boundary: 1.7e15 us is a multiple of 8 s
    TestGroupState<byte[]> state = state(Optional.empty(), 0L, false);
    List<Row> first =
        list(function.call("cpu|1|0", List.of(sample("a", t, 1), sample("b", t, 2), sample("a", t, 9)).iterator(), state));
    assertEquals(2, first.size());
    assertEquals(1.0, first.get(0).getDouble(3), "the first copy wins");
    assertTrue(state.exists());
    assertEquals((t + BLOCK_US) / 1000, state.getTimeoutTimestampMs().get());

    byte[] saved = state.get();
    TestGroupState<byte[]> next = state(Optional.of(saved), 0L, false);
    List<Row> second =
        list(function.call("cpu|1|0", List.of(sample("a", t, 5), sample("a", t + 1_000_000, 3)).iterator(), next));
    assertEquals(1, second.size(), "a resend in a later batch is dropped, a new second passes");
    assertEquals(t + 1_000_000, second.get(0).getLong(4));
  }

  @Test
  void anAllDuplicateBatchLeavesTheStateAsItWas() throws Exception {
    long t = 1_700_000_000_000_000L;
    TestGroupState<byte[]> state = state(Optional.empty(), 0L, false);
    list(function.call("k", List.of(sample("a", t, 1)).iterator(), state));
    byte[] saved = state.get();
    TestGroupState<byte[]> again = state(Optional.of(saved), 0L, false);
    assertTrue(list(function.call("k", List.of(sample("a", t, 1)).iterator(), again)).isEmpty());
    assertEquals(saved, again.get());
  }

  @Test
  void aTimedOutKeyIsRemoved() throws Exception {
    TestGroupState<byte[]> state = state(Optional.of(new SeenSamples().encode()), 10_000L, true);
    assertTrue(list(function.call("k", List.<Row>of().iterator(), state)).isEmpty());
    assertFalse(state.exists());
  }

  @Test
  void theTimeoutNeverFallsBehindTheWatermark() throws Exception {
    long t = 1_700_000_000_000_000L;
    long watermarkMs = (t + BLOCK_US) / 1000 + 5;
    TestGroupState<byte[]> state = state(Optional.empty(), watermarkMs, false);
    list(function.call("k", List.of(sample("a", t, 1)).iterator(), state));
    assertEquals(watermarkMs + 1, state.getTimeoutTimestampMs().get());
  }

  @Test
  void negativeTimesAndTwoBlocksUnderOneKey() throws Exception {
    assertEquals(-BLOCK_US, function.blockStart(-1));
    // A batch query (no watermark, no timeouts) takes samples before 1970 too.
    FirstCopies batch = new FirstCopies(BLOCK_US, 1, 4, false);
    TestGroupState<byte[]> state = state(Optional.empty(), 0L, false);
    assertEquals(1, list(batch.call("k", List.of(sample("a", -1, 1), sample("a", -1, 2)).iterator(), state)).size());
    TestGroupState<byte[]> fresh = state(Optional.empty(), 0L, false);
    assertThrows(
        IllegalStateException.class,
        () -> list(function.call("k", List.of(sample("a", 0, 1), sample("a", BLOCK_US, 1)).iterator(), fresh)));
    assertThrows(IllegalArgumentException.class, () -> new FirstCopies(0, 1, 4, true));
  }
}
