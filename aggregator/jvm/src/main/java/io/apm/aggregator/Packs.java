package io.apm.aggregator;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.catalyst.expressions.XXH64;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;

/**
 * Kafka records to packs: one row per (record, dedup key) carrying that record's samples under
 * the key as one {@link Pack}, instead of one row per sample (v4's step b, docs/aggregator.md).
 * Spark shuffles, sorts and converts rows one by one; a record of the ingest holds hundreds of
 * samples of one metric, so the rows that cross the shuffle into the operator drop by that
 * factor.
 *
 * <p>Per line it does what the plan did per sample row before: {@link Decode}'s parse (the same
 * lines kept), {@link Seen} told of every parsed sample, the samples ahead of their arrival by
 * more than the tolerance set aside (aggregator/skew.py's {@code on_time}), the event time as
 * Spark's {@code timestamp_seconds(ts)} (microseconds, truncated, saturated), and the dedup key
 * as the plan's SQL built it: {@code metric|pmod(xxhash64(server), buckets)|floor(micros /
 * block)}. The key is the operator's state key, so it must stay byte for byte what v3 wrote
 * (tests/aggregator/test_records.py holds the two equal). A line whose {@code ts} is NaN has no
 * event time and no key: it is dropped like an unparsable line.
 */
public final class Packs implements FlatMapFunction<Row, Row> {
  private static final long serialVersionUID = 1L;
  private static final long SEED = 42L; // Spark's xxhash64 seed

  /** One row per (record, dedup key). */
  public static final StructType PACKS =
      new StructType()
          .add("dedup_key", DataTypes.StringType, false)
          .add("event_us", DataTypes.LongType, false)
          .add("pack", DataTypes.BinaryType, false);

  private final Seen seen;
  private final double toleranceS;
  private final int buckets;
  private final long blockMicros;

  /**
   * {@code toleranceS}: how far ahead of its arrival a sample may be (NaN: no limit); {@code
   * seen}: null for none.
   */
  public Packs(Seen seen, double toleranceS, int buckets, long blockMicros) {
    if (buckets <= 0 || blockMicros <= 0) {
      throw new IllegalArgumentException("buckets and block must be positive");
    }
    this.seen = seen;
    this.toleranceS = toleranceS;
    this.buckets = buckets;
    this.blockMicros = blockMicros;
  }

  /** {@code records} with the columns of {@link Decode#RECORDS} (in that order) to {@link #PACKS}. */
  public static Dataset<Row> packs(
      Dataset<Row> records, Seen seen, double toleranceS, int buckets, long blockMicros) {
    return records.flatMap(new Packs(seen, toleranceS, buckets, blockMicros), Encoders.row(PACKS));
  }

  /** Spark's {@code pmod(xxhash64(cast(server AS STRING)), buckets)}. */
  public long bucket(byte[] server) {
    long hash = XXH64.hashUnsafeBytes(server, Platform.BYTE_ARRAY_OFFSET, server.length, SEED);
    return Math.floorMod(hash, (long) buckets);
  }

  /** Spark's {@code unix_micros(timestamp_seconds(ts))} (NaN has none: not called with it). */
  public static long micros(double ts) {
    return (long) (ts * 1_000_000.0);
  }

  /** Spark's {@code floor(micros / block)} of the plan's SQL (a double division). */
  public long block(long micros) {
    return (long) Math.floor((double) micros / (double) blockMicros);
  }

  @Override
  public Iterator<Row> call(Row record) {
    if (record.isNullAt(1) || record.isNullAt(0)) {
      return Collections.emptyIterator();
    }
    String metric = record.getString(0);
    Object arrival = record.get(2);
    double at = arrival == null ? Double.NaN : (Double) arrival;
    Seen.Metric slot = seen == null ? null : seen.metric(metric);
    // A record of the ingest spans about a second, so one block: its packs sit in an array by
    // bucket; a sample of any other block goes through the map.
    long[] firstBlock = {Long.MIN_VALUE};
    Pack.Builder[] inFirst = new Pack.Builder[buckets];
    HashMap<Long, Pack.Builder> byKey = new HashMap<>();
    List<long[]> keys = new ArrayList<>(); // (bucket, block, map key) in first-seen order
    Decode.lines(
        record.getAs(1),
        (server, ts, value, digits) -> {
          if (slot != null) {
            seen.sample(slot, server, ts, at);
          }
          // skew.on_time: arrival known and ts > arrival + tolerance -> set aside.
          if (Double.isNaN(ts) || (arrival != null && ts > at + toleranceS)) {
            return;
          }
          long micros = micros(ts);
          long bucket = bucket(server);
          long block = block(micros);
          if (firstBlock[0] == Long.MIN_VALUE) {
            firstBlock[0] = block;
          }
          Pack.Builder pack;
          if (block == firstBlock[0]) {
            pack = inFirst[(int) bucket];
            if (pack == null) {
              pack = new Pack.Builder();
              inFirst[(int) bucket] = pack;
              keys.add(new long[] {bucket, block, 0L});
            }
          } else {
            // Distinct per (block, bucket), as bucket < buckets; mixed so that HashMap spreads.
            Long key = Spread.mix(block * buckets + bucket);
            pack = byKey.get(key);
            if (pack == null) {
              pack = new Pack.Builder();
              byKey.put(key, pack);
              keys.add(new long[] {bucket, block, key});
            }
          }
          pack.add(server, micros, ts, value, digits);
        });
    List<Row> out = new ArrayList<>(keys.size());
    for (long[] k : keys) {
      Pack.Builder pack = k[1] == firstBlock[0] ? inFirst[(int) k[0]] : byKey.get(k[2]);
      String dedupKey = metric + "|" + k[0] + "|" + k[1];
      out.add(RowFactory.create(dedupKey, pack.newest(), pack.bytes()));
    }
    return out.iterator();
  }
}
