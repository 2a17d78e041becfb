package io.apm.aggregator;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.BoundStatement;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.data.TupleValue;
import com.datastax.oss.driver.api.core.type.ListType;
import com.datastax.oss.driver.api.core.type.TupleType;
import io.apm.aggregator.store.CassandraSink;
import io.apm.aggregator.store.ResultWriter;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The rankings of the windows a task wrote ({@link ServerResults}): every window it touched of
 * a TOP/BOTTOM query is ranked again ({@link Ranking}) from every server's result of it, the
 * task's rows over a cache of recent windows in the executor JVM, and on a miss (a new JVM, a
 * window older than the cache, another executor's earlier batch) the window read from {@code
 * window_servers} before the task writes its rows ({@link #prefetch}). The ranking replaces the window's
 * previous one, written {@code USING TIMESTAMP} = its newest row's updated_at.
 */
final class WindowRanks {
  private WindowRanks() {}

  static final int MAX_CACHED_WINDOWS = 64;
  private static final long HOUR_MS = 3_600_000;

  // "query \t window start \t seconds" -> server -> its result, the recent windows, LRU.
  private static final Map<String, Map<String, Ranking.Entry>> WINDOWS =
      java.util.Collections.synchronizedMap(
          new LinkedHashMap<>(16, 0.75f, true) {
            private static final long serialVersionUID = 1L;

            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Map<String, Ranking.Entry>> e) {
              return size() > MAX_CACHED_WINDOWS;
            }
          });

  /**
   * Reads into the cache the windows of {@code keys} ("query \t window start \t seconds") it
   * does not hold, before the task writes its own rows of them ({@code readCql}: the window
   * read): every server's result from earlier batches.
   */
  static void prefetch(
      CqlSession session, Iterable<String> keys, String readCql, ServerResults.Counters counters) {
    PreparedStatement read = null;
    for (String key : keys) {
      if (WINDOWS.containsKey(key)) {
        continue;
      }
      if (read == null) {
        read = CassandraSink.prepare(session, readCql);
      }
      String[] parts = key.split("\t");
      WINDOWS.put(key, read(session, read, parts[0], Long.parseLong(parts[1])));
      counters.reads.add(1);
    }
  }

  /**
   * Ranks each window of {@code touched} (key "query \t window start \t seconds" -> the task's
   * rows of it, {@link #prefetch}ed) and queues its ranking on {@code writer}. {@code readCql}:
   * the window read, for a window evicted since the prefetch (then read after the task's rows
   * are written, which holds them too); {@code insertCql}: the rankings insert (its ranking
   * column's type is read from it).
   */
  static void rank(
      CqlSession session,
      ResultWriter writer,
      Map<String, Map<String, Ranking.Entry>> touched,
      Map<String, SeriesQuery> queries,
      String readCql,
      String insertCql,
      ServerResults.Counters counters) {
    if (touched.isEmpty()) {
      return;
    }
    TupleType entry = null;
    for (Map.Entry<String, Map<String, Ranking.Entry>> e : touched.entrySet()) {
      String[] parts = e.getKey().split("\t");
      String qid = parts[0];
      long start = Long.parseLong(parts[1]);
      int seconds = Integer.parseInt(parts[2]);
      SeriesQuery q = queries.get(qid);
      Map<String, Ranking.Entry> servers = WINDOWS.get(e.getKey());
      if (servers == null) { // evicted since the prefetch (a task of more than the cache's windows)
        servers = read(session, CassandraSink.prepare(session, readCql), qid, start);
        counters.reads.add(1);
        WINDOWS.put(e.getKey(), servers);
      }
      servers.putAll(e.getValue());
      List<Ranking.Entry> ranking = Ranking.rank(q, servers.values());
      if (ranking.isEmpty()) {
        continue;
      }
      if (entry == null) {
        ListType list =
            (ListType)
                CassandraSink.prepare(session, insertCql)
                    .getVariableDefinitions()
                    .get("ranking")
                    .getType();
        entry = (TupleType) list.getElementType();
      }
      List<TupleValue> cells = new ArrayList<>(ranking.size());
      long version = Long.MIN_VALUE;
      for (Ranking.Entry r : ranking) {
        cells.add(entry.newValue(r.server, r.values, r.samples, Instant.ofEpochMilli(r.updatedAtMs)));
        version = Math.max(version, r.updatedAtMs);
      }
      long ms = start * 1000;
      writer.add(
          "rankings",
          List.of(qid, Math.floorDiv(ms, HOUR_MS), ms),
          new Object[] {
            qid, (int) Math.floorDiv(ms, HOUR_MS), Instant.ofEpochMilli(ms), seconds, cells,
            Instant.ofEpochMilli(version), version * 1000
          });
      counters.ranked.add(1);
    }
  }

  private static Map<String, Ranking.Entry> read(
      CqlSession session, PreparedStatement read, String qid, long start) {
    Map<String, Ranking.Entry> servers = new LinkedHashMap<>();
    BoundStatement bound = read.bind(qid, Instant.ofEpochSecond(start)).setPageSize(5000);
    for (Row row : session.execute(bound)) {
      servers.put(
          row.getString(0),
          new Ranking.Entry(
              row.getString(0),
              row.getMap(1, String.class, Double.class),
              row.getLong(2),
              row.getInstant(3).toEpochMilli()));
    }
    return servers;
  }
}
