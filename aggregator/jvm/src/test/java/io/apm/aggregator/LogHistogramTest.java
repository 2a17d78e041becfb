package io.apm.aggregator;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.HexFormat;
import java.util.zip.CRC32;
import org.apache.datasketches.kll.KllDoublesSketch;
import org.apache.datasketches.memory.Memory;
import org.junit.jupiter.api.Test;

class LogHistogramTest {
  // The same values and bytes as tests/apm/test_loghist.py (CROSS_VALUES, CROSS_HEX, ...).
  private static final double[] CROSS = {0.0, 1.0, 1.05, -3.0, 1e-12, 1.1, 1.1, 0.99, -2.9};

  private static byte[] of(double... values) {
    LogHistogram hist = new LogHistogram();
    for (double v : values) {
      hist.add(v, 1);
    }
    return hist.encode();
  }

  @Test
  void writesThePythonBytes() {
    assertEquals("010200060200000100026c020101", HexFormat.of().formatHex(of(CROSS)));
  }

  @Test
  void collapsesTheLowestBucketsAsPythonDoes() {
    double[] values = java.util.Arrays.copyOf(CROSS, CROSS.length + 1);
    values[CROSS.length] = 1e300;
    byte[] bytes = of(values);
    CRC32 crc = new CRC32();
    crc.update(bytes);
    assertEquals(2059, bytes.length);
    assertEquals(2926207054L, crc.getValue());
  }

  @Test
  void aSketchInExactModeGivesTheHistogramOfItsValues() {
    KllDoublesSketch sketch = KllDoublesSketch.newHeapInstance(10_000);
    for (double v : CROSS) {
      sketch.update(v);
    }
    byte[] roundTripped =
        LogHistogram.ofSketch(KllDoublesSketch.heapify(Memory.wrap(sketch.toByteArray())));
    assertArrayEquals(of(CROSS), roundTripped);
  }

  @Test
  void anEstimatingSketchKeepsItsCountThroughTheWeights() {
    KllDoublesSketch sketch = KllDoublesSketch.newHeapInstance(200);
    for (int i = 1; i <= 100_000; i++) {
      sketch.update(i);
    }
    LogHistogram hist = new LogHistogram();
    var it = sketch.iterator();
    long total = 0;
    while (it.next()) {
      hist.add(it.getQuantile(), it.getWeight());
      total += it.getWeight();
    }
    assertEquals(100_000, total);
    assertArrayEquals(hist.encode(), LogHistogram.ofSketch(sketch));
  }

  @Test
  void refusesNonFiniteValues() {
    LogHistogram hist = new LogHistogram();
    assertThrows(IllegalArgumentException.class, () -> hist.add(Double.NaN, 1));
  }
}
