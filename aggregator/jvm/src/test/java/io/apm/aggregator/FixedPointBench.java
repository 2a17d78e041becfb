package io.apm.aggregator;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.SplittableRandom;

/**
 * ns per value of v3's conversion (Double.toString, BigDecimal) against {@link Partials#fixed}
 * (v4), on the benchmark fleet's values (multiples of 2^-10, loadgen/fleet.py) and on random
 * 17-digit doubles. Not a test: run by {@code python -m bench.aggregator_fixed}, which prints the
 * figures and their ratio from the same run.
 */
public final class FixedPointBench {
  private FixedPointBench() {}

  static BigDecimal v3(double value) {
    BigDecimal decimal = new BigDecimal(Double.toString(value)).setScale(18, RoundingMode.HALF_UP);
    if (decimal.abs().compareTo(BigDecimal.TEN.pow(20)) >= 0) {
      return null;
    }
    return decimal.doubleValue() == value ? decimal : null;
  }

  private static double run(double[] values, boolean v4, int rounds) {
    long best = Long.MAX_VALUE;
    long sink = 0;
    for (int r = 0; r < rounds; r++) {
      long start = System.nanoTime();
      for (double v : values) {
        BigDecimal d = v4 ? Partials.fixed(v) : v3(v);
        sink += d == null ? 1 : d.signum();
      }
      best = Math.min(best, System.nanoTime() - start);
    }
    if (sink == 42) {
      System.out.print("");
    }
    return (double) best / values.length;
  }

  /**
   * ns per sample of the operator's per-sample work after the dedup check, in the shape:
   * each sample to 3 queries (10 s and 1 m windows, all with percentiles, so a KLL sketch each),
   * {@code perKey} samples per (dedup key, batch), then the partial rows (sketches serialized).
   * {@code sketches} false: the same without sketches, which shows their share.
   */
  private static double partials(double[] values, boolean v4, boolean sketches, int perKey) {
    java.util.List<String> none = java.util.List.of();
    Selection[] queries = {
      new Selection("a", "m", 10, sketches, true, none, none, null),
      new Selection("b", "m", 10, sketches, true, none, none, null),
      new Selection("c", "m", 60, sketches, true, none, none, null),
    };
    long best = Long.MAX_VALUE;
    long sink = 0;
    long[] words = new long[2];
    for (int round = 0; round < 5; round++) {
      long start = System.nanoTime();
      for (int from = 0; from < values.length; from += perKey) {
        Partials partials = new Partials(10_000);
        for (int i = from; i < Math.min(values.length, from + perKey); i++) {
          double v = values[i];
          long[] exact = v4 ? (Partials.exact(v, Digits.NONE, words) ? words : null) : words(v3(v), words);
          double ts = 1_700_000_000.0 + (i % 8);
          for (int q = 0; q < queries.length; q++) {
            partials.add(q, queries[q], ts, v, exact);
          }
        }
        sink += partials.rows().size();
      }
      best = Math.min(best, System.nanoTime() - start);
    }
    if (sink == 42) {
      System.out.print("");
    }
    return (double) best / values.length;
  }

  public static void main(String[] args) {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 200_000;
    SplittableRandom random = new SplittableRandom(3);
    double[] fleet = new double[n];
    double[] random17 = new double[n];
    for (int i = 0; i < n; i++) {
      fleet[i] = Math.rint(random.nextDouble(0, 500) * 1024) / 1024;
      random17[i] = random.nextDouble(0, 100);
    }
    for (String kind : new String[] {"fleet", "random"}) {
      double[] values = kind.equals("fleet") ? fleet : random17;
      run(values, false, 3);
      run(values, true, 3);
      double before = run(values, false, 7);
      double after = run(values, true, 7);
      System.out.printf("fixed %s: v3 %.1f ns/value, v4 %.1f ns/value%n", kind, before, after);
    }
    for (boolean sketches : new boolean[] {true, false}) {
      partials(fleet, false, sketches, 750);
      double before = partials(fleet, false, sketches, 750);
      double after = partials(fleet, true, sketches, 750);
      System.out.printf(
          "partials fleet, 3 queries, 750 samples a key, sketches %s: v3 %.1f ns/sample, v4 %.1f ns/sample%n",
          sketches, before, after);
    }
  }

  /** v3's BigDecimal as the partials' 128-bit words (v3 added BigDecimals: the same work). */
  private static long[] words(BigDecimal d, long[] out) {
    if (d == null) {
      return null;
    }
    java.math.BigInteger u = d.unscaledValue();
    out[0] = u.shiftRight(64).longValue();
    out[1] = u.longValue();
    return out;
  }
}
