package io.apm.aggregator;

import java.io.Serializable;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * One active query as the operator sees it: its index in the query table, its window, whether
 * it reads the sketch, whether it keeps one series per server ({@code BY server}), and its
 * server selection, split the way {@code plan.server_match}
 * splits it (all servers, exact names, name prefixes, a regex for the other globs). The test
 * is the one the SQL plan applies: {@code RLIKE} is {@link java.util.regex.Matcher#find()}.
 */
public final class Selection implements Serializable {
  private static final long serialVersionUID = 1L;

  final String queryId;
  final String metric;
  final int windowSeconds;
  final boolean wantsSketch;
  final int sketchK; // 0: the operator's
  final boolean byServer;
  private final boolean allServers;
  private final Set<String> names;
  private final String[] prefixes;
  private final Pattern regex;

  public Selection(
      String queryId,
      String metric,
      int windowSeconds,
      boolean wantsSketch,
      boolean allServers,
      List<String> names,
      List<String> prefixes,
      String regex) {
    this(queryId, metric, windowSeconds, wantsSketch, 0, false, allServers, names, prefixes, regex);
  }

  /**
   * {@code sketchK}: the k of this query's sketches (quantiles.sketch_k; 0: the operator's);
   * {@code byServer}: one series per server.
   */

  public Selection(
      String queryId,
      String metric,
      int windowSeconds,
      boolean wantsSketch,
      int sketchK,
      boolean byServer,
      boolean allServers,
      List<String> names,
      List<String> prefixes,
      String regex) {
    if (windowSeconds < 1) {
      throw new IllegalArgumentException("window of " + windowSeconds + " s");
    }
    this.queryId = queryId;
    this.metric = metric;
    this.windowSeconds = windowSeconds;
    this.wantsSketch = wantsSketch;
    this.sketchK = sketchK;
    this.byServer = byServer;
    this.allServers = allServers;
    this.names = new HashSet<>(names);
    this.prefixes = prefixes.toArray(new String[0]);
    this.regex = regex == null ? null : Pattern.compile(regex);
  }

  public boolean matches(String server) {
    if (allServers || names.contains(server)) {
      return true;
    }
    for (String prefix : prefixes) {
      if (server.startsWith(prefix)) {
        return true;
      }
    }
    return regex != null && regex.matcher(server).find();
  }
}
