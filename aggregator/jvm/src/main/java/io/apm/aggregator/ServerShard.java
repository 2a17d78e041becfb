package io.apm.aggregator;

import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32;

/**
 * The shard of a server's series in {@code server_series}: CRC-32 of the server's UTF-8 name
 * modulo {@link #SHARDS}, as storage/server_tables.py's {@code server_shard} computes it (the
 * readers find a server's rows with the Python one, so the two must agree: ServerShardTest
 * checks the same names as tests/storage/test_server_tables.py).
 */
public final class ServerShard {
  private ServerShard() {}

  /** storage/server_tables.py's SERVER_SHARDS: part of the stored layout, not a setting. */
  public static final int SHARDS = 256;

  public static int of(String server) {
    CRC32 crc = new CRC32();
    crc.update(server.getBytes(StandardCharsets.UTF_8));
    return (int) (crc.getValue() % SHARDS);
  }
}
