package io.apm.aggregator;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The top-N of one window of a {@code BY server ... TOP|BOTTOM n BY f} query: the rule of
 * {@code apm.ranking.rank}, which stays the reference (tests/aggregator/test_server_writes.py
 * holds this to it on random windows). Servers ordered by f (highest first for TOP), equal
 * values by server name; a server without a finite f is not ranked; the rest fold into one
 * {@link #OTHERS} row with the functions that fold exactly (count and sum by an exact sum, as
 * Python's {@code math.fsum}; min; max; avg weighted by samples); a fold that leaves the double
 * range is left out.
 */
public final class Ranking {
  private Ranking() {}

  /** apm.ranking.OTHERS: not a server name. */
  public static final String OTHERS = "(others)";

  /** One server's result of the window, or a row of a ranking. */
  public static final class Entry {
    public final String server;
    public final Map<String, Double> values;
    public final long samples;
    public final long updatedAtMs;

    public Entry(String server, Map<String, Double> values, long samples, long updatedAtMs) {
      this.server = server;
      this.values = values;
      this.samples = samples;
      this.updatedAtMs = updatedAtMs;
    }
  }

  /**
   * The ranking (rank 1 first, then {@link #OTHERS} if any server is left over) of one window
   * from every server's result of it, in the order given (that order only matters to which of
   * -0.0 and 0.0 a min or max of "others" is, as in Python).
   */
  public static List<Entry> rank(SeriesQuery query, Collection<Entry> rows) {
    List<Entry> out = new ArrayList<>();
    if (query.topN <= 0 || rows.isEmpty()) {
      return out;
    }
    String key = query.topKey;
    double sign = query.bottom ? 1.0 : -1.0;
    List<Entry> ranked = new ArrayList<>();
    for (Entry r : rows) {
      Double v = r.values.get(key);
      if (v != null && Double.isFinite(v)) {
        ranked.add(r);
      }
    }
    ranked.sort(
        (a, b) -> {
          double x = sign * a.values.get(key);
          double y = sign * b.values.get(key);
          if (x < y) {
            return -1;
          }
          if (x > y) {
            return 1;
          }
          return a.server.compareTo(b.server);
        });
    List<Entry> head = ranked.subList(0, Math.min(query.topN, ranked.size()));
    Set<String> chosen = new HashSet<>();
    long updated = Long.MIN_VALUE;
    for (Entry r : rows) {
      updated = Math.max(updated, r.updatedAtMs);
    }
    for (Entry r : head) {
      chosen.add(r.server);
      out.add(r);
    }
    List<Entry> rest = new ArrayList<>();
    for (Entry r : rows) {
      if (!chosen.contains(r.server)) {
        rest.add(r);
      }
    }
    if (!rest.isEmpty()) {
      long samples = 0;
      for (Entry r : rest) {
        samples += r.samples;
      }
      out.add(new Entry(OTHERS, fold(query, rest), samples, updated));
    }
    return out;
  }

  private static Map<String, Double> fold(SeriesQuery query, List<Entry> rest) {
    Map<String, Double> out = new LinkedHashMap<>();
    long total = 0;
    for (Entry r : rest) {
      total += r.samples;
    }
    for (int f = 0; f < query.keys.length; f++) {
      String fkey = query.keys[f];
      double[] vals = new double[rest.size()];
      boolean all = true;
      for (int i = 0; i < vals.length; i++) {
        Double v = rest.get(i).values.get(fkey);
        if (v == null || !Double.isFinite(v)) {
          all = false;
          break;
        }
        vals[i] = v;
      }
      if (!all) {
        continue;
      }
      Double folded;
      switch (query.ops[f]) {
        case "count":
        case "sum":
          folded = fsum(vals);
          break;
        case "min":
          folded = vals[0];
          for (double v : vals) {
            if (v < folded) {
              folded = v;
            }
          }
          break;
        case "max":
          folded = vals[0];
          for (double v : vals) {
            if (v > folded) {
              folded = v;
            }
          }
          break;
        case "avg":
          if (total <= 0) {
            continue;
          }
          double[] terms = new double[vals.length];
          for (int i = 0; i < vals.length; i++) {
            terms[i] = vals[i] * rest.get(i).samples / total;
          }
          folded = fsum(terms);
          break;
        default:
          continue;
      }
      if (folded != null && Double.isFinite(folded)) {
        out.put(fkey, folded);
      }
    }
    return out;
  }

  /**
   * Python's {@code math.fsum} of finite values (Shewchuk's exact partials, rounded half-even
   * as CPython does), or null where CPython raises OverflowError (an intermediate sum left the
   * double range).
   */
  public static Double fsum(double[] values) {
    double[] partials = new double[Math.max(8, values.length + 1)];
    int n = 0;
    for (double value : values) {
      double x = value;
      int i = 0;
      for (int j = 0; j < n; j++) {
        double y = partials[j];
        if (Math.abs(x) < Math.abs(y)) {
          double t = x;
          x = y;
          y = t;
        }
        double hi = x + y;
        double lo = y - (hi - x);
        if (lo != 0.0) {
          partials[i++] = lo;
        }
        x = hi;
      }
      n = i;
      if (x != 0.0) {
        if (!Double.isFinite(x)) {
          return null; // CPython: "intermediate overflow in fsum"
        }
        if (n == partials.length) {
          partials = java.util.Arrays.copyOf(partials, 2 * n);
        }
        partials[n++] = x;
      }
    }
    double hi = 0.0;
    if (n > 0) {
      hi = partials[--n];
      double lo = 0.0;
      while (n > 0) {
        double x = hi;
        double y = partials[--n];
        hi = x + y;
        double yr = hi - x;
        lo = y - yr;
        if (lo != 0.0) {
          break;
        }
      }
      if (n > 0 && ((lo < 0.0 && partials[n - 1] < 0.0) || (lo > 0.0 && partials[n - 1] > 0.0))) {
        double y = lo * 2.0;
        double x = hi + y;
        double yr = x - hi;
        if (y == yr) {
          hi = x;
        }
      }
    }
    return hi;
  }
}
