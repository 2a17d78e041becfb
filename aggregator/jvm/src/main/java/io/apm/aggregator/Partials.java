package io.apm.aggregator;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import org.apache.datasketches.kll.KllDoublesSketch;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;

/**
 * The partial window summaries of one micro-batch's new samples under one dedup key: per
 * (query, window end), the count, the exact fixed-point sum, the float sum, min, max and a
 * KLL sketch, exactly the fields the SQL plan's aggregation keeps (plan.window_summaries).
 * The aggregation downstream merges these partials: counts and sums add, min and max fold,
 * sketches merge ({@code kll_merge_agg_double}), so a window's summary does not depend on how
 * its samples were split into partials.
 *
 * <p>v4: a sample's exact value is a 128-bit integer at scale 18 ({@link #exact}), taken from
 * its text's digits where the text allows ({@link Digits}), and the partial adds those with a
 * carry: one {@code BigDecimal} per partial, none per sample.
 *
 * <p>The fixed-point sum follows Spark's {@code try_cast(value AS decimal(38,18))}: the
 * double's shortest decimal form rounded half-up to 18 decimals, null beyond 38 digits; a
 * value counts as exact only if that decimal converts back to the same double. A partial whose
 * fixed sum overflows reports no exact value at all (nFixed 0), which sends its window to the
 * float sum, as Spark's {@code try_sum} returning null did.
 */
public final class Partials {
  static final int SCALE = 18;
  private static final BigDecimal LIMIT = BigDecimal.TEN.pow(38 - SCALE);
  // 10^38, the magnitude decimal(38,18) stays below, as a 128-bit integer at scale 18.
  private static final long LIMIT_HIGH = BigInteger.TEN.pow(38).shiftRight(64).longValue();
  private static final long LIMIT_LOW = BigInteger.TEN.pow(38).longValue();

  /**
   * The high word of the 128-bit sum of (high, low) and (addHigh, addLow); its low word is {@code
   * low + addLow}. Both terms are below 10^38 < 2^127 in magnitude, so the sum cannot wrap.
   */
  static long sumHigh(long high, long low, long addHigh, long addLow) {
    return high + addHigh + (Long.compareUnsigned(low + addLow, low) < 0 ? 1 : 0);
  }

  /**
   * A partial's row ({@link Dedup#PARTIALS}): an overflowed exact sum reports no exact value at
   * all (null, and no exact count), which sends its window to the float sum.
   */
  static Row row(
      String seriesId,
      int windowSeconds,
      long end,
      long n,
      boolean overflowed,
      long nFixed,
      long high,
      long low,
      double floatSum,
      double min,
      double max,
      byte[] sketch) {
    boolean exact = !overflowed;
    return RowFactory.create(
        seriesId,
        windowSeconds,
        end,
        n,
        exact ? decimal(high, low) : null,
        exact ? nFixed : 0L,
        floatSum,
        min,
        max,
        sketch);
  }

  /** Whether a 128-bit integer at scale 18 is 10^38 or more in magnitude. */
  static boolean beyond(long high, long low) {
    if (high < 0) { // its magnitude: the two's complement
      low = -low;
      high = ~high + (low == 0 ? 1 : 0);
    }
    return Long.compareUnsigned(high, LIMIT_HIGH) > 0
        || (high == LIMIT_HIGH && Long.compareUnsigned(low, LIMIT_LOW) >= 0);
  }

  private final int sketchK;
  private final HashMap<Long, Partial> byWindow = new HashMap<>();
  private final List<Partial> order = new ArrayList<>();
  private final Partial[] last;

  public Partials(int sketchK) {
    this(sketchK, 0);
  }

  /** {@code queries}: how many query indexes {@link #add} takes (a cache per query). */
  public Partials(int sketchK, int queries) {
    this.sketchK = sketchK;
    this.last = new Partial[queries];
  }

  /**
   * The end (epoch seconds) of the {@code width}-s window holding a sample at {@code ts}: the
   * SQL plan's {@code floor(ts / width) * width + width}, the same double arithmetic.
   */
  static long windowEnd(double ts, int width) {
    return (long) Math.floor(ts / width) * width + width;
  }

