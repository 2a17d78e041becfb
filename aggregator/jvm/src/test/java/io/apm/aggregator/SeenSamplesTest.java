package io.apm.aggregator;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class SeenSamplesTest {
  @Test
  void aSampleIsNewOnceAndOnlyOnce() {
    SeenSamples seen = new SeenSamples();
    assertTrue(seen.add("web-1", 0));
    assertFalse(seen.add("web-1", 0));
    assertTrue(seen.add("web-2", 0), "another server at the same time is another sample");
    assertTrue(seen.add("web-1", 1), "one microsecond later is another sample");
    assertEquals(3, seen.size());
  }

  @Test
  void matchesAHashSetOnRandomInputAcrossEncodeDecodeRoundTrips() {
    Random random = new Random(7);
    SeenSamples seen = new SeenSamples();
    Set<String> truth = new HashSet<>();
    for (int batch = 0; batch < 50; batch++) {
      for (int i = 0; i < 400; i++) {
        String server = "srv-" + random.nextInt(60) + (random.nextBoolean() ? "é" : "");
        int offset = random.nextInt(8_000_000);
        if (random.nextInt(10) == 0) {
          offset = random.nextInt(5); // collisions are frequent here
        }
        assertEquals(truth.add(server + "\t" + offset), seen.add(server, offset));
      }
      byte[] bytes = seen.encode();
      seen = SeenSamples.decode(bytes);
      assertArrayEquals(bytes, seen.encode(), "decode then encode gives the same bytes");
      assertEquals(truth.size(), seen.size());
    }
  }

  @Test
  void offsetsInAnyOrderAreKeptSorted() {
    SeenSamples seen = new SeenSamples();
    int[] offsets = {5, 1, 9, 3, 7, 0, 8, 2, 6, 4, 2_000_000_000};
    for (int o : offsets) {
      assertTrue(seen.add("a", o));
    }
    SeenSamples back = SeenSamples.decode(seen.encode());
    for (int o : offsets) {
      assertTrue(back.contains("a", o));
      assertFalse(back.add("a", o));
    }
    assertFalse(back.contains("a", 10));
  }

  @Test
  void aOneHertzSeriesCostsAboutTwoBytesASample() {
    SeenSamples seen = new SeenSamples();
    for (int server = 0; server < 300; server++) {
      for (int second = 0; second < 8; second++) {
        seen.add("srv-" + server, second * 1_000_000);
      }
    }
    int bytes = seen.encode().length;
    assertTrue(bytes < 300 * (8 + 8 * 3 + 4), "encoded " + bytes + " bytes for 2,400 samples");
  }

  @Test
  void corruptOrForeignStateIsRefusedNotMisread() {
    byte[] good = new SeenSamples().encode();
    byte[] version = good.clone();
    version[0] = 9;
    assertThrows(IllegalStateException.class, () -> SeenSamples.decode(version));
    SeenSamples one = new SeenSamples();
    one.add("web-1", 42);
    byte[] full = one.encode();
    byte[] truncated = Arrays.copyOf(full, full.length - 1);
    assertThrows(IllegalStateException.class, () -> SeenSamples.decode(truncated));
    byte[] longer = Arrays.copyOf(full, full.length + 1);
    assertThrows(IllegalStateException.class, () -> SeenSamples.decode(longer));
    assertThrows(IllegalArgumentException.class, () -> one.add("web-1", -1));
  }

  /**
   * Bytes written by the v3 encoder (main at 2b2a0c6, before the pending-table change), captured
   * from this program run against that build: 5 servers "srv-N" with offsets
   * sec * 1,000,000 + N for sec 7 down to 0; 40 offsets from new Random(11).nextInt(8,000,000)
   * and 2,000,000,000 for "web-é"; offset 0 for the empty server name.
   */
  private static final String V3_BYTES =
      "AQcAAQAFc3J2LTAIAMCEPcCEPcCEPcCEPcCEPcCEPcCEPQVzcnYtMQgBwIQ9wIQ9wIQ9wIQ9wIQ9wIQ9wIQ9BXNydi00"
          + "CATAhD3AhD3AhD3AhD3AhD3AhD3AhD0Fc3J2LTIIAsCEPcCEPcCEPcCEPcCEPcCEPcCEPQVzcnYtMwgDwIQ9wIQ9"
          + "wIQ9wIQ9wIQ9wIQ9wIQ9BndlYi3DqSnU5wvGgQH74gHdvwmN0gL9ng+E1AStoRHu7iDimSrhmwz0+huStwH89h/j"
          + "6gW8rQSBmgyW/gXg4A3m5CvpmwSRhwS4khmvwgXa6guMDY7qC/KODK62EKftEdTEA577Bf7sE/PpEZ/ZDdO6AsKH"
          + "BJIh8KkDhMgG66DxtQc=";

  @Test
  void stateWrittenByTheV3EncoderDecodesToTheSameSamples() {
    Set<String> truth = new HashSet<>();
    for (int srv = 0; srv < 5; srv++) {
      for (int sec = 7; sec >= 0; sec--) {
        truth.add("srv-" + srv + "\t" + (sec * 1_000_000 + srv));
      }
    }
    Random random = new Random(11);
    for (int i = 0; i < 40; i++) {
      truth.add("web-é\t" + random.nextInt(8_000_000));
    }
    truth.add("web-é\t2000000000");
    truth.add("\t0");
    byte[] v3 = Base64.getDecoder().decode(V3_BYTES);
    SeenSamples seen = SeenSamples.decode(v3);
    assertEquals(truth.size(), seen.size());
    for (String sample : truth) {
      String[] parts = sample.split("\t", -1);
      int offset = Integer.parseInt(parts[1]);
      assertTrue(seen.contains(parts[0], offset), sample);
      assertFalse(seen.add(parts[0], offset), "a sample held by v3 state is never new again: " + sample);
    }
    assertEquals(truth.size(), seen.size());
    assertArrayEquals(v3, SeenSamples.decode(v3).encode(), "the layout is v3's, byte for byte");
  }

  /** The insertion orders an adversary or an unlucky network can produce. */
  private static int[] offsets(String order, int n, Random random) {
    int[] out = new int[n];
    switch (order) {
      case "ascending" -> {
        for (int i = 0; i < n; i++) {
          out[i] = i * 1000;
        }
      }
      case "descending" -> {
        for (int i = 0; i < n; i++) {
          out[i] = (n - i) * 1000;
        }
      }
      case "random" -> {
        for (int i = 0; i < n; i++) {
          out[i] = random.nextInt(Integer.MAX_VALUE);
        }
      }
      case "duplicates" -> {
        for (int i = 0; i < n; i++) {
          out[i] = random.nextInt(n / 8 + 1) * 1_000_000;
        }
      }
      case "interleaved" -> { // two runs, one up and one down, plus resends of earlier values
        for (int i = 0; i < n; i++) {
          int k = i / 2;
          out[i] = i % 7 == 6 ? out[random.nextInt(i)] : (i % 2 == 0 ? 2 * k : 2 * (n - k) + 1);
        }
      }
      case "shuffled" -> {
        List<Integer> all = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          all.add(i);
        }
        Collections.shuffle(all, random);
        for (int i = 0; i < n; i++) {
          out[i] = all.get(i);
        }
      }
      default -> throw new IllegalArgumentException(order);
    }
    return out;
  }

  @ParameterizedTest
  @ValueSource(strings = {"ascending", "descending", "random", "duplicates", "interleaved", "shuffled"})
  void matchesATreeSetInEveryArrivalOrder(String order) {
    Random random = new Random(order.hashCode());
    for (int round = 0; round < 20; round++) {
      int n = 1 + random.nextInt(round < 10 ? 100 : 5_000);
      int servers = 1 + random.nextInt(3);
      SeenSamples seen = new SeenSamples();
      List<TreeSet<Integer>> truth = new ArrayList<>();
      for (int s = 0; s < servers; s++) {
        truth.add(new TreeSet<>());
      }
      int[] values = offsets(order, n, random);
      for (int i = 0; i < n; i++) {
        int s = random.nextInt(servers);
        int probe = values[random.nextInt(i + 1)];
        assertEquals(truth.get(s).contains(probe), seen.contains("s" + s, probe), order + " contains");
        assertEquals(truth.get(s).add(values[i]), seen.add("s" + s, values[i]), order + " add");
        if (random.nextInt(n) == 0) { // a micro-batch boundary: the state is stored and read back
          seen = SeenSamples.decode(seen.encode());
        }
      }
      long total = truth.stream().mapToLong(TreeSet::size).sum();
      assertEquals(total, seen.size());
      SeenSamples back = SeenSamples.decode(seen.encode());
      assertEquals(total, back.size());
      for (int s = 0; s < servers; s++) {
        for (int v : truth.get(s)) {
          assertTrue(back.contains("s" + s, v));
          assertFalse(seen.add("s" + s, v));
        }
      }
      assertEquals(total, seen.size(), "re-adding everything adds nothing");
    }
  }

  @Test
  void encodingDoesNotDependOnArrivalOrder() {
    Random random = new Random(3);
    int[] values = offsets("shuffled", 3_000, random);
    SeenSamples shuffled = new SeenSamples();
    SeenSamples sorted = new SeenSamples();
    for (int v : values) {
      shuffled.add("a", v);
    }
    int[] ascending = values.clone();
    Arrays.sort(ascending);
    for (int v : ascending) {
      sorted.add("a", v);
    }
    assertArrayEquals(sorted.encode(), shuffled.encode());
  }
}
