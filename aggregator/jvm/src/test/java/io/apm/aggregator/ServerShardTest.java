package io.apm.aggregator;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class ServerShardTest {
  @Test
  void agreesWithThePythonReaders() {
    // The same names and shards as tests/storage/test_server_tables.py.
    assertEquals(35, ServerShard.of("a1"));
    assertEquals(190, ServerShard.of("web-0001"));
    assertEquals(234, ServerShard.of("db-9999"));
    assertEquals(141, ServerShard.of("\u00e9-server"));
  }
}
