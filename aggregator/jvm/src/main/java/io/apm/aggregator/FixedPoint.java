package io.apm.aggregator;

import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;

/**
 * A double's exact decimal(38,18) form with double arithmetic alone, where that is provably
 * the value of its shortest decimal text (Python's {@code repr}, what the ingest writes) and so
 * what Spark's {@code try_cast(text AS decimal(38,18))} gives.
 *
 * <p>Why it is exact: if {@code r / 10^d == v} for an integer {@code |r| < 10^15} and {@code d
 * <= 18} (the division of two exactly representable doubles is correctly rounded), the decimal
 * {@code r * 10^-d} converts to {@code v}. It has at most 15 significant digits, and two
 * distinct decimals of at most 15 significant digits never convert to the same double (a
 * double carries 15 decimal digits: DBL_DIG), so it is the value of {@code v}'s shortest
 * decimal text, which has at most as many digits. It has at most 18 decimals, so the cast does
 * not round it. Most values of 16 or 17 significant digits are answered by {@link #longDigits};
 * the rest by {@link #shortest}, with {@code BigDecimal} ({@link Partials#fixed} tries them in
 * that order).
 *
 * <p>Before (v3), every value went through {@code Double.toString}, a {@code BigDecimal} parse,
 * a rescale and {@code BigDecimal.doubleValue} (a second string on Java 17).
 */
final class FixedPoint {
  private static final RoundingMode EVEN = RoundingMode.HALF_EVEN;

  /** No answer here: the caller takes the general way. */
  static final long NONE = Long.MIN_VALUE;
  /** 10^20: decimal(38,18) holds magnitudes below it. */
  static final double LIMIT = 1e20;

  private static final int SCALE = Partials.SCALE;
  private static final double DIGITS_15 = 1e15;
  private static final double[] POW10 = new double[SCALE + 1];
  /** 10^0 .. 10^18 as longs (Partials scales a text's digits by them too). */
  static final long[] LONG_POW10 = new long[SCALE + 1];

  static {
    double p = 1.0;
    long q = 1L;
    for (int i = 0; i <= SCALE; i++) {
      POW10[i] = p; // exact: 10^i is a double up to 10^22
      LONG_POW10[i] = q;
      p *= 10.0;
      q *= 10L;
    }
  }

  private FixedPoint() {}

  /**
   * {@code v * 10^18} as a long if {@code v} has at most 15 significant digits, at most 18
   * decimals and its scaled value fits a long (|v| < 9.2); else {@link #NONE}.
   */
  static long unscaled(double v) {
    int d = decimals(v);
    if (d < 0) {
      return NONE;
    }
    long r = digits(v, d);
    long factor = LONG_POW10[SCALE - d];
    long hi = Math.multiplyHigh(r, factor);
    long lo = r * factor;
    // The product fits a long when its high word is the sign extension of the low word.
    return hi == (lo >> 63) && lo != NONE ? lo : NONE;
  }

  /** {@code v}'s digits {@code r} with {@code v == r / 10^decimals} ({@link #decimals}). */
  static long digits(double v, int decimals) {
    return (long) Math.rint(v * POW10[decimals]);
  }

  /**
   * The smallest {@code d <= 18} with {@code rint(v * 10^d) / 10^d == v} and {@code |rint(v *
   * 10^d)| < 10^15}, or -1.
   */
  static int decimals(double v) {
    if (!(Math.abs(v) < LIMIT)) {
      return -1;
    }
    for (int d = 0; d <= SCALE; d++) {
      double r = Math.rint(v * POW10[d]);
      if (Math.abs(r) >= DIGITS_15) {
        return -1; // more decimals only make r larger
      }
      if (r / POW10[d] == v) {
        return d;
      }
    }
    return -1;
  }

  /** 2^53: integers below it are exact doubles. */
  private static final double EXACT_INTEGERS = 9007199254740992.0;

  /**
   * {digits, decimals} of {@code v}'s shortest text when it has 16 or 17 significant digits and
   * at most 18 decimals and {@code |v|} is in [10^-3, 10^15), with double arithmetic alone; null
   * where this cannot tell (the caller then takes {@link #shortest}). Call it only where {@link
   * #decimals} found nothing, which rules out 15 digits or fewer. The closest 16-digit decimal is
   * found exactly ({@code v * 10^d} as the exact sum {@code hi + lo} of two doubles, fma), and
   * checked to convert back by one correctly rounded division while its digits are below 2^53; if
   * it does not, the shortest text has 17 digits, the closest 17-digit decimal, which always
   * converts back.
   */
  static long[] longDigits(double v) {
    double a = Math.abs(v);
    if (!(a >= 1e-3 && a < DIGITS_15)) {
      return null;
    }
    // log10 may be one off near a power of ten: the digit counts checked below catch that.
    int d16 = 15 - (int) Math.floor(Math.log10(a));
    if (d16 < 1 || d16 > SCALE) {
      return null;
    }
    long r16 = closest(a, POW10[d16]);
    if (r16 >= 1_000_000_000_000_000L && r16 < EXACT_INTEGERS) { // 16 digits, exact
      if (r16 / POW10[d16] == a) {
        return new long[] {v < 0 ? -r16 : r16, d16};
      }
      int d17 = d16 + 1;
      if (d17 > SCALE) {
        return new long[] {0, -1}; // 17 digits past the 18th decimal: no exact value
      }
      long r17 = closest(a, POW10[d17]);
      if (r17 >= 10_000_000_000_000_000L && r17 < 100_000_000_000_000_000L) { // 17 digits
        return new long[] {v < 0 ? -r17 : r17, d17};
      }
    }
    return null;
  }

  /** The integer closest to the exact product {@code a * p} (ties to even), {@code a, p > 0}. */
  private static long closest(double a, double p) {
    double hi = a * p;
    double lo = Math.fma(a, p, -hi); // a * p == hi + lo exactly
    double whole = Math.floor(hi);
    double rest = (hi - whole) + lo; // hi - whole is exact
    double down = Math.floor(rest);
    long r = (long) whole + (long) down;
    double fraction = rest - down;
    return fraction > 0.5 || (fraction == 0.5 && (r & 1) == 1) ? r + 1 : r;
  }

  /**
   * The value of {@code v}'s shortest decimal text (Python's {@code repr}: the fewest
   * significant digits that convert back to {@code v}, the closest to {@code v} among those),
   * for a finite {@code v}. Java 17's {@code Double.toString}, which Spark's cast of a double
   * uses and v3 used, is not always the shortest (JDK-4511638: {@code 2.5942139207029688E16} for
   * Python's {@code 2.594213920702969e16}); it is a start that converts back. The closest
   * p-digit decimal to {@code v} converts back if any p-digit decimal does, so the digits are
   * cut one at a time until the next cut would not convert back.
   */
  static BigDecimal shortest(double v) {
    if (v == 0.0) {
      return BigDecimal.ZERO;
    }
    BigDecimal exact = new BigDecimal(v);
    int p = new BigDecimal(Double.toString(v)).precision();
    BigDecimal best = exact.round(new MathContext(p, EVEN));
    for (p = p - 1; p >= 1; p--) {
      BigDecimal shorter = exact.round(new MathContext(p, EVEN));
      if (shorter.doubleValue() != v) {
        break;
      }
      best = shorter;
    }
    return best;
  }
}
