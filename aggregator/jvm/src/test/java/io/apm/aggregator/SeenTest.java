package io.apm.aggregator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

class SeenTest {
  private static final double NO_ARRIVAL = Double.NaN;

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** drain()'s lines, sorted: the maps' order is not part of the contract. */
  private static List<String> lines(Seen seen) {
    return List.copyOf(new TreeSet<>(Arrays.asList(seen.drain().split("\n"))));
  }

  @Test
  void newestPerServerAndMetricAndTheSkewCountsAsTheServersStreamsSql() {
    Seen seen = new Seen(5, 70); // tolerance 5 s, delay 70 s
    Seen.Metric cpu = seen.metric("cpu");
    seen.sample(cpu, b("web-1"), 1000, 1000); // on time
    seen.sample(cpu, b("web-1"), 999, 1000); // older: not newest
    seen.sample(cpu, b("web-2"), 1005, 1000); // ahead by exactly the tolerance: on time
    seen.sample(cpu, b("web-3"), 1006, 1000); // ahead past it: future, never newest
    seen.sample(cpu, b("web-4"), 929, 1000); // behind by more than the delay: backlog, newest
    seen.sample(cpu, b("web-5"), 930, 1000); // behind by exactly the delay: neither
    Seen.Metric mem = seen.metric("mem");
    seen.sample(mem, b("web-1"), 2000, NO_ARRIVAL); // no arrival: never set aside
    assertEquals(
        List.of(
            "M\tcpu\t1005.0\t1\t1",
            "M\tmem\t2000.0\t0\t0",
            "S\tweb-1\t2000.0",
            "S\tweb-2\t1005.0",
            "S\tweb-4\t929.0",
            "S\tweb-5\t930.0"),
        lines(seen));
  }

  @Test
  void aNaNTimeComparesAboveEveryNumberAsInSparkAndIsNeverANewestTime() {
    Seen seen = new Seen(5, 70);
    Seen.Metric cpu = seen.metric("cpu");
    seen.sample(cpu, b("a"), Double.NaN, 1000); // ahead, as Spark's NaN > x
    seen.sample(cpu, b("b"), Double.NaN, NO_ARRIVAL); // not recorded
    assertEquals(List.of("M\tcpu\t\t1\t0"), lines(seen));
  }

  @Test
  void drainForgetsSoNoBatchIsReportedTwice() {
    Seen seen = new Seen(5, 70);
    seen.sample(seen.metric("cpu"), b("a"), 10, 10);
    assertTrue(!seen.isZero());
    seen.drain();
    assertTrue(seen.isZero());
    assertEquals(List.of(""), lines(seen));
  }

  // Serialized task copies travel in Spark only: tests/aggregator (the real streams) cover that.
  @Test
  void tasksCopiesMergeByMaxAndSum() {
    Seen driver = new Seen(5, 70);
    Seen t1 = driver.copy();
    Seen t2 = driver.copy();
    t1.sample(t1.metric("cpu"), b("web-1"), 100, 100);
    t1.sample(t1.metric("cpu"), b("web-9"), 500, 100); // future
    t2.sample(t2.metric("cpu"), b("web-1"), 101, 101);
    t2.sample(t2.metric("cpu"), b("web-2"), 50, 200); // backlog
    driver.merge(t1);
    driver.merge(t2);
    assertEquals(
        List.of("M\tcpu\t101.0\t1\t1", "S\tweb-1\t101.0", "S\tweb-2\t50.0"), lines(driver));
  }

  @Test
  void aServersBytesAreItsNameWhateverArrayHoldsThem() {
    Seen seen = new Seen(5, 70);
    Seen.Metric cpu = seen.metric("cpu");
    seen.sample(cpu, b("wéb"), 1, 1);
    seen.sample(cpu, "wéb".getBytes(StandardCharsets.UTF_8), 2, 2);
    assertEquals(List.of("M\tcpu\t2.0\t0\t0", "S\twéb\t2.0"), lines(seen));
  }
}
