package io.apm.aggregator;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

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
}
