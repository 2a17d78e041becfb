package io.apm.aggregator;

import com.datastax.oss.driver.api.core.CqlSession;
import io.apm.aggregator.store.CassandraSink;
import io.apm.aggregator.store.ResultWriter;
import io.apm.aggregator.store.Retry;
import java.io.Serializable;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.spark.api.java.function.ForeachPartitionFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.functions;
import org.apache.spark.util.LongAccumulator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Per-server results written where they are computed (issue 35): the evaluated window rows of
 * {@code BY server} queries (aggregator/evaluate.py's {@code evaluate}, the rows whose server is
 * not "") are turned into their stored results in the executors ({@link SeriesQuery#values}),
 * written to Cassandra with the Java driver ({@link ResultWriter} on a {@link CassandraSink}),
 * and every window they touched of a TOP/BOTTOM query is ranked again and its ranking written
 * ({@link WindowRanks}). Nothing per series reaches the Python driver: it gets the counts back
 * through accumulators.
 *
 * <p>The rows are repartitioned by (query, window), so one task holds every row of a window in
 * the batch. The CQL comes from storage/server_tables.py (one definition of the tables).
 */
public final class ServerResults {
  private ServerResults() {}

  private static final Logger LOG = LoggerFactory.getLogger(ServerResults.class);
  private static final long DAY_S = 86_400;
  private static final long INDEX_REFRESH_MS = 3_600_000;
  private static final int MAX_INDEXED = 200_000;

  // Per executor JVM: the index rows written in the last INDEX_REFRESH_MS (re-asserted after
  // that, as storage.schema does).
  private static final Map<List<Object>, Long> INDEXED = new ConcurrentHashMap<>();
  private static final ScheduledExecutorService RETRIES =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "apm-write-retries");
            t.setDaemon(true);
            return t;
          });

  /** The counters the Python job reads after the batch's action. */
  public static final class Counters implements Serializable {
    private static final long serialVersionUID = 1L;
    public final LongAccumulator written;
    public final LongAccumulator refused;
    public final LongAccumulator overflowed;
    public final LongAccumulator ranked;
    public final LongAccumulator retries;
    public final LongAccumulator reads;

    public Counters(
        LongAccumulator written,
        LongAccumulator refused,
        LongAccumulator overflowed,
        LongAccumulator ranked,
        LongAccumulator retries,
        LongAccumulator reads) {
      this.written = written;
      this.refused = refused;
      this.overflowed = overflowed;
      this.ranked = ranked;
      this.retries = retries;
      this.reads = reads;
    }
  }

  /**
   * Writes {@code rows} (columns query_id, server, window_seconds, window_start (seconds), n,
   * sum, min, max, percentiles) as stored results of {@code queries}, with updated_at
   * {@code updatedAtMs}. {@code conf}: the storage settings ({@link CassandraSink#session}) and
   * {@code concurrency}, {@code batch_rows}, {@code retry_ms}; {@code cql}: table -> its insert
   * (storage/server_tables.py's {@code server_inserts}).
   */
  public static void write(
      Dataset<org.apache.spark.sql.Row> rows,
      List<SeriesQuery> queries,
      Map<String, String> conf,
      Map<String, String> cql,
      long updatedAtMs,
      Counters counters) {
    Map<String, SeriesQuery> byId = new LinkedHashMap<>();
    for (SeriesQuery q : queries) {
      byId.put(q.queryId, q);
    }
    Map<String, String> confCopy = new LinkedHashMap<>(conf);
    Map<String, String> cqlCopy = new LinkedHashMap<>(cql);
    rows.repartition(functions.col("query_id"), functions.col("window_start"))
        .foreachPartition(new Task(byId, confCopy, cqlCopy, updatedAtMs, counters));
  }

  static final class Task implements ForeachPartitionFunction<org.apache.spark.sql.Row> {
    private static final long serialVersionUID = 1L;
    private final Map<String, SeriesQuery> queries;
    private final Map<String, String> conf;
    private final Map<String, String> cql;
    private final long updatedAtMs;
    private final Counters counters;

    Task(
        Map<String, SeriesQuery> queries,
        Map<String, String> conf,
        Map<String, String> cql,
        long updatedAtMs,
        Counters counters) {
      this.queries = queries;
      this.conf = conf;
      this.cql = cql;
      this.updatedAtMs = updatedAtMs;
      this.counters = counters;
    }

    @Override
    public void call(Iterator<org.apache.spark.sql.Row> rows) {
      if (!rows.hasNext()) {
        return;
      }
      CqlSession session = CassandraSink.session(conf);
      ResultWriter writer = writer(new CassandraSink(session, cql));
      Instant updated = Instant.ofEpochMilli(updatedAtMs);
      long stamp = updatedAtMs * 1000;
      Map<String, Map<String, Ranking.Entry>> touched = new LinkedHashMap<>();
      Map<String, Long> newest = new LinkedHashMap<>();
      // The task's writes wait until the windows it ranks that the JVM has not cached are read:
      // read before the task writes, a window new to everyone is an empty partition (read in a
      // millisecond), where after it, it would be the 10,000 rows just written.
      List<Object[]> pending = new ArrayList<>();
      while (rows.hasNext()) {
        org.apache.spark.sql.Row r = rows.next();
        String qid = r.getString(r.fieldIndex("query_id"));
        SeriesQuery q = queries.get(qid);
        if (q == null) {
          continue; // deleted or redefined since the batch was planned
        }
        String server = r.getString(r.fieldIndex("server"));
        int seconds = r.getInt(r.fieldIndex("window_seconds"));
        long start = r.getLong(r.fieldIndex("window_start"));
        long n = r.getLong(r.fieldIndex("n"));
        int pi = r.fieldIndex("percentiles");
        double[] percentiles = null;
        if (!r.isNullAt(pi)) {
          List<Double> ps = r.getList(pi);
          percentiles = new double[ps.size()];
          for (int i = 0; i < percentiles.length; i++) {
            percentiles[i] = ps.get(i);
          }
        }
        Map<String, Double> values =
            q.values(
                n,
                r.getDouble(r.fieldIndex("sum")),
                r.getDouble(r.fieldIndex("min")),
                r.getDouble(r.fieldIndex("max")),
                percentiles,
                key -> counters.overflowed.add(1));
        int day = (int) Math.floorDiv(start, DAY_S);
        int shard = ServerShard.of(server);
        Instant at = Instant.ofEpochSecond(start);
        // ~40 servers of a shard share a partition at 10,000 servers: their window goes as
        // one batch (one mutation) instead of one mutation a server.
        pending.add(
            new Object[] {
              "server_series",
              List.of(qid, day, shard),
              new Object[] {qid, day, shard, server, at, seconds, values, n, updated, stamp}
            });
        pending.add(
            new Object[] {
              "window_servers",
              List.of(qid, start),
              new Object[] {qid, at, server, seconds, values, n, updated, stamp}
            });
        index(pending, List.of("server_buckets", qid, day), new Object[] {qid, day});
        index(pending, List.of("result_servers", qid, day, server), new Object[] {qid, day, server});
        newest.merge(qid, updatedAtMs, Math::max);
        if (q.topN > 0) {
          touched
              .computeIfAbsent(qid + '\t' + start + '\t' + seconds, k -> new LinkedHashMap<>())
              .put(server, new Ranking.Entry(server, values, n, updatedAtMs));
        }
      }
      WindowRanks.prefetch(session, touched.keySet(), cql.get("read_window"), counters);
      for (Object[] p : pending) {
        @SuppressWarnings("unchecked")
        List<Object> partition = (List<Object>) p[1];
        writer.add((String) p[0], partition, (Object[]) p[2]);
      }
      newest.forEach(
          (qid, ms) ->
              writer.add("newest", List.of(qid), new Object[] {ms * 1000, Instant.ofEpochMilli(ms), qid}));
      writer.flush(); // the results before their rankings: a ranking never names unwritten rows
      WindowRanks.rank(
          session, writer, touched, queries, cql.get("read_window"), cql.get("rankings"), counters);
      writer.flush();
      counters.written.add(writer.rows());
      counters.refused.add(writer.refused());
      counters.retries.add(writer.retries());
    }

    private ResultWriter writer(CassandraSink sink) {
      long deadline = Long.parseLong(conf.getOrDefault("retry_ms", "60000"));
      return new ResultWriter(
          sink,
          Integer.parseInt(conf.getOrDefault("concurrency", "64")),
          Integer.parseInt(conf.getOrDefault("batch_rows", "32")),
          Retry.standard(deadline),
          (task, delay) -> RETRIES.schedule(task, delay, TimeUnit.MILLISECONDS),
          row -> LOG.error("storage refused a result, set aside: {}", Arrays.toString(row)));
    }

    private void index(List<Object[]> pending, List<Object> key, Object[] row) {
      long now = System.currentTimeMillis();
      Long last = INDEXED.get(key);
      if (last != null && now - last < INDEX_REFRESH_MS) {
        return;
      }
      if (INDEXED.size() > MAX_INDEXED) {
        INDEXED.clear();
      }
      INDEXED.put(key, now);
      String table = (String) key.get(0);
      pending.add(
          new Object[] {
            table, key.subList(1, key.size() - (table.equals("result_servers") ? 1 : 0)), row
          });
    }

  }
}
