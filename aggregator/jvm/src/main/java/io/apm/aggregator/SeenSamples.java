package io.apm.aggregator;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * The samples one dedup key has seen: for each server, the sorted set of its samples' offsets
 * (microseconds) from the start of the key's time block. Exact: servers are compared as
 * strings and offsets at the microsecond precision of Spark's timestamps, so two samples are
 * the same only if their (server, ts) are.
 *
 * <p>It is the value of one state-store row, read and written once per key and micro-batch,
 * so its cost is a decode and an encode of a few thousand entries instead of a RocksDB get and
 * put per sample. The encoding is compact (server name once, offsets as varint deltas): about
 * two bytes a sample for a 1 Hz series.
 */
public final class SeenSamples {
  private static final byte VERSION = 1;

  private final HashMap<String, Offsets> servers;

  public SeenSamples() {
    this(new HashMap<>());
  }

  private SeenSamples(HashMap<String, Offsets> servers) {
    this.servers = servers;
  }

  /** Records (server, offset); true if it was not seen before. */
  public boolean add(String server, int offsetMicros) {
    if (offsetMicros < 0) {
      throw new IllegalArgumentException("negative offset " + offsetMicros);
    }
    return servers.computeIfAbsent(server, s -> new Offsets()).add(offsetMicros);
  }

  public boolean contains(String server, int offsetMicros) {
    Offsets offsets = servers.get(server);
    return offsets != null && offsets.indexOf(offsetMicros) >= 0;
  }

  /** The number of distinct samples held. */
  public long size() {
    long n = 0;
    for (Offsets o : servers.values()) {
      n += o.size;
    }
    return n;
  }

  public byte[] encode() {
    Output out = new Output((int) Math.min(Integer.MAX_VALUE - 64, 16 + 3 * size()));
    out.write(VERSION);
    out.varint(servers.size());
    for (Map.Entry<String, Offsets> entry : servers.entrySet()) {
      byte[] name = entry.getKey().getBytes(StandardCharsets.UTF_8);
      out.varint(name.length);
      out.write(name, 0, name.length);
      Offsets offsets = entry.getValue();
      out.varint(offsets.size);
      int previous = 0;
      for (int i = 0; i < offsets.size; i++) {
        out.varint(offsets.values[i] - previous); // strictly increasing: deltas are >= 0
        previous = offsets.values[i];
      }
    }
    return out.toByteArray();
  }

  public static SeenSamples decode(byte[] bytes) {
    Input in = new Input(bytes);
    int version = in.read();
    if (version != VERSION) {
      throw new IllegalStateException("unknown SeenSamples encoding version " + version);
    }
    int count = in.varint();
    HashMap<String, Offsets> servers = new HashMap<>(Math.max(16, count * 2));
    for (int s = 0; s < count; s++) {
      int length = in.varint();
      String name = new String(bytes, in.skip(length), length, StandardCharsets.UTF_8);
      int n = in.varint();
      Offsets offsets = new Offsets(Math.max(4, n + 4));
      int value = 0;
      for (int i = 0; i < n; i++) {
        value += in.varint();
        offsets.values[i] = value;
      }
      offsets.size = n;
      servers.put(name, offsets);
    }
    if (in.position != bytes.length) {
      throw new IllegalStateException("SeenSamples: " + (bytes.length - in.position) + " bytes left over");
    }
    return new SeenSamples(servers);
  }

  /** A sorted set of ints: a 1 Hz series has a handful per block, so insertion by shifting is cheap. */
  private static final class Offsets {
    int[] values;
    int size;

    Offsets() {
      this(4);
    }

    Offsets(int capacity) {
      values = new int[capacity];
    }

    int indexOf(int value) {
      // Samples mostly arrive in time order: check the end first.
      if (size > 0 && values[size - 1] < value) {
        return -(size + 1);
      }
      return Arrays.binarySearch(values, 0, size, value);
    }

    boolean add(int value) {
      int at = indexOf(value);
      if (at >= 0) {
        return false;
      }
      at = -(at + 1);
      if (size == values.length) {
        values = Arrays.copyOf(values, size * 2);
      }
      System.arraycopy(values, at, values, at + 1, size - at);
      values[at] = value;
      size++;
      return true;
    }
  }

  private static final class Output extends ByteArrayOutputStream {
    Output(int capacity) {
      super(capacity);
    }

    void varint(int value) {
      while ((value & ~0x7F) != 0) {
        write((value & 0x7F) | 0x80);
        value >>>= 7;
      }
      write(value);
    }
  }

  private static final class Input {
    final byte[] bytes;
    int position;

    Input(byte[] bytes) {
      this.bytes = bytes;
    }

    int read() {
      if (position >= bytes.length) {
        throw new IllegalStateException("SeenSamples: truncated");
      }
      return bytes[position++] & 0xFF;
    }

    int skip(int length) {
      if (length < 0 || position + length > bytes.length) {
        throw new IllegalStateException("SeenSamples: truncated");
      }
      int start = position;
      position += length;
      return start;
    }

    int varint() {
      int value = 0;
      for (int shift = 0; shift < 35; shift += 7) {
        int b = read();
        value |= (b & 0x7F) << shift;
        if ((b & 0x80) == 0) {
          return value;
        }
      }
      throw new IllegalStateException("SeenSamples: bad varint");
    }
  }
}
