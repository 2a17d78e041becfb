package io.apm.aggregator;

import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.LongAccumulator;

/**
 * The entry point the PySpark plan calls (aggregator/plan.py, {@code window_partials}).
 *
 * <p>{@code packs} must have the columns {@code dedup_key} (string: "metric|server bucket|block")
 * and {@code pack} (a {@link Pack}), and a column carrying the event-time watermark's mark that
 * Spark requires for event-time timeouts (plan.py says why it never holds a late time). The
 * fewer columns, the cheaper: Spark turns every input row into a Java object for the operator.
 * The result has one row per (dedup key, query, window) that a micro-batch's new samples
 * touched: the partial summaries of {@link Partials#rows()}. {@code late} (null: none) counts
 * the samples dropped as late. {@code graceMs} >= 0 holds a {@code BY server} series' partials
 * until its window completes, {@code delayMs} being the watermark's delay ({@link
 * HeldPartials}); below 0 they are returned with every batch.
 */
public final class Dedup {
  private Dedup() {}

  public static final StructType PARTIALS =
      new StructType()
          .add("query_id", DataTypes.StringType, false)
          .add("window_seconds", DataTypes.IntegerType, false)
          .add("window_end_s", DataTypes.LongType, false)
          .add("n", DataTypes.LongType, false)
          .add("fixed_sum", DataTypes.createDecimalType(38, Partials.SCALE), true)
          .add("n_fixed", DataTypes.LongType, false)
          .add("float_sum", DataTypes.DoubleType, false)
          .add("min", DataTypes.DoubleType, false)
          .add("max", DataTypes.DoubleType, false)
          .add("sketch", DataTypes.BinaryType, true);

  public static Dataset<Row> windowPartials(
      Dataset<Row> packs,
      long blockMicros,
      int sketchK,
      List<Selection> queries,
      LongAccumulator late,
      long delayMs,
      long graceMs) {
    return windowPartials(packs, blockMicros, sketchK, queries, late, delayMs, graceMs, null);
  }

  /** As above; {@code tags} (null: none) hands each micro-batch the driver's tag map. */
  public static Dataset<Row> windowPartials(
      Dataset<Row> packs,
      long blockMicros,
      int sketchK,
      List<Selection> queries,
      LongAccumulator late,
      long delayMs,
      long graceMs,
      TagsRef tags) {
    StructType schema = packs.schema();
    Summaries function =
        new Summaries(
            blockMicros,
            sketchK,
            queries,
            schema.fieldIndex("pack"),
            packs.isStreaming(),
            late,
            delayMs,
            graceMs,
            tags);
    return packs
        .groupBy("dedup_key")
        .as(Encoders.STRING(), Encoders.row(schema))
        .flatMapGroupsWithState(
            function,
            OutputMode.Append(),
            Encoders.BINARY(),
            Encoders.row(PARTIALS),
            GroupStateTimeout.EventTimeTimeout());
  }
}
