package io.apm.aggregator;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Random;

/**
 * {@code make bench-aggregator-order} (bench/aggregator_order.py) runs this: the time to insert
 * N offsets for one dedup key and one server in ascending, descending and random order, v4's
 * {@link SeenSamples} against v3's insertion by shifting (kept below, verbatim in effect, for a
 * same-run ratio), the median of several runs in one JVM; then the per-batch cost of the state's
 * round trip (decode, add a batch, encode) that Summaries pays per key, by state size.
 *
 * <p>Output lines, parsed by the Python side: {@code insert <order> n=<n>: v3 <ms> ms, v4 <ms>
 * ms} and {@code roundtrip held=<n> batch=<k>: decode <us> us, add <us> us, encode <us> us,
 * bytes <b>}.
 */
public final class SeenSamplesBench {
  private SeenSamplesBench() {}

  /** v3's Offsets.add: a sorted array, one shift per insert (O(n) each). */
  static final class V3Offsets {
    int[] values = new int[4];
    int size;

    boolean add(int value) {
      int at;
      if (size > 0 && values[size - 1] < value) {
        at = -(size + 1);
      } else {
        at = Arrays.binarySearch(values, 0, size, value);
      }
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

  static int[] order(String name, int n) {
    int[] out = new int[n];
    Random random = new Random(42);
    for (int i = 0; i < n; i++) {
      out[i] =
          switch (name) {
            case "ascending" -> i * 1000;
            case "descending" -> (n - i) * 1000;
            case "random" -> random.nextInt(Integer.MAX_VALUE);
            default -> throw new IllegalArgumentException(name);
          };
    }
    return out;
  }

  private static double median(double[] xs) {
    double[] s = xs.clone();
    Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }

  public static void main(String[] args) {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 200_000;
    int runs = args.length > 1 ? Integer.parseInt(args[1]) : 5;
    int v3Runs = Math.min(runs, 3); // v3 is O(n^2) out of order: 1-25 s a run on a busy machine
    long sink = 0;
    for (int warm = 0; warm < 2; warm++) { // let the JIT compile both paths first
      for (String name : new String[] {"ascending", "random"}) {
        SeenSamples seen = new SeenSamples();
        V3Offsets old = new V3Offsets();
        for (int o : order(name, Math.min(n, 20_000))) {
          seen.add("srv-1", o);
          old.add(o);
        }
        sink += SeenSamples.decode(seen.encode()).size() + old.size;
      }
    }
    for (String name : new String[] {"ascending", "descending", "random"}) {
      int[] offsets = order(name, n);
      double[] v3 = new double[v3Runs];
      double[] v4 = new double[runs];
      for (int r = 0; r < runs; r++) {
        if (r >= v3Runs) {
          long t1 = System.nanoTime();
          SeenSamples seen = new SeenSamples();
          for (int o : offsets) {
            seen.add("srv-1", o);
          }
          v4[r] = (System.nanoTime() - t1) / 1e6;
          sink += seen.size();
          continue;
        }
        long t0 = System.nanoTime();
        // Through a map by server, as SeenSamples does, so only the per-server set differs.
        HashMap<String, V3Offsets> byServer = new HashMap<>();
        for (int o : offsets) {
          byServer.computeIfAbsent("srv-1", k -> new V3Offsets()).add(o);
        }
        V3Offsets old = byServer.get("srv-1");
        long t1 = System.nanoTime();
        SeenSamples seen = new SeenSamples();
        for (int o : offsets) {
          seen.add("srv-1", o);
        }
        long t2 = System.nanoTime();
        if (old.size != seen.size()) {
          throw new AssertionError(name + ": v3 holds " + old.size + ", v4 " + seen.size());
        }
        sink += old.size + seen.size();
        v3[r] = (t1 - t0) / 1e6;
        v4[r] = (t2 - t1) / 1e6;
      }
      System.out.printf("insert %s n=%d: v3 %.1f ms, v4 %.1f ms%n", name, n, median(v3), median(v4));
    }
    // What Summaries pays per key and micro-batch: decode the state, add a batch, encode it.
    // 1 Hz servers, an 8 s block: held = servers x seconds seen so far; the batch adds one second.
    for (int servers : new int[] {300, 3_000, 25_000}) {
      for (int seconds : new int[] {1, 7}) {
        SeenSamples state = new SeenSamples();
        for (int s = 0; s < servers; s++) {
          for (int sec = 0; sec < seconds; sec++) {
            state.add("srv-" + s, sec * 1_000_000);
          }
        }
        byte[] bytes = state.encode();
        double[] dec = new double[runs];
        double[] add = new double[runs];
        double[] enc = new double[runs];
        for (int r = 0; r < runs; r++) {
          long t0 = System.nanoTime();
          SeenSamples seen = SeenSamples.decode(bytes);
          long t1 = System.nanoTime();
          for (int s = 0; s < servers; s++) {
            seen.add("srv-" + s, seconds * 1_000_000);
          }
          long t2 = System.nanoTime();
          byte[] out = seen.encode();
          long t3 = System.nanoTime();
          sink += out.length;
          dec[r] = (t1 - t0) / 1e3;
          add[r] = (t2 - t1) / 1e3;
          enc[r] = (t3 - t2) / 1e3;
        }
        System.out.printf(
            "roundtrip held=%d batch=%d: decode %.0f us, add %.0f us, encode %.0f us, bytes %d%n",
            state.size(), servers, median(dec), median(add), median(enc), bytes.length);
      }
    }
    if (sink == 42) {
      System.out.println();
    }
  }
}
