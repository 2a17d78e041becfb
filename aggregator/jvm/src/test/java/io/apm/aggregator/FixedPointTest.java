package io.apm.aggregator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class FixedPointTest {
  /** v3's conversion, kept here as the reference the fast path must agree with. */
  private static BigDecimal viaString(double value) {
    if (!(Math.abs(value) < 1e20)) {
      return null;
    }
    BigDecimal decimal = new BigDecimal(Double.toString(value)).setScale(18, RoundingMode.HALF_UP);
    if (decimal.abs().compareTo(BigDecimal.TEN.pow(20)) >= 0) {
      return null;
    }
    return decimal.doubleValue() == value ? decimal : null;
  }

  private static BigDecimal text(String shortest) {
    return new BigDecimal(shortest).setScale(18, RoundingMode.HALF_UP);
  }

  @Test
  void shortDecimalsTakeTheFastWayAndKeepTheirDigits() {
    assertEquals(100_000_000_000_000_000L, FixedPoint.unscaled(0.1));
    assertEquals(-1_500_000_000_000_000_000L, FixedPoint.unscaled(-1.5));
    assertEquals(0L, FixedPoint.unscaled(-0.0));
    assertEquals(0L, FixedPoint.unscaled(0.0));
    assertEquals(1L, FixedPoint.unscaled(1e-18));
    assertEquals(3, FixedPoint.decimals(12.345));
    assertEquals(text("12.345"), Partials.fixed(12.345));
    assertEquals(text("99999999999999.98"), Partials.fixed(99999999999999.98), "15 digits, wide");
    assertEquals(text("123456789.5"), Partials.fixed(123456789.5), "beyond a long: wide");
  }

  @Test
  void theRestIsLeftToTheGeneralWay() {
    assertEquals(FixedPoint.NONE, FixedPoint.unscaled(0.30000000000000004), "17 digits");
    assertEquals(-1, FixedPoint.decimals(1.2345678901234567e-5));
    assertEquals(-1, FixedPoint.decimals(1e-19), "more than 18 decimals");
    assertEquals(-1, FixedPoint.decimals(1e20));
    assertEquals(-1, FixedPoint.decimals(Double.NaN));
    assertEquals(-1, FixedPoint.decimals(Double.MIN_VALUE), "subnormal");
    assertNull(Partials.fixed(Double.MIN_VALUE));
    assertNull(Partials.fixed(1e20));
    assertNull(Partials.fixed(-1e20));
    assertNull(Partials.fixed(Double.POSITIVE_INFINITY));
    assertEquals(text("99999999999999980000"), Partials.fixed(9.999999999999998e19));
    assertEquals(text("0.30000000000000004"), Partials.fixed(0.30000000000000004));
  }

  @Test
  void theGeneralWayIsTheShortestTextNotJava17sToString() {
    assertEquals(new BigDecimal("2.594213920702969E16"), FixedPoint.shortest(2.594213920702969e16));
    assertEquals(text("25942139207029690"), Partials.fixed(2.594213920702969e16));
    assertEquals(text("282879384806159000"), Partials.fixed(2.82879384806159e17));
    assertEquals(0, new BigDecimal("0.30000000000000004").compareTo(FixedPoint.shortest(0.30000000000000004)));
    assertEquals(0, new BigDecimal("5E-324").compareTo(FixedPoint.shortest(Double.MIN_VALUE)));
    assertEquals(0, new BigDecimal("1.7976931348623157E308").compareTo(FixedPoint.shortest(Double.MAX_VALUE)));
  }

  @Test
  void sixteenAndSeventeenDigitsAgreeWithTheBigDecimalWay() {
    SplittableRandom random = new SplittableRandom(13);
    int answered = 0;
    for (int i = 0; i < 100_000; i++) {
      double v = random.nextDouble() * Math.pow(10, random.nextInt(-4, 16));
      v = random.nextBoolean() ? -v : v;
      if (FixedPoint.decimals(v) >= 0) {
        continue;
      }
      long[] got = FixedPoint.longDigits(v);
      if (got == null) {
        continue;
      }
      answered++;
      BigDecimal shortest = FixedPoint.shortest(v);
      if (got[1] < 0) {
        assertTrue(shortest.scale() > 18, "value " + v);
      } else {
        assertEquals(0, BigDecimal.valueOf(got[0], (int) got[1]).compareTo(shortest), "value " + v);
      }
    }
    assertTrue(answered > 50_000, "most of them answered without BigDecimal: " + answered);
  }

  @Test
  void agreesWithTheStringWayOnShortValues() {
    // Values with at most 15 significant digits at every scale: the fast answer must be the
    // value of the shortest text, which Double.toString also gives for these.
    SplittableRandom random = new SplittableRandom(7);
    for (int i = 0; i < 50_000; i++) {
      long digits = random.nextLong(1, 1_000_000_000_000_000L);
      int exponent = random.nextInt(-18, 6);
      double magnitude = new BigDecimal(digits).scaleByPowerOfTen(exponent - 15).doubleValue();
      double v = random.nextBoolean() ? -magnitude : magnitude;
      BigDecimal fast = Partials.fixed(v);
      BigDecimal reference = viaString(v);
      assertEquals(reference, fast, () -> "value " + v);
    }
  }

  @Test
  void agreesWithTheStringWayOnRandomDoubles() {
    SplittableRandom random = new SplittableRandom(11);
    for (int i = 0; i < 30_000; i++) {
      double v = Double.longBitsToDouble(random.nextLong());
      if (Double.isFinite(v) && FixedPoint.decimals(v) >= 0) {
        BigDecimal fixed = Partials.fixed(v);
        assertEquals(v, fixed.doubleValue(), "value " + v);
        assertEquals(0, fixed.compareTo(FixedPoint.shortest(v).setScale(18)), "value " + v);
      }
      double u = random.nextDouble() * Math.pow(10, random.nextInt(-20, 22));
      BigDecimal fixed = Partials.fixed(u);
      if (fixed != null) {
        assertEquals(u, fixed.doubleValue(), "an exact value converts back to the same double");
        assertTrue(fixed.scale() == 18);
      }
    }
  }
}
