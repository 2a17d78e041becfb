package io.apm.aggregator;

import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * The entry point the PySpark plan calls (aggregator/plan.py, {@code window_partials}).
 *
 * <p>{@code samples} must have a watermark on {@code event_time} and the columns {@code
 * dedup_key} (string: "metric|server bucket|block"), {@code server}, {@code event_time}, {@code
 * ts} (seconds, a double) and {@code value}. The fewer columns, the cheaper: Spark turns every
 * input row into a Java object for the operator. The result has one row per (dedup key, query, window) that
 * a micro-batch's new samples touched: the partial summaries of {@link Partials#rows()}.
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
      Dataset<Row> samples, long blockMicros, int sketchK, List<Selection> queries) {
    StructType schema = samples.schema();
    int[] fields = {
      schema.fieldIndex("server"),
      schema.fieldIndex("event_time"),
      schema.fieldIndex("ts"),
      schema.fieldIndex("value"),
    };
    Summaries function =
        new Summaries(blockMicros, sketchK, queries, fields, samples.isStreaming());
    return samples
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
