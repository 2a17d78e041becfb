package io.apm.aggregator;

import java.io.ByteArrayOutputStream;
import java.util.HashMap;
import java.util.Map;
import org.apache.datasketches.kll.KllDoublesSketch;
import org.apache.datasketches.quantilescommon.QuantilesDoublesSketchIterator;

/**
 * A window's mergeable log-bucket histogram for the rollup tiers, built from its KLL sketch in the
 * executors: the bytes of apm/loghist.py (its module docstring and docs/storage.md, "Rollup
 * tiers"), which LogHistogramTest and tests/apm/test_loghist.py hold to the same values. Only
 * these bytes (a few hundred to a few thousand) reach the driver, never the sketch.
 */
public final class LogHistogram {
  static final double ALPHA = 0.01;
  static final double GAMMA = (1 + ALPHA) / (1 - ALPHA);
  static final double LOG_GAMMA = Math.log(GAMMA);
  static final double MIN_MAGNITUDE = 1e-9;
  static final int MAX_BUCKETS = 2048;
  static final int VERSION = 1;

  private long zero;
  private final Map<Integer, Long> positive = new HashMap<>();
  private final Map<Integer, Long> negative = new HashMap<>();

  /** Counts {@code value} (finite) {@code weight} times. */
  public void add(double value, long weight) {
    if (!Double.isFinite(value)) {
      throw new IllegalArgumentException("a histogram holds finite values only, got " + value);
    }
    double magnitude = Math.abs(value);
    if (magnitude < MIN_MAGNITUDE) {
      zero += weight;
      return;
    }
    int index = (int) Math.ceil(Math.log(magnitude) / LOG_GAMMA);
    (value > 0 ? positive : negative).merge(index, weight, Long::sum);
  }

  /** The histogram of every item {@code sketch} retains, each counted its weight. */
  public static byte[] ofSketch(KllDoublesSketch sketch) {
    LogHistogram hist = new LogHistogram();
    QuantilesDoublesSketchIterator it = sketch.iterator();
    while (it.next()) {
      hist.add(it.getQuantile(), it.getWeight());
    }
    return hist.encode();
  }

  /** The bytes: version, zero count, then the positive and the negative dense stores. */
  public byte[] encode() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(VERSION);
    varint(out, zero);
    store(out, positive);
    store(out, negative);
    return out.toByteArray();
  }

  private static void store(ByteArrayOutputStream out, Map<Integer, Long> counts) {
    if (counts.isEmpty()) {
      varint(out, 0);
      varint(out, 0);
      return;
    }
    int high = Integer.MIN_VALUE;
    for (int k : counts.keySet()) {
      high = Math.max(high, k);
    }
    // Collapsing the lowest: every bucket below the cap's floor counts in the floor's bucket.
    int floor = high - MAX_BUCKETS + 1;
    long[] dense = new long[MAX_BUCKETS];
    int low = high;
    for (Map.Entry<Integer, Long> e : counts.entrySet()) {
      int k = Math.max(e.getKey(), floor);
      dense[k - floor] += e.getValue();
      low = Math.min(low, k);
    }
    varint(out, ((long) low << 1) ^ ((long) low >> 63));
    varint(out, high - low + 1);
    for (int k = low; k <= high; k++) {
      varint(out, dense[k - floor]);
    }
  }

  private static void varint(ByteArrayOutputStream out, long value) {
    while ((value & ~0x7FL) != 0) {
      out.write((int) ((value & 0x7F) | 0x80));
      value >>>= 7;
    }
    out.write((int) value);
  }
}
