package io.apm.aggregator;

import java.util.Arrays;
import java.util.List;
import org.apache.datasketches.kll.KllDoublesSketch;
import org.apache.datasketches.memory.Memory;
import org.apache.datasketches.quantilescommon.QuantileSearchCriteria;
import org.apache.datasketches.quantilescommon.QuantilesDoublesSketchIterator;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A window's percentiles from its KLL sketch, in the executors: the rule of
 * aggregator/quantiles.py (numpy's {@code linear} definition, exact while the sketch holds every
 * value; beyond, the two order statistics around {@code r = (n - 1) p / 100} read at the middle of
 * their rank intervals and interpolated; clamped to the window's exact min and max; finite in,
 * finite out), which stays the reference the tests hold this to.
 *
 * <p>Why here: until v4 every updated window's sketch (up to 80-160 KB) was collected to the
 * driver each batch, pickled for Python and read there with the DataSketches binding: about a
 * core of fixed cost at the 100 queries, whatever the sample rate (docs/aggregator.md).
 * Now only the numbers cross.
 *
 * <p>A fleet-level row (its {@code server} is "", or the input has no such column) also gets its
 * sketch as a {@link LogHistogram}'s bytes in {@code histogram}: what the rollup tiers merge
 * (docs/storage.md, "Rollup tiers"), a few KB where the sketch is up to 160 KB.
 */
public final class Percentiles implements MapFunction<Row, Row> {
  private static final long serialVersionUID = 1L;

  private final int sketchField;
  private final int levelsField;
  private final int minField;
  private final int maxField;
  private final int serverField;
  private final int secondsField;
  private final int[] kept;

  private Percentiles(StructType in) {
    this.sketchField = in.fieldIndex("sketch");
    this.levelsField = in.fieldIndex("levels");
    this.minField = in.fieldIndex("min");
    this.maxField = in.fieldIndex("max");
    this.serverField = java.util.Arrays.asList(in.fieldNames()).indexOf("server");
    this.secondsField = java.util.Arrays.asList(in.fieldNames()).indexOf("window_seconds");
    this.kept =
        Arrays.stream(in.fieldNames())
            .filter(f -> !f.equals("sketch") && !f.equals("levels"))
            .mapToInt(in::fieldIndex)
            .toArray();
  }

  /**
   * {@code windows} with a {@code sketch} (binary, null: none kept) and {@code levels}
   * (array&lt;double&gt;, the percentiles its query reads) to the same rows without those two and
   * with {@code percentiles} (array&lt;double&gt; in the order of {@code levels}; null without a
   * sketch or levels) and {@code histogram} (binary: the sketch's LogHistogram for a fleet-level
   * row whose query has a rollup tier, else null).
   */
  public static Dataset<Row> select(Dataset<Row> windows) {
    StructType in = windows.schema();
    Percentiles function = new Percentiles(in);
    StructType out = new StructType();
    for (int i : function.kept) {
      StructField f = in.fields()[i];
      out = out.add(f);
    }
    out = out.add("percentiles", DataTypes.createArrayType(DataTypes.DoubleType, false), true);
    out = out.add("histogram", DataTypes.BinaryType, true);
    return windows.map(function, Encoders.row(out));
  }

  @Override
  public Row call(Row row) {
    Object[] values = new Object[kept.length + 2];
    for (int i = 0; i < kept.length; i++) {
      values[i] = row.get(kept[i]);
    }
    KllDoublesSketch kll =
        row.isNullAt(sketchField) ? null : KllDoublesSketch.heapify(Memory.wrap((byte[]) row.getAs(sketchField)));
    boolean fleet = serverField < 0 || "".equals(row.getString(serverField));
    if (fleet && kll != null && tiered(row)) {
      values[kept.length + 1] = LogHistogram.ofSketch(kll);
    }
    if (kll != null && !row.isNullAt(levelsField)) {
      List<Double> levels = row.getList(levelsField);
      double[] ps = new double[levels.size()];
      for (int i = 0; i < ps.length; i++) {
        ps[i] = levels.get(i);
      }
      values[kept.length] = of(kll, ps, row.getDouble(minField), row.getDouble(maxField));
    }
    return RowFactory.create(values);
  }

  /** The percentiles {@code levels} (0 &lt; p &lt; 100) of {@code sketch}, clamped to [low, high]. */
  public static double[] of(byte[] sketch, double[] levels, double low, double high) {
    return of(KllDoublesSketch.heapify(Memory.wrap(sketch)), levels, low, high);
  }

  static double[] of(KllDoublesSketch kll, double[] levels, double low, double high) {
    double[] out = new double[levels.length];
    long n = kll.getN();
    double[] sorted = null;
    if (!kll.isEstimationMode()) {
      sorted = new double[(int) n];
      QuantilesDoublesSketchIterator it = kll.iterator();
      int j = 0;
      while (it.next()) {
        sorted[j++] = it.getQuantile();
      }
      Arrays.sort(sorted);
    }
    for (int k = 0; k < levels.length; k++) {
      double p = levels[k];
      double value;
      if (n == 0) {
        value = Double.NaN;
      } else if (sorted != null) {
        // numpy's virtual index for "linear": (n - 1) * (p / 100).
        double r = (sorted.length - 1) * (p / 100.0);
        int i = (int) Math.floor(r);
        value = i >= sorted.length - 1 ? sorted[sorted.length - 1] : lerp(sorted[i], sorted[i + 1], r - i);
      } else {
        double r = (n - 1) * p / 100.0;
        long i = (long) Math.floor(r);
        double a = kll.getQuantile((i + 0.5) / n, QuantileSearchCriteria.INCLUSIVE);
        double b = kll.getQuantile((Math.min(i + 1, n - 1) + 0.5) / n, QuantileSearchCriteria.INCLUSIVE);
        value = lerp(a, b, r - i);
      }
      out[k] = Math.min(Math.max(value, low), high);
    }
    return out;
  }

  /** Whether the row's query has a rollup tier (apm/tiers.py, tiers_of): its windows tile an hour. */
  private boolean tiered(Row row) {
    if (secondsField < 0 || row.isNullAt(secondsField)) {
      return true;
    }
    int seconds = row.getInt(secondsField);
    return seconds > 0 && seconds < 3600 && 3600 % seconds == 0;
  }

  /** quantiles.py's {@code lerp}: numpy's, and finite whenever a and b are. */
  static double lerp(double a, double b, double t) {
    double span = b - a;
    if (Double.isFinite(span)) {
      return t >= 0.5 ? b - span * (1.0 - t) : a + span * t;
    }
    if (t == 0.0) {
      return a;
    }
    return a * (1.0 - t) + b * t;
  }
}
