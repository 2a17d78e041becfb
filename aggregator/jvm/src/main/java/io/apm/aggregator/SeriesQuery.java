package io.apm.aggregator;

import java.io.Serializable;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * What the executors need of one {@code BY server} query to turn a window's summary into its
 * stored result and ranking: its functions (result key, operation, parameter) from the Python
 * catalogue ({@code apm.functions}, handed over by aggregator/server_writes.py, which checks that
 * every catalogue entry has an operation here), the percentile levels its summaries carry
 * ({@code quantiles.levels}), and its {@code TOP}/{@code BOTTOM} clause (n 0: none).
 */
public final class SeriesQuery implements Serializable {
  private static final long serialVersionUID = 1L;
  /** aggregator/evaluate.py's OVERFLOW_KEY: how many functions were left out as not finite. */
  public static final String OVERFLOW_KEY = "overflow";

  public final String queryId;
  final String[] keys;
  final String[] ops;
  final double[] params;
  final Map<Double, Integer> levels = new HashMap<>();
  public final int topN;
  public final String topKey;
  public final boolean bottom;

  public SeriesQuery(
      String queryId,
      List<String> keys,
      List<String> ops,
      List<Double> params,
      List<Double> levels,
      int topN,
      String topKey,
      boolean bottom) {
    if (keys.size() != ops.size() || keys.size() != params.size()) {
      throw new IllegalArgumentException("keys, ops and params must have one entry per function");
    }
    this.queryId = queryId;
    this.keys = keys.toArray(new String[0]);
    this.ops = ops.toArray(new String[0]);
    this.params = new double[params.size()];
    for (int i = 0; i < this.params.length; i++) {
      Double p = params.get(i);
      this.params[i] = p == null ? Double.NaN : p;
      if (!supports(this.ops[i])) {
        throw new IllegalArgumentException("no JVM operation for function " + this.ops[i]);
      }
    }
    for (int i = 0; i < levels.size(); i++) {
      this.levels.put(levels.get(i), i);
    }
    this.topN = topN;
    this.topKey = topKey;
    this.bottom = bottom;
  }

  /** Whether {@code op} is an operation {@link #values} knows. */
  public static boolean supports(String op) {
    switch (op) {
      case "min":
      case "max":
      case "avg":
      case "count":
      case "sum":
      case "percentile":
        return true;
      default:
        return false;
    }
  }

  /**
   * The result's values, as aggregator/evaluate.py's {@code to_results} computes them: each
   * function's value from the window's summary; one that is not finite is left out, told to
   * {@code overflowed} by its key, and counted under {@link #OVERFLOW_KEY}.
   */
  public Map<String, Double> values(
      long n, double sum, double min, double max, double[] percentiles, Consumer<String> overflowed) {
    Map<String, Double> out = new LinkedHashMap<>();
    int missing = 0;
    for (int i = 0; i < keys.length; i++) {
      double value;
      switch (ops[i]) {
        case "min":
          value = min;
          break;
        case "max":
          value = max;
          break;
        case "avg":
          value = sum / n;
          break;
        case "count":
          value = (double) n;
          break;
        case "sum":
          value = sum;
          break;
        default: // percentile
          Integer at = levels.get(params[i]);
          if (at == null || percentiles == null) {
            throw new IllegalStateException(
                "percentile " + params[i] + " was not computed for query " + queryId);
          }
          value = percentiles[at];
      }
      if (Double.isFinite(value)) {
        out.put(keys[i], value);
      } else {
        missing++;
        overflowed.accept(keys[i]);
      }
    }
    if (missing > 0) {
      out.put(OVERFLOW_KEY, (double) missing);
    }
    return out;
  }
}
