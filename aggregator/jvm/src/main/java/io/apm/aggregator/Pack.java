package io.apm.aggregator;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The samples of one record under one dedup key, as one binary value: what crosses the shuffle
 * into the operator instead of one row per sample (v4's step b, docs/aggregator.md). Per sample:
 * the server's byte length (int), its bytes, the event time in microseconds (long), {@code ts}
 * and the value (doubles), and the value's text as {@link Digits} read it (long), big-endian. The layout lives only inside one micro-batch (shuffle
 * blocks), never in the checkpoint, so it can change freely.
 */
public final class Pack {
  private Pack() {}

  /** Appends samples; {@link #bytes} is the pack. */
  public static final class Builder {
    private byte[] buf = new byte[256];
    private int size;
    private int count;
    private long newest = Long.MIN_VALUE;

    public void add(byte[] server, long micros, double ts, double value, long digits) {
      ensure(4 + server.length + 32);
      putInt(server.length);
      System.arraycopy(server, 0, buf, size, server.length);
      size += server.length;
      putLong(micros);
      putLong(Double.doubleToRawLongBits(ts));
      putLong(Double.doubleToRawLongBits(value));
      putLong(digits);
      count++;
      newest = Math.max(newest, micros);
    }

    public int count() {
      return count;
    }

    /** The largest event time added (us): the pack's event time for the watermark. */
    public long newest() {
      return newest;
    }

    public byte[] bytes() {
      return Arrays.copyOf(buf, size);
    }

    private void ensure(int more) {
      if (size + more > buf.length) {
        buf = Arrays.copyOf(buf, Math.max(buf.length * 2, size + more));
      }
    }

    private void putInt(int v) {
      buf[size++] = (byte) (v >>> 24);
      buf[size++] = (byte) (v >>> 16);
      buf[size++] = (byte) (v >>> 8);
      buf[size++] = (byte) v;
    }

    private void putLong(long v) {
      putInt((int) (v >>> 32));
      putInt((int) v);
    }
  }

  /** What {@link #read} hands over per sample. */
  public interface Sink {
    void sample(String server, long micros, double ts, double value, long digits);
  }

  /**
   * Every sample of {@code pack}, in the order added. A server's name is decoded once per run of
   * equal bytes (a pack from one record often holds one server's samples side by side).
   */
  public static void read(byte[] pack, Sink sink) {
    int at = 0;
    String server = null;
    int serverAt = -1;
    int serverLen = -1;
    while (at < pack.length) {
      int len = getInt(pack, at);
      at += 4;
      if (server == null
          || len != serverLen
          || !Arrays.equals(pack, at, at + len, pack, serverAt, serverAt + serverLen)) {
        // Spark's cast of binary to string: the bytes as UTF-8, unvalidated (UTF8String).
        server = new String(pack, at, len, StandardCharsets.UTF_8);
        serverAt = at;
        serverLen = len;
      }
      at += len;
      long micros = getLong(pack, at);
      double ts = Double.longBitsToDouble(getLong(pack, at + 8));
      double value = Double.longBitsToDouble(getLong(pack, at + 16));
      long digits = getLong(pack, at + 24);
      at += 32;
      sink.sample(server, micros, ts, value, digits);
    }
  }

  private static int getInt(byte[] b, int at) {
    return (b[at] & 0xff) << 24 | (b[at + 1] & 0xff) << 16 | (b[at + 2] & 0xff) << 8 | (b[at + 3] & 0xff);
  }

  private static long getLong(byte[] b, int at) {
    return (long) getInt(b, at) << 32 | (getInt(b, at + 4) & 0xffffffffL);
  }
}
