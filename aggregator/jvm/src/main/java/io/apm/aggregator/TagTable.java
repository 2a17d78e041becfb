package io.apm.aggregator;

import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;

/**
 * Every server's host tags as the driver's tag map holds them (aggregator/tag_map.py, which
 * encodes it): per server its versions, oldest first, each with the time (ms) its record was
 * received. The per-window rule (docs/aggregator.md, "Host tags"): a version applies from its
 * {@link #effectiveFrom} on, the first window start at or after it was received, so that every
 * sample of one window is grouped by the same version; a window before every version has no tags.
 *
 * <p>Encoding: one line a version, {@code server TAB received_ms TAB k US v US k US v ...} (US:
 * U+001F). Neither a server name nor a tag holds a tab, a line end or U+001F ({@code
 * apm.tags}: values are printable).
 */
public final class TagTable implements Serializable {
  private static final long serialVersionUID = 1L;
  public static final TagTable EMPTY = new TagTable(new HashMap<>());
  static final Map<String, String> NO_TAGS = Collections.emptyMap();

  /** One version of a server's tags. */
  public static final class Version implements Serializable {
    private static final long serialVersionUID = 1L;
    public final long receivedMs;
    public final Map<String, String> tags;

    Version(long receivedMs, Map<String, String> tags) {
      this.receivedMs = receivedMs;
      this.tags = tags;
    }
  }

  private final HashMap<String, Version[]> byServer;

  private TagTable(HashMap<String, Version[]> byServer) {
    this.byServer = byServer;
  }

  /** The table of {@code aggregator.tag_map.TagMap.encode}'s bytes. */
  public static TagTable decode(byte[] encoded) {
    HashMap<String, java.util.List<Version>> built = new HashMap<>();
    String text = new String(encoded, StandardCharsets.UTF_8);
    for (String line : text.split("\n")) {
      if (line.isEmpty()) {
        continue;
      }
      String[] parts = line.split("\t", -1);
      if (parts.length != 3) {
        throw new IllegalArgumentException("bad tag table line: " + line);
      }
      Map<String, String> tags = new HashMap<>();
      if (!parts[2].isEmpty()) {
        String[] kv = parts[2].split("\u001f", -1);
        if (kv.length % 2 != 0) {
          throw new IllegalArgumentException("bad tags of " + parts[0]);
        }
        for (int i = 0; i < kv.length; i += 2) {
          tags.put(kv[i], kv[i + 1]);
        }
      }
      built
          .computeIfAbsent(parts[0], s -> new java.util.ArrayList<>())
          .add(new Version(Long.parseLong(parts[1]), tags));
    }
    HashMap<String, Version[]> out = new HashMap<>();
    built.forEach((server, versions) -> out.put(server, versions.toArray(new Version[0])));
    return new TagTable(out);
  }

  /** The server's versions, oldest first, or null when it has none. */
  public Version[] versions(String server) {
    return byServer.get(server);
  }

  public int size() {
    return byServer.size();
  }

  /** The first start (s) of a {@code width}-s window at or after {@code receivedMs}. */
  public static long effectiveFrom(long receivedMs, int width) {
    long w = width * 1000L;
    return Math.floorDiv(receivedMs + w - 1, w) * width;
  }

  /**
   * The index of the version that applies to the window starting at {@code windowStart} (s) of
   * width {@code width}: the newest whose {@link #effectiveFrom} is at or before it; -1: none.
   */
  public static int at(Version[] versions, long windowStart, int width) {
    if (versions == null) {
      return -1;
    }
    for (int i = versions.length - 1; i >= 0; i--) {
      if (effectiveFrom(versions[i].receivedMs, width) <= windowStart) {
        return i;
      }
    }
    return -1;
  }

  /** The tags of {@code server} in that window ({@link #at}); none: empty. */
  public Map<String, String> tagsAt(String server, long windowStart, int width) {
    Version[] versions = byServer.get(server);
    int i = at(versions, windowStart, width);
    return i < 0 ? NO_TAGS : versions[i].tags;
  }
}
