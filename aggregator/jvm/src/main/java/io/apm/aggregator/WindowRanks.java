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
 * window_servers}, after the task's rows were written. The ranking replaces the window's
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
   * Ranks each window of {@code touched} (key "query \t window start \t seconds" -> the task's
   * rows of it) and queues its ranking on {@code writer}. {@code readCql}: the window read;
   * {@code insertCql}: the rankings insert (its ranking column's type is read from it).
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
    PreparedStatement read = CassandraSink.prepare(session, readCql);
    TupleType entry = null;
    for (Map.Entry<String, Map<String, Ranking.Entry>> e : touched.entrySet()) {
      String[] parts = e.getKey().split("\t");
      String qid = parts[0];
      long start = Long.parseLong(parts[1]);
      int seconds = Integer.parseInt(parts[2]);
      SeriesQuery q = queries.get(qid);
      Map<String, Ranking.Entry> servers = WINDOWS.get(e.getKey());
      if (servers == null) {
        servers = read(session, read, qid, start);
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
