package io.apm.aggregator;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * Kafka record values ({@code tsv1}: {@code server<TAB>ts<TAB>value} lines, apm/wire.py) to one
 * row per sample, in one pass over each value's bytes (aggregator/records.py, {@code decode}).
 * Numbers of the ingest's form are read by {@link Digits}, without a {@code String}; the rest
 * by {@link #parseDouble}.
 *
 * <p>It replaces v3's SQL decode ({@code explode(split(cast(value AS STRING), '\n'))}, a second
 * {@code split} on TAB and two {@code try_cast}s), which built a string per line and an array
 * per line before it parsed anything. The result is the same row for row: a line is kept when it
 * has exactly three TAB-separated fields, its {@code ts} parses and its value parses and is
 * finite; the numbers are parsed as Spark's {@code try_cast(text AS double)} does ({@link
 * #parseDouble}); the server comes out as the line's bytes, which the plan casts to a string as
 * the SQL decode did (no UTF-8 validation either way).
 */
public final class Decode implements FlatMapFunction<Row, Row> {
  private static final long serialVersionUID = 1L;

  /** The input columns, in this order: metric (string), value (binary), arrival (double). */
  public static final StructType RECORDS =
      new StructType()
          .add("metric", DataTypes.StringType, true)
          .add("value", DataTypes.BinaryType, true)
          .add("arrival", DataTypes.DoubleType, true);

  /** One row per sample; the plan casts {@code server} to a string. */
  public static final StructType SAMPLES =
      new StructType()
          .add("metric", DataTypes.StringType, true)
          .add("server", DataTypes.BinaryType, false)
          .add("ts", DataTypes.DoubleType, false)
          .add("value", DataTypes.DoubleType, false)
          .add("arrival", DataTypes.DoubleType, true);

  private final Seen seen;

  /** A decode that tells no accumulator (the reference tests use it). */
  public Decode() {
    this(null);
  }

  private Decode(Seen seen) {
    this.seen = seen;
  }

  /** {@code records} with the columns of {@link #RECORDS} (in that order) to {@link #SAMPLES}. */
  public static Dataset<Row> samples(Dataset<Row> records) {
    return samples(records, null);
  }

  /**
   * The same, and each decoded sample also told to {@code seen} (a registered accumulator; null:
   * none), so that the newest times and skew counts need no second read of the records.
   */
  public static Dataset<Row> samples(Dataset<Row> records, Seen seen) {
    return records.flatMap(new Decode(seen), Encoders.row(SAMPLES));
  }

  @Override
  public Iterator<Row> call(Row record) {
    if (record.isNullAt(1)) {
      return java.util.Collections.emptyIterator();
    }
    Object metric = record.get(0);
    Object arrival = record.get(2);
    byte[] value = record.getAs(1);
    List<Row> out = new ArrayList<>();
    if (seen == null || metric == null) {
      lines(value, (server, ts, v, d) -> out.add(RowFactory.create(metric, server, ts, v, arrival)));
    } else {
      Seen.Metric slot = seen.metric((String) metric);
      double at = arrival == null ? Double.NaN : (Double) arrival;
      lines(
          value,
          (server, ts, v, d) -> {
            seen.sample(slot, server, ts, at);
            out.add(RowFactory.create(metric, server, ts, v, arrival));
          });
    }
    return out.iterator();
  }

  /**
   * What {@link #lines} hands over per kept line; {@code digits} is the value's text as {@link
   * Digits} read it ({@link Digits#NONE} if it is not a short plain decimal).
   */
  public interface Sink {
    void sample(byte[] server, double ts, double value, long digits);
  }

  /** Every kept line of one record value, in order; returns how many lines were kept. */
  public static int lines(byte[] value, Sink sink) {
    int kept = 0;
    int start = 0;
    int n = value.length;
    // split(..., '\n') keeps a trailing empty line, which has one field and is dropped.
    while (start <= n) {
      int end = start;
      while (end < n && value[end] != '\n') {
        end++;
      }
      if (line(value, start, end, sink)) {
        kept++;
      }
      start = end + 1;
    }
    return kept;
  }

  private static boolean line(byte[] b, int start, int end, Sink sink) {
    int tab1 = -1;
    int tab2 = -1;
    for (int i = start; i < end; i++) {
      if (b[i] == '\t') {
        if (tab1 < 0) {
          tab1 = i;
        } else if (tab2 < 0) {
          tab2 = i;
        } else {
          return false; // a fourth field
        }
      }
    }
    if (tab2 < 0) {
      return false;
    }
    long tsDigits = Digits.parse(b, tab1 + 1, tab2);
    double ts = tsDigits != Digits.NONE ? Digits.value(tsDigits) : parseDouble(b, tab1 + 1, tab2);
    if (Double.isNaN(ts) && !isNaNText(b, tab1 + 1, tab2)) {
      return false; // unparsable (a parsed NaN ts is kept, as try_cast kept it)
    }
    long digits = Digits.parse(b, tab2 + 1, end);
    double v = digits != Digits.NONE ? Digits.value(digits) : parseDouble(b, tab2 + 1, end);
    if (!(Math.abs(v) < Double.POSITIVE_INFINITY)) {
      return false; // unparsable, NaN or infinite
    }
    sink.sample(Arrays.copyOfRange(b, start, tab1), ts, v, digits);
    return true;
  }

  private static boolean isNaNText(byte[] b, int from, int to) {
    String s = text(b, from, to);
    return isNaN(s) || "nan".equals(s.trim().toLowerCase(Locale.ROOT));
  }

  private static boolean isNaN(String s) {
    try {
      return Double.isNaN(Double.parseDouble(s));
    } catch (NumberFormatException e) {
      return false;
    }
  }

  /**
   * The bytes {@code [from, to)} as Spark's {@code try_cast(text AS double)} reads them: Java's
   * {@code Double.parseDouble} of the text (which trims ASCII control characters and spaces and
   * also reads {@code Infinity}, {@code NaN}, hexadecimal and a trailing {@code d}/{@code f}),
   * else Spark's special literals ({@code inf}, {@code +inf}, {@code infinity}, {@code
   * +infinity}, their negatives, {@code nan}, any case, trimmed). NaN when neither reads it:
   * callers that must tell an unparsable text from "NaN" ask {@link #isNaNText}.
   */
  static double parseDouble(byte[] b, int from, int to) {
    String s = text(b, from, to);
    try {
      return Double.parseDouble(s);
    } catch (NumberFormatException e) {
      switch (s.trim().toLowerCase(Locale.ROOT)) {
        case "inf":
        case "+inf":
        case "infinity":
        case "+infinity":
          return Double.POSITIVE_INFINITY;
        case "-inf":
        case "-infinity":
          return Double.NEGATIVE_INFINITY;
        default:
          return Double.NaN;
      }
    }
  }

  /** ASCII (every number the ingest writes) without a decoder; anything else as Spark does. */
  private static String text(byte[] b, int from, int to) {
    for (int i = from; i < to; i++) {
      if (b[i] < 0) {
        return new String(b, from, to - from, StandardCharsets.UTF_8);
      }
    }
    return new String(b, from, to - from, StandardCharsets.ISO_8859_1);
  }
}
