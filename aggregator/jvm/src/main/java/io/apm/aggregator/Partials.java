package io.apm.aggregator;

import java.math.BigDecimal;
import java.math.MathContext;
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
 * <p>The fixed-point sum follows Spark's {@code try_cast(value AS decimal(38,18))}: the
 * double's shortest decimal form rounded half-up to 18 decimals, null beyond 38 digits; a
 * value counts as exact only if that decimal converts back to the same double. A partial whose
 * fixed sum overflows reports no exact value at all (nFixed 0), which sends its window to the
 * float sum, as Spark's {@code try_sum} returning null did.
 */
public final class Partials {
  static final int SCALE = 18;
  private static final BigDecimal LIMIT = BigDecimal.TEN.pow(38 - SCALE);

  private final int sketchK;
  private final HashMap<Long, Partial> byWindow = new HashMap<>();
  private final List<Partial> order = new ArrayList<>();

  public Partials(int sketchK) {
    this.sketchK = sketchK;
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

  public void add(int queryIndex, Selection query, double ts, double value, BigDecimal exact) {
    long end = windowEnd(ts, query.windowSeconds);
    long key = ((long) queryIndex << 40) ^ end;
    Partial partial = byWindow.get(key);
    if (partial == null || partial.queryIndex != queryIndex || partial.end != end) {
      partial = new Partial(queryIndex, query, end, query.wantsSketch ? sketchK : 0);
      byWindow.put(key, partial);
      order.add(partial);
    }
    partial.add(value, exact);
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

  private static final class Partial {
    final int queryIndex;
    final Selection query;
    final long end;
    final KllDoublesSketch sketch;
    long n;
    long nFixed;
    BigDecimal fixedSum = BigDecimal.ZERO.setScale(SCALE);
    boolean overflowed;
    double floatSum;
    double min = Double.POSITIVE_INFINITY;
    double max = Double.NEGATIVE_INFINITY;

    Partial(int queryIndex, Selection query, long end, int sketchK) {
      this.queryIndex = queryIndex;
      this.query = query;
      this.end = end;
      this.sketch = sketchK > 0 ? KllDoublesSketch.newHeapInstance(sketchK) : null;
    }

    void add(double value, BigDecimal exact) {
      n++;
      floatSum += value;
      min = Math.min(min, value);
      max = Math.max(max, value);
      if (exact != null && !overflowed) {
        fixedSum = fixedSum.add(exact, MathContext.UNLIMITED);
        nFixed++;
        overflowed = fixedSum.abs().compareTo(LIMIT) >= 0;
      }
      if (sketch != null) {
        sketch.update(value);
      }
    }

    Row row() {
      boolean exact = !overflowed;
      return RowFactory.create(
          query.queryId,
          query.windowSeconds,
          end,
          n,
          exact ? fixedSum : null,
          exact ? nFixed : 0L,
          floatSum,
          min,
          max,
          sketch == null ? null : sketch.toByteArray());
    }
  }
}
