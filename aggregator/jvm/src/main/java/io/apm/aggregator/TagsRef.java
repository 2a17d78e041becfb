package io.apm.aggregator;

import java.io.Serializable;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;

/**
 * How the executors get the driver's tag map (aggregator/tag_map.py): the operator holds this
 * reference, and the driver sets it before each micro-batch's action runs (aggregator/streams.py).
 * A micro-batch's tasks are serialized when its stages are submitted, so they carry the broadcast
 * that is current then; its value is fetched once per executor and broadcast. A map whose version
 * did not change is not broadcast again.
 */
public final class TagsRef implements Serializable {
  private static final long serialVersionUID = 1L;
  private Broadcast<TagTable> current;
  private TagTable local; // without a SparkContext (unit tests)
  private long version = Long.MIN_VALUE;

  /**
   * Sets the map of {@code version} (encoded as TagTable.decode reads it), once per version,
   * broadcast through {@code sc} (null: kept here, for tests without Spark).
   */
  public synchronized boolean set(JavaSparkContext sc, byte[] encoded, long version) {
    if (version == this.version) {
      return false;
    }
    TagTable table = TagTable.decode(encoded);
    Broadcast<TagTable> before = current;
    if (sc != null) {
      current = sc.broadcast(table);
      local = null;
    } else {
      current = null;
      local = table;
    }
    if (before != null) {
      before.unpersist(false); // the driver keeps its copy: a retried task can still read it
    }
    this.version = version;
    return true;
  }

  public long version() {
    return version;
  }

  /** The map as of the current batch (executors: its broadcast value). */
  public TagTable table() {
    Broadcast<TagTable> b = current;
    if (b != null) {
      return b.value();
    }
    return local == null ? TagTable.EMPTY : local;
  }
}