  /**
   * The sample's value as an exact decimal(38,18), or null if it has none: Spark's {@code
   * try_cast(text AS decimal(38,18))} of the value's shortest decimal text (what the ingest
   * writes, Python's {@code repr}), kept only if it converts back to the same double.
   *
   * <p>v4: most values ({@link FixedPoint#unscaled}: at most 15 significant digits, 18
   * decimals) are converted with double arithmetic alone; only the rest take the way through
   * {@code BigDecimal} ({@link FixedPoint#shortest}), which Java 17 makes slow
   * (docs/aggregator.md, "v4, step by step").
   */
  public static BigDecimal fixed(double value) {
    if (!(Math.abs(value) < FixedPoint.LIMIT)) {
      return null; // 10^20 or more (or not finite): beyond decimal(38,18)
    }
    long unscaled = FixedPoint.unscaled(value);
    if (unscaled != FixedPoint.NONE) {
      return BigDecimal.valueOf(unscaled, SCALE);
    }
    int decimals = FixedPoint.decimals(value);
    if (decimals >= 0) { // its digits times 10^(18 - decimals) overflow a long: exact, wider
      return BigDecimal.valueOf(FixedPoint.digits(value, decimals), decimals).setScale(SCALE);
    }
    long[] longer = FixedPoint.longDigits(value); // 16 or 17 digits, still no BigDecimal math
    if (longer != null) {
      return longer[1] < 0 ? null : BigDecimal.valueOf(longer[0], (int) longer[1]).setScale(SCALE);
    }
    BigDecimal shortest = FixedPoint.shortest(value);
    BigDecimal decimal = shortest.setScale(SCALE, RoundingMode.HALF_UP);
    if (decimal.abs().compareTo(LIMIT) >= 0) {
      return null;
    }
    if (shortest.scale() <= SCALE) {
      return decimal; // not rounded: the shortest text converts back to the double
    }
    return decimal.doubleValue() == value ? decimal : null;
  }

  /**
   * The sample's exact decimal(38,18) value as a 128-bit integer at scale 18 into {@code out}
   * ({high, low} words), or false if it has none: {@link #fixed}'s answer, from the value's text
   * ({@code digits}, {@link Digits}) when it is a short plain decimal of at most 18 decimals,
   * else from the double.
   */
  public static boolean exact(double value, long digits, long[] out) {
    if (!(Math.abs(value) < FixedPoint.LIMIT)) {
      return false; // 10^20 or more (or not finite): beyond decimal(38,18)
    }
    if (digits != Digits.NONE) {
      int k = Digits.decimals(digits);
      if (k >= 0 && k <= SCALE) {
        long m = Digits.mantissa(digits);
        long p = FixedPoint.LONG_POW10[SCALE - k];
        out[0] = Math.multiplyHigh(m, p);
        out[1] = m * p;
        return true;
      }
    }
    long unscaled = FixedPoint.unscaled(value);
    if (unscaled != FixedPoint.NONE) {
      out[0] = unscaled < 0 ? -1L : 0L;
      out[1] = unscaled;
      return true;
    }
    BigDecimal decimal = fixed(value);
    if (decimal == null) {
      return false;
    }
    BigInteger u = decimal.unscaledValue(); // at scale 18: below 10^38 < 2^127
    out[0] = u.shiftRight(64).longValue();
    out[1] = u.longValue();
    return true;
  }

  /**
   * {@link #exact} of a value and its text, as a decimal (null: none): what a sample of that
   * line adds to the exact sum (tests/aggregator/test_fixed_point.py holds it to Spark's cast).
   */
  public static BigDecimal exact(double value, byte[] text) {
    long[] words = new long[2];
    return exact(value, Digits.parse(text, 0, text.length), words) ? decimal(words[0], words[1]) : null;
  }

  /** The decimal(38,18) of a 128-bit integer at scale 18 ({@link #exact}'s form). */
  public static BigDecimal decimal(long high, long low) {
    byte[] bytes = new byte[16];
    for (int i = 0; i < 8; i++) {
      bytes[i] = (byte) (high >>> (56 - 8 * i));
      bytes[8 + i] = (byte) (low >>> (56 - 8 * i));
    }
    return new BigDecimal(new BigInteger(bytes), SCALE);
  }

  /** {@code exact}: {@link #exact}'s words, or null if the value has no exact form. */
  public void add(int queryIndex, Selection query, double ts, double value, long[] exact) {
    add(queryIndex, query, null, ts, value, exact);
  }

