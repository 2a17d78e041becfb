package io.apm.aggregator;

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
 *
 * <p>An insert costs amortised O(1) plus an O(log n) search whatever the arrival order (v4; v3
 * was O(n) per out-of-order insert). The encoded layout (version 1) is v3's, byte for byte, so a
 * v3 checkpoint's state is read as it is (SeenSamplesTest holds v3-written bytes).
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
    return offsets != null && offsets.contains(offsetMicros);
  }

  /** The number of distinct samples held. */
  public long size() {
    long n = 0;
    for (Offsets o : servers.values()) {
      n += o.count();
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
      offsets.flush(); // the encoding holds one sorted run per server, as in v3
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

  /**
   * A set of non-negative ints in two parts: a sorted array ({@code values[0, size)}) and a small
   * open-addressing hash set of the values that did not arrive in ascending order ({@code
   * pending}). Samples mostly arrive in time order and append at the end in O(1); any other value
   * goes to {@code pending} in O(1), and {@code pending} is sorted and merged (in place, from the
   * back) into the array when it reaches an eighth of it, so an insert costs amortised O(1) plus
   * O(log n) for the search, whatever the order (v3 shifted the array per insert: O(n) each,
   * O(n^2) for a descending run). Memory while a key is decoded: the array (doubling, as in v3)
   * plus a pending table of at most about size/2 ints; the encoded state is unchanged.
   */
  private static final class Offsets {
    private static final int EMPTY = -1; // offsets are >= 0
    private static final int MIN_PENDING = 32;
    private static final int SEED = java.util.concurrent.ThreadLocalRandom.current().nextInt();

    int[] values;
    int size;
    private int[] pending; // null until a value arrives out of order
    private int pendingSize;

    Offsets() {
      this(4);
    }

    Offsets(int capacity) {
      values = new int[capacity];
    }

    int count() {
      return size + pendingSize;
    }

    boolean contains(int value) {
      return Arrays.binarySearch(values, 0, size, value) >= 0 || pendingContains(value);
    }

    boolean add(int value) {
      if (pendingSize == 0 && (size == 0 || values[size - 1] < value)) {
        append(value); // the common case: time order
        return true;
      }
      if (Arrays.binarySearch(values, 0, size, value) >= 0 || !pendingAdd(value)) {
        return false;
      }
      if (pendingSize >= Math.max(MIN_PENDING, size >> 3)) {
        flush();
      }
      return true;
    }

    /** Merges the pending values into the sorted array; after it, {@code values[0, size)} is all. */
    void flush() {
      if (pendingSize == 0) {
        return;
      }
      int[] sorted = new int[pendingSize];
      int n = 0;
      for (int v : pending) {
        if (v != EMPTY) {
          sorted[n++] = v;
        }
      }
      Arrays.sort(sorted);
      int total = size + n;
      if (total > values.length) {
        values = Arrays.copyOf(values, Math.max(total, size * 2));
      }
      // Merge from the back, in place: no second array of the whole set.
      int i = size - 1;
      int j = n - 1;
      for (int k = total - 1; j >= 0; k--) {
        values[k] = i >= 0 && values[i] > sorted[j] ? values[i--] : sorted[j--];
      }
      size = total;
      pending = null;
      pendingSize = 0;
    }

    private void append(int value) {
      if (size == values.length) {
        values = Arrays.copyOf(values, Math.max(4, size * 2));
      }
      values[size++] = value;
    }

    private boolean pendingContains(int value) {
      if (pending == null) {
        return false;
      }
      int mask = pending.length - 1;
      for (int at = mix(value) & mask; ; at = (at + 1) & mask) {
        int v = pending[at];
        if (v == value) {
          return true;
        }
        if (v == EMPTY) {
          return false;
        }
      }
    }

    /** Adds to the pending table (load factor at most one half); false if it was there. */
    private boolean pendingAdd(int value) {
      if (pending == null) {
        pending = newTable(2 * MIN_PENDING);
      } else if (2 * (pendingSize + 1) > pending.length) {
        int[] old = pending;
        pending = newTable(old.length * 2);
        for (int v : old) {
          if (v != EMPTY) {
            insert(pending, v);
          }
        }
      }
      if (!insert(pending, value)) {
        return false;
      }
      pendingSize++;
      return true;
    }

    private static int[] newTable(int length) {
      int[] table = new int[length];
      Arrays.fill(table, EMPTY);
      return table;
    }

    private static boolean insert(int[] table, int value) {
      int mask = table.length - 1;
      for (int at = mix(value) & mask; ; at = (at + 1) & mask) {
        int v = table[at];
        if (v == value) {
          return false;
        }
        if (v == EMPTY) {
          table[at] = value;
          return true;
        }
      }
    }

    /**
     * Spreads offsets that are multiples of a second over the table's low bits. Seeded per JVM:
     * the offsets come from the senders' timestamps, and a fixed hash would let a sender pick
     * colliding ones. The seed changes no result: the encoding is sorted.
     */
    private static int mix(int value) {
      int h = (value ^ SEED) * 0x9E3779B9;
      h ^= h >>> 15;
      h *= 0x2C1B3C6D;
      return h ^ (h >>> 12);
    }
  }

  /**
   * A growable byte buffer. Not ByteArrayOutputStream: its write(int) is synchronized, one lock
   * per byte, which was most of v3's encode time (make bench-aggregator-order, "roundtrip").
   */
  private static final class Output {
    private byte[] buf;
    private int count;

    Output(int capacity) {
      buf = new byte[Math.max(16, capacity)];
    }

    private void room(int n) {
      if (count + n > buf.length) {
        long grown = Math.max((long) count + n, 2L * buf.length);
        buf = Arrays.copyOf(buf, (int) Math.min(Integer.MAX_VALUE - 8, grown));
      }
    }

    void write(int b) {
      room(1);
      buf[count++] = (byte) b;
    }

    void write(byte[] bytes, int offset, int length) {
      room(length);
      System.arraycopy(bytes, offset, buf, count, length);
      count += length;
    }

    void varint(int value) {
      room(5);
      while ((value & ~0x7F) != 0) {
        buf[count++] = (byte) ((value & 0x7F) | 0x80);
        value >>>= 7;
      }
      buf[count++] = (byte) value;
    }

    byte[] toByteArray() {
      return Arrays.copyOf(buf, count);
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
