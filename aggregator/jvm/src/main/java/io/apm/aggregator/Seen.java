package io.apm.aggregator;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import org.apache.spark.util.AccumulatorV2;

/**
 * Each server's and each metric's newest sample, and per metric the samples set aside for their
 * skew (aggregator/skew.py), gathered while {@link Decode} reads the windows stream's records:
 * v4's step e, "read every sample once" (docs/aggregator.md). Until v3 a second stream read and
 * decoded every record again for these figures.
 *
 * <p>An accumulator: each task fills its own copy, Spark merges the copies into the driver's
 * when the tasks end (before the batch's action returns), and the job takes the batch's figures
 * with {@link #drain}. A task that runs twice is merged twice: the newest times do not change,
 * the set-aside counts may (as a replayed batch recounted them in v3's second stream).
 *
 * <p>The rules are the servers stream's SQL ones, on the same samples: a sample is ahead when
 * it has an arrival and {@code ts > arrival + tolerance}, behind (backlog) when {@code ts <
 * arrival - delay}; the newest time counts the samples not ahead. A NaN {@code ts} compares as
 * Spark's does, above every number, so it is ahead when there is an arrival; without one it is
 * not recorded (Spark's max would have made the server's newest time NaN).
 */
public final class Seen extends AccumulatorV2<Object, String> {
  private static final long serialVersionUID = 1L;

  private final double toleranceS;
  private final double delayS;
  private HashMap<Name, double[]> servers = new HashMap<>();
  private HashMap<String, Metric> metrics = new HashMap<>();

  /** A server's name as its bytes (a key by content; task copies travel serialized). */
  static final class Name implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    final byte[] bytes;
    private final int hash;

    Name(byte[] bytes) {
      this.bytes = bytes;
      this.hash = Arrays.hashCode(bytes);
    }

    @Override
    public int hashCode() {
      return hash;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Name && Arrays.equals(bytes, ((Name) o).bytes);
    }
  }

  /** One metric's figures; {@link Decode} gets it once per record. */
  public static final class Metric implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    double newest = Double.NaN; // NaN: no sample on time yet
    long future;
    long backlog;
  }

  public Seen(double toleranceS, double delayS) {
    this.toleranceS = toleranceS;
    this.delayS = delayS;
  }

  /** The slot of {@code metric}, to hand to {@link #sample} for each of a record's samples. */
  public Metric metric(String metric) {
    return metrics.computeIfAbsent(metric, m -> new Metric());
  }

  /** One decoded sample of {@code slot}'s metric ({@code arrival} NaN: the record had none). */
  public void sample(Metric slot, byte[] server, double ts, double arrival) {
    boolean timed = !Double.isNaN(arrival);
    double t = Double.isNaN(ts) ? Double.POSITIVE_INFINITY : ts;
    if (timed && t > arrival + toleranceS) {
      slot.future++;
      return;
    }
    if (timed && t < arrival - delayS) {
      slot.backlog++;
    }
    if (Double.isNaN(ts)) {
      return;
    }
    if (!(ts <= slot.newest)) { // NaN newest: the first one
      slot.newest = ts;
    }
    double[] newest = servers.get(new Name(server));
    if (newest == null) {
      servers.put(new Name(server), new double[] {ts});
    } else if (ts > newest[0]) {
      newest[0] = ts;
    }
  }

  /**
   * The figures gathered since the last drain, as text, and forgets them: a line {@code
   * S<TAB>server<TAB>ts} per server and {@code M<TAB>metric<TAB>newest<TAB>future<TAB>backlog}
   * per metric ({@code newest} empty when none was on time). Server names hold no TAB or newline:
   * they are a {@code tsv1} line's first field.
   */
  public synchronized String drain() {
    StringBuilder out = new StringBuilder(servers.size() * 32 + metrics.size() * 48);
    for (Map.Entry<Name, double[]> e : servers.entrySet()) {
      out.append("S\t")
          .append(new String(e.getKey().bytes, StandardCharsets.UTF_8))
          .append('\t')
          .append(e.getValue()[0])
          .append('\n');
    }
    for (Map.Entry<String, Metric> e : metrics.entrySet()) {
      Metric m = e.getValue();
      out.append("M\t").append(e.getKey()).append('\t');
      if (!Double.isNaN(m.newest)) {
        out.append(m.newest);
      }
      out.append('\t').append(m.future).append('\t').append(m.backlog).append('\n');
    }
    reset();
    return out.toString();
  }

  @Override
  public synchronized boolean isZero() {
    return servers.isEmpty() && metrics.isEmpty();
  }

  @Override
  public synchronized Seen copy() {
    Seen c = new Seen(toleranceS, delayS);
    c.merge(this);
    return c;
  }

  @Override
  public synchronized void reset() {
    servers = new HashMap<>();
    metrics = new HashMap<>();
  }

  @Override
  public void add(Object v) {
    throw new UnsupportedOperationException("Seen takes samples through sample()");
  }

  @Override
  public synchronized void merge(AccumulatorV2<Object, String> other) {
    Seen o = (Seen) other;
    for (Map.Entry<Name, double[]> e : o.servers.entrySet()) {
      double[] mine = servers.get(e.getKey());
      if (mine == null) {
        servers.put(e.getKey(), new double[] {e.getValue()[0]});
      } else if (e.getValue()[0] > mine[0]) {
        mine[0] = e.getValue()[0];
      }
    }
    for (Map.Entry<String, Metric> e : o.metrics.entrySet()) {
      Metric theirs = e.getValue();
      Metric mine = metric(e.getKey());
      if (!Double.isNaN(theirs.newest) && !(theirs.newest <= mine.newest)) {
        mine.newest = theirs.newest;
      }
      mine.future += theirs.future;
      mine.backlog += theirs.backlog;
    }
  }

  /** Use {@link #drain}: it reads and forgets in one step, so no batch is reported twice. */
  @Override
  public synchronized String value() {
    return "Seen(" + servers.size() + " servers, " + metrics.size() + " metrics)";
  }
}
