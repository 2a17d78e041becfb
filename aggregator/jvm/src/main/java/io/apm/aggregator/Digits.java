package io.apm.aggregator;

/**
 * A number's text read once, for what the ingest writes (Python's shortest {@code repr}): a
 * plain decimal of at most 15 significant digits, {@code [+-]digits[.digits][e[+-]digits]}.
 * Such a text gives both the double and the exact decimal without {@code Double.parseDouble},
 * a {@code String} or a {@code BigDecimal} (v4, docs/aggregator.md: "the exact sum from the
 * text").
 *
 * <p>The double: {@code m / 10^k} (or {@code m * 10^-k}) with {@code |m| < 10^15 < 2^53} and
 * {@code |k| <= 22}, both exact doubles, so the one division (or product) is correctly rounded:
 * the double {@code Double.parseDouble} returns (Clinger's fast path). The decimal: {@code m *
 * 10^-k} itself. A decimal of at most 15 significant digits is the value of the shortest text of
 * the double it converts to (two distinct ones never convert to the same double: DBL_DIG), so
 * for a foreign producer's longer-than-shortest text with few digits ({@code 0.50}) it is still
 * the value of the double's shortest text, the one the sum is defined on ({@link Partials}).
 * Anything else (more digits, exponents beyond 22, {@code -0}, whitespace, {@code NaN}, hex)
 * is {@link #NONE}: the caller takes the general way.
 */
final class Digits {
  /** Not a text of this form. */
  static final long NONE = Long.MIN_VALUE;

  private static final int MAX_DIGITS = 15;
  private static final int MAX_K = 22; // 10^22 is the largest exact power of ten in a double
  private static final int K_BIAS = 22;
  private static final double[] POW10 = new double[MAX_K + 1];

  static {
    double p = 1.0;
    for (int i = 0; i <= MAX_K; i++) {
      POW10[i] = p;
      p *= 10.0;
    }
  }

  private Digits() {}

  /** The text {@code b[from, to)} as {@code (m, k)} in one long, or {@link #NONE}. */
  static long parse(byte[] b, int from, int to) {
    int i = from;
    boolean negative = false;
    if (i < to && (b[i] == '-' || b[i] == '+')) {
      negative = b[i] == '-';
      i++;
    }
    long m = 0;
    int digits = 0;
    int significant = 0;
    int k = 0;
    boolean dot = false;
    for (; i < to; i++) {
      int c = b[i];
      if (c >= '0' && c <= '9') {
        digits++;
        if (dot) {
          k++;
        }
        if (m == 0 && c == '0') {
          continue; // a leading zero
        }
        if (++significant > MAX_DIGITS) {
          return NONE;
        }
        m = m * 10 + (c - '0');
      } else if (c == '.' && !dot) {
        dot = true;
      } else {
        break;
      }
    }
    if (digits == 0) {
      return NONE;
    }
    if (i < to && (b[i] == 'e' || b[i] == 'E')) {
      i++;
      boolean minus = false;
      if (i < to && (b[i] == '-' || b[i] == '+')) {
        minus = b[i] == '-';
        i++;
      }
      int exponent = 0;
      int expDigits = 0;
      for (; i < to && b[i] >= '0' && b[i] <= '9'; i++) {
        if (++expDigits > 3) {
          return NONE;
        }
        exponent = exponent * 10 + (b[i] - '0');
      }
      if (expDigits == 0) {
        return NONE;
      }
      k -= minus ? -exponent : exponent;
    }
    if (i != to || (m == 0 && negative)) {
      return NONE; // trailing text, or -0 (whose sign a zero m cannot carry)
    }
    if (m == 0) {
      k = 0;
    }
    if (k < -MAX_K || k > MAX_K) {
      return NONE;
    }
    return ((negative ? -m : m) << 6) | (k + K_BIAS);
  }

  /** {@code m} of a parsed text. */
  static long mantissa(long parsed) {
    return parsed >> 6;
  }

  /** {@code k} of a parsed text: its value is {@code m * 10^-k}. */
  static int decimals(long parsed) {
    return (int) (parsed & 63) - K_BIAS;
  }

  /** The double of a parsed text, as {@code Double.parseDouble} reads it. */
  static double value(long parsed) {
    long m = mantissa(parsed);
    int k = decimals(parsed);
    return k >= 0 ? m / POW10[k] : m * POW10[-k];
  }
}
