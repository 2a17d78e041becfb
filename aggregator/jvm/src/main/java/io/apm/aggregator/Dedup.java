package io.apm.aggregator;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.types.StructType;

/**
 * The entry point the PySpark plan calls (aggregator/plan.py, {@code dedup_samples}).
 *
 * <p>{@code samples} must have a watermark, a string column {@code dedup_key} naming the key
 * (metric, server bucket, time block), {@code server} and {@code ts_us} (the event time in
 * microseconds). The result has the same columns and holds the first copy of each
 * (dedup_key, server, ts_us); its rows carry no watermark mark, so the caller sets the same
 * watermark again on the way out.
 */
public final class Dedup {
  private Dedup() {}

  public static Dataset<Row> firstCopies(Dataset<Row> samples, long blockMicros) {
    StructType schema = samples.schema();
    FirstCopies function =
        new FirstCopies(blockMicros, schema.fieldIndex("server"), schema.fieldIndex("ts_us"),
            samples.isStreaming());
    return samples
        .groupBy("dedup_key")
        .as(Encoders.STRING(), Encoders.row(schema))
        .flatMapGroupsWithState(
            function,
            OutputMode.Append(),
            Encoders.BINARY(),
            Encoders.row(schema),
            GroupStateTimeout.EventTimeTimeout());
  }
}
