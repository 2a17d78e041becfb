package io.apm.aggregator;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * One active query as the operator sees it: its index in the query table, its window, whether
 * it reads the sketch, whether it keeps one series per server ({@code BY server}), and its
 * server selection, split the way {@code plan.server_match}
 * splits it (all servers, exact names, name prefixes, a regex for the other globs). The test
 * is the one the SQL plan applies: {@code RLIKE} is {@link java.util.regex.Matcher#find()}.
 *
 * <p>Host tags (issue 37): {@code FROM key:glob} entries, {@code WHERE} conditions and {@code
 * BY key[, key]}, the rules of {@code apm.query_select.Selector} (the Python reference, which
 * tests/aggregator/test_tag_selection.py holds this class to): a server is selected when its name
 * or one FROM tag entry matches and every WHERE condition holds, a missing tag being "", and its
 * group is {@link #label} of its values for the BY keys. The tag regexes are {@code
 * apm.query_tags.TagGlob.regex} (unanchored: matched whole, {@link java.util.regex.Matcher#matches}).
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
  final boolean usesTags;
  private final String[] fromKeys; // FROM key:glob, one pattern per key (its globs' alternation)
  private final Pattern[] fromPatterns;
  private final String[] whereKeys; // WHERE: every condition must hold
  private final Pattern[] wherePatterns;
  final String[] groupBy; // BY keys, in order; empty: no tag grouping

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
    this(
        queryId,
        metric,
        windowSeconds,
        wantsSketch,
        sketchK,
        byServer,
        allServers,
        names,
        prefixes,
        regex,
        List.of(),
        List.of(),
        List.of(),
        List.of(),
        List.of());
  }

  /**
   * {@code sketchK}: the k of this query's sketches (quantiles.sketch_k; 0: the operator's);
   * {@code byServer}: one series per server; {@code fromKeys}/{@code fromRegexes}: the FROM
   * {@code key:glob} entries, {@code whereKeys}/{@code whereRegexes} the WHERE conditions (one
   * regex per entry), {@code groupBy} the BY keys.
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
      String regex,
      List<String> fromKeys,
      List<String> fromRegexes,
      List<String> whereKeys,
      List<String> whereRegexes,
      List<String> groupBy) {
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
    if (fromKeys.size() != fromRegexes.size() || whereKeys.size() != whereRegexes.size()) {
      throw new IllegalArgumentException("one regex per tag condition");
    }
    Map<String, List<String>> alternatives = new LinkedHashMap<>();
    for (int i = 0; i < fromKeys.size(); i++) {
      alternatives.computeIfAbsent(fromKeys.get(i), k -> new ArrayList<>()).add(fromRegexes.get(i));
    }
    this.fromKeys = alternatives.keySet().toArray(new String[0]);
    this.fromPatterns = new Pattern[this.fromKeys.length];
    for (int i = 0; i < this.fromKeys.length; i++) {
      String any = "(?:" + String.join("|", alternatives.get(this.fromKeys[i])) + ")";
      this.fromPatterns[i] = Pattern.compile(any);
    }
    this.whereKeys = whereKeys.toArray(new String[0]);
    this.wherePatterns = new Pattern[this.whereKeys.length];
    for (int i = 0; i < this.whereKeys.length; i++) {
      this.wherePatterns[i] = Pattern.compile(whereRegexes.get(i));
    }
    this.groupBy = groupBy.toArray(new String[0]);
    this.usesTags = this.fromKeys.length > 0 || this.whereKeys.length > 0 || this.groupBy.length > 0;
  }

  /** Whether the query selects {@code server} with these host tags (FROM and WHERE). */
  public boolean matches(String server, Map<String, String> tags) {
    boolean from = matches(server);
    for (int i = 0; !from && i < fromKeys.length; i++) {
      from = fromPatterns[i].matcher(tags.getOrDefault(fromKeys[i], "")).matches();
    }
    if (!from) {
      return false;
    }
    for (int i = 0; i < whereKeys.length; i++) {
      if (!wherePatterns[i].matcher(tags.getOrDefault(whereKeys[i], "")).matches()) {
        return false;
      }
    }
    return true;
  }

  /**
   * The series a selected server falls in: null when the query does not select it, "" for a
   * query's one series, the server for {@code BY server}, else {@link #label} of its BY values.
   */
  public String group(String server, Map<String, String> tags) {
    if (!matches(server, tags)) {
      return null;
    }
    if (byServer) {
      return server;
    }
    if (groupBy.length == 0) {
      return "";
    }
    String[] values = new String[groupBy.length];
    for (int i = 0; i < groupBy.length; i++) {
      values[i] = tags.getOrDefault(groupBy[i], "");
    }
    return label(groupBy, values);
  }

  /**
   * A group's name, stored where a {@code BY server} query stores the server (apm.query_select's
   * {@code group_label}): {@code key=value} per BY key, joined by ",", a value's "\" and ","
   * escaped by a "\". Never "" (it holds a key), never a server name (it holds "=").
   */
  public static String label(String[] keys, String[] values) {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < keys.length; i++) {
      if (i > 0) {
        out.append(',');
      }
      out.append(keys[i]).append('=');
      out.append(values[i].replace("\\", "\\\\").replace(",", "\\,"));
    }
    return out.toString();
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