  /**
   * As {@link #add(int, Selection, double, double, long[])}, into the series of {@code server}
   * (null: the query's one series). {@code queryIndex} is then a slot: one per (query, server),
   * which the caller numbers; its partials' query_id is {@link #seriesId}.
   */
  public void add(
      int queryIndex, Selection query, String server, double ts, double value, long[] exact) {
    long end = windowEnd(ts, query.windowSeconds);
    // The samples of one key and batch fall in one or two windows per query: the query's last
    // partial answers most of them without a map lookup.
    Partial partial = queryIndex < last.length ? last[queryIndex] : null;
    if (partial == null || partial.end != end) {
      long key = Spread.mix(((long) queryIndex << 40) ^ end); // a bijection: still distinct
      partial = byWindow.get(key);
      if (partial == null || partial.queryIndex != queryIndex || partial.end != end) {
        int k = query.sketchK > 0 ? query.sketchK : sketchK;
        partial = new Partial(queryIndex, query, server, end, query.wantsSketch ? k : 0);
        byWindow.put(key, partial);
        order.add(partial);
      }
      if (queryIndex < last.length) {
        last[queryIndex] = partial;
      }
    }
    partial.add(value, exact);
  }

  /**
   * The query_id column of a partial: the query's id, or for a server's series of a {@code BY
   * server} query the id, a tab and the server. A tab is in neither (ids are uuids, server names
   * {@code [A-Za-z0-9_.-]}); keeping the series in this column keeps the window aggregation's
   * state key, and so a running checkpoint, as it was (aggregator/evaluate.py splits it).
   */
  public static String seriesId(String queryId, String server) {
    return server == null ? queryId : queryId + '\t' + server;
  }

  public int size() {
    return order.size();
  }

  /**
   * Rows of (query_id, window_seconds, window_end_s, n, fixed_sum, n_fixed, float_sum, min, max,
   * sketch).
   */
  public List<Row> rows() {
    List<Row> out = new ArrayList<>(order.size());
    for (Partial p : order) {
      out.add(p.row());
    }
    return out;
  }

  /**
   * The rows of the partials of a query's one series into {@code plain}; the partials of a
   * server's series ({@code BY server}) merged into {@code held} instead, to be emitted when
   * their window completes (v5, {@link HeldPartials}).
   */
  public void split(List<Row> plain, HeldPartials held) {
    for (Partial p : order) {
      if (p.server == null) {
        plain.add(p.row());
      } else {
        held.add(
            p.query.queryId,
            p.server,
            p.query.windowSeconds,
            p.end,
            p.n,
            p.overflowed ? 0L : p.nFixed,
            p.high,
            p.low,
            p.overflowed,
            p.floatSum,
            p.min,
            p.max,
            p.sketch);
      }
    }
  }

  private static final class Partial {
    final int queryIndex;
    final Selection query;
    final String server;
    final long end;
    // Of the series' k (quantiles.sketch_k): the window's merge adopts the first partial's.
    final KllDoublesSketch sketch;
    long n;
    long nFixed;
    long high; // the exact sum, a 128-bit integer at scale 18
    long low;
    boolean overflowed;
    double floatSum;
    double min = Double.POSITIVE_INFINITY;
    double max = Double.NEGATIVE_INFINITY;

    Partial(int queryIndex, Selection query, String server, long end, int sketchK) {
      this.queryIndex = queryIndex;
      this.query = query;
      this.server = server;
      this.end = end;
      this.sketch = sketchK > 0 ? KllDoublesSketch.newHeapInstance(sketchK) : null;
    }

    void add(double value, long[] exact) {
      n++;
      floatSum += value;
      min = Math.min(min, value);
      max = Math.max(max, value);
      if (exact != null && !overflowed) {
        high = sumHigh(high, low, exact[0], exact[1]);
        low += exact[1];
        nFixed++;
        overflowed = beyond(high, low);
      }
      if (sketch != null) {
        sketch.update(value);
      }
    }

    Row row() {
      return Partials.row(
          seriesId(query.queryId, server),
          query.windowSeconds,
          end,
          n,
          overflowed,
          nFixed,
          high,
          low,
          floatSum,
          min,
          max,
          sketch == null ? null : sketch.toByteArray());
    }
  }
}
