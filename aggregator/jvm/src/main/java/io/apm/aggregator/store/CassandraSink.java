package io.apm.aggregator.store;

import com.datastax.oss.driver.api.core.AllNodesFailedException;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DefaultConsistencyLevel;
import com.datastax.oss.driver.api.core.DriverTimeoutException;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import com.datastax.oss.driver.api.core.connection.BusyConnectionException;
import com.datastax.oss.driver.api.core.connection.ClosedConnectionException;
import com.datastax.oss.driver.api.core.connection.HeartbeatException;
import com.datastax.oss.driver.api.core.cql.BatchStatement;
import com.datastax.oss.driver.api.core.cql.BatchStatementBuilder;
import com.datastax.oss.driver.api.core.cql.BoundStatement;
import com.datastax.oss.driver.api.core.cql.DefaultBatchType;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.servererrors.BootstrappingException;
import com.datastax.oss.driver.api.core.servererrors.OverloadedException;
import com.datastax.oss.driver.api.core.servererrors.QueryConsistencyException;
import com.datastax.oss.driver.api.core.servererrors.UnavailableException;
import com.datastax.oss.driver.api.core.ssl.ProgrammaticSslEngineFactory;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import javax.net.ssl.SSLContext;

/**
 * {@link WriteSink} on a real Cassandra through the Apache Cassandra Java driver: each table's
 * insert prepared once, a partition's rows sent as one unlogged batch (one row: one statement),
 * every statement idempotent (keyed and {@code USING TIMESTAMP}). The same transient failures
 * as the Python side's {@code storage.errors.is_transient}: timeouts, unavailable, overloaded,
 * bootstrapping, no node, a broken connection.
 *
 * <p>One session per executor JVM and storage configuration ({@link #session}), kept for the
 * JVM's life: opening one takes about a second, a micro-batch's writes a few milliseconds.
 */
public final class CassandraSink implements WriteSink {
  private static final Map<String, CqlSession> SESSIONS = new ConcurrentHashMap<>();

  private final CqlSession session;
  private final Map<String, PreparedStatement> inserts;

  public CassandraSink(CqlSession session, Map<String, String> insertCql) {
    this.session = session;
    this.inserts = new ConcurrentHashMap<>();
    insertCql.forEach((table, cql) -> inserts.put(table, prepare(session, cql)));
  }

  public static PreparedStatement prepare(CqlSession session, String cql) {
    return session.prepare(
        com.datastax.oss.driver.api.core.cql.SimpleStatement.newInstance(cql).setIdempotent(true));
  }

  public CqlSession session() {
    return session;
  }

  /**
   * The executor JVM's session for {@code conf}: hosts (comma-separated), port, keyspace,
   * request_timeout_s, connect_timeout_s, protocol_version (3-6), local_dc (optional: inferred
   * from the contact points when absent); tls ("true": every connection over TLS), tls_ca,
   * tls_cert, tls_key (PEM files, {@link PemTls}) and tls_check_hostname ("false" turns the
   * host name check off), as the Python driver's StorageSettings.
   */
  public static CqlSession session(Map<String, String> conf) {
    String key = new java.util.TreeMap<>(conf).toString();
    return SESSIONS.computeIfAbsent(key, k -> open(conf));
  }

  private static CqlSession open(Map<String, String> conf) {
    int port = Integer.parseInt(conf.getOrDefault("port", "9042"));
    List<InetSocketAddress> points = new ArrayList<>();
    for (String host : conf.getOrDefault("hosts", "127.0.0.1").split(",")) {
      if (!host.isBlank()) {
        points.add(new InetSocketAddress(host.strip(), port));
      }
    }
    double timeout = Double.parseDouble(conf.getOrDefault("request_timeout_s", "20"));
    double connect = Double.parseDouble(conf.getOrDefault("connect_timeout_s", "10"));
    String protocol = "V" + conf.getOrDefault("protocol_version", "5");
    var config =
        DriverConfigLoader.programmaticBuilder()
            .withDuration(DefaultDriverOption.REQUEST_TIMEOUT, Duration.ofMillis((long) (timeout * 1000)))
            .withDuration(DefaultDriverOption.CONNECTION_CONNECT_TIMEOUT, Duration.ofMillis((long) (connect * 1000)))
            .withDuration(DefaultDriverOption.CONNECTION_INIT_QUERY_TIMEOUT, Duration.ofMillis((long) (connect * 1000)))
            // LOCAL_QUORUM, as the Python side: reads and writes stay consistent at any RF.
            .withString(DefaultDriverOption.REQUEST_CONSISTENCY, DefaultConsistencyLevel.LOCAL_QUORUM.name())
            .withString(DefaultDriverOption.PROTOCOL_VERSION, protocol)
            .withString(
                DefaultDriverOption.LOAD_BALANCING_POLICY_CLASS, "DcInferringLoadBalancingPolicy")
            .withInt(DefaultDriverOption.CONNECTION_MAX_REQUESTS, 1024)
            .build();
    var builder = CqlSession.builder().addContactPoints(points).withConfigLoader(config);
    if ("true".equals(conf.get("tls"))) {
      SSLContext context =
          PemTls.context(conf.get("tls_ca"), conf.get("tls_cert"), conf.get("tls_key"));
      boolean checkHost = !"false".equals(conf.get("tls_check_hostname"));
      builder = builder.withSslEngineFactory(new ProgrammaticSslEngineFactory(context, null, checkHost));
    }
    String dc = conf.get("local_dc");
    if (dc != null && !dc.isBlank()) {
      builder = builder.withLocalDatacenter(dc);
    }
    CqlSession session = builder.build();
    Runtime.getRuntime().addShutdownHook(new Thread(session::close, "apm-cassandra-close"));
    return session;
  }

  @Override
  public CompletionStage<Void> write(String table, List<Object[]> rows) {
    PreparedStatement insert = inserts.get(table);
    if (insert == null) {
      throw new IllegalArgumentException("no insert prepared for table " + table);
    }
    if (rows.size() == 1) {
      return session.executeAsync(insert.bind(rows.get(0)).setIdempotent(true)).thenApply(rs -> null);
    }
    BatchStatementBuilder batch = BatchStatement.builder(DefaultBatchType.UNLOGGED);
    for (Object[] row : rows) {
      BoundStatement bound = insert.bind(row);
      batch.addStatement(bound);
    }
    return session.executeAsync(batch.setIdempotence(true).build()).thenApply(rs -> null);
  }

  @Override
  public boolean isTransient(Throwable failure) {
    return failure instanceof DriverTimeoutException
        || failure instanceof QueryConsistencyException // read/write timeouts and failures
        || failure instanceof UnavailableException
        || failure instanceof OverloadedException
        || failure instanceof BootstrappingException
        || failure instanceof AllNodesFailedException // NoNodeAvailableException too
        || failure instanceof ClosedConnectionException
        || failure instanceof HeartbeatException
        || failure instanceof BusyConnectionException;
  }
}
