package io.apm.aggregator;

/**
 * A bijective mix of a long (MurmurHash3's 64-bit finalizer) for the operator's {@code
 * HashMap<Long, ...>} keys. {@code Long.hashCode} folds the high half onto the low one, and
 * {@code HashMap} indexes by the low bits: keys built as {@code query << 40 ^ window end} or
 * {@code block * 32 + bucket} then share bins by the dozen (the profile showed {@code
 * HashMap$TreeNode} at 12% of the job's CPU). Mixed, they spread; being a bijection, distinct
 * keys stay distinct.
 */
final class Spread {
  private Spread() {}

  static long mix(long k) {
    k ^= k >>> 33;
    k *= 0xff51afd7ed558ccdL;
    k ^= k >>> 33;
    k *= 0xc4ceb9fe1a85ec53L;
    k ^= k >>> 33;
    return k;
  }
}
