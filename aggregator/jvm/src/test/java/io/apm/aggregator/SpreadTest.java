package io.apm.aggregator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class SpreadTest {
  /** HashMap's bin for a Long key in a table of {@code n} (a power of two). */
  private static int bin(long key, int n) {
    int h = Long.hashCode(key);
    return (h ^ (h >>> 16)) & (n - 1);
  }

  @Test
  void distinctKeysStayDistinct() {
    Set<Long> out = new HashSet<>();
    for (long k = -50_000; k < 50_000; k++) {
      out.add(Spread.mix(k));
    }
    assertEquals(100_000, out.size());
  }

  @Test
  void theOperatorsKeysSpreadOverHashMapBins() {
    // 10 queries x 2 window ends, as one dedup key's partials: unmixed, Long.hashCode puts
    // every query of one end in one bin (the tree bins the profile found).
    Set<Integer> raw = new HashSet<>();
    Set<Integer> mixed = new HashSet<>();
    for (int q = 0; q < 10; q++) {
      for (long end = 1_700_000_000L; end < 1_700_000_020L; end += 10) {
        long key = ((long) q << 40) ^ end;
        raw.add(bin(key, 32));
        mixed.add(bin(Spread.mix(key), 32));
      }
    }
    assertEquals(2, raw.size(), "the unmixed keys: one bin per window end");
    assertTrue(mixed.size() >= 12, "mixed: " + mixed.size() + " bins of 20 keys");
  }
}
