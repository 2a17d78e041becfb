package io.apm.aggregator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;

class DigitsTest {
  private static long parse(String s) {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    return Digits.parse(b, 0, b.length);
  }

  /**
   * Where the fast way answers, its double is Java's and its decimal the text's value; true when
   * it answered (so that a parser refusing every text cannot pass by agreeing with nothing).
   */
  private static boolean agrees(String s) {
    long d = parse(s);
    if (d == Digits.NONE) {
      return false;
    }
    double java = Double.parseDouble(s);
    assertEquals(Double.doubleToRawLongBits(java), Double.doubleToRawLongBits(Digits.value(d)), s);
    BigDecimal decimal = BigDecimal.valueOf(Digits.mantissa(d), Digits.decimals(d));
    assertEquals(0, decimal.compareTo(new BigDecimal(s)), s);
    return true;
  }

  @Test
  void readsTheIngestsNumbers() {
    for (String s :
        new String[] {
          "1700000001.5", "0.25", "-3e-07", "1e+16", "123456789012345", "0.1", "-0.5", "5", "1.",
          ".5", "+2", "0.000", "1.7e-05", "9.999999999999e+19", "0", "00012.50"
        }) {
      assertNotEquals(Digits.NONE, parse(s), s);
      agrees(s);
    }
    assertEquals(1.7e-5, Digits.value(parse("1.7e-05")));
    assertEquals(150L, Digits.mantissa(parse("1.50")));
    assertEquals(2, Digits.decimals(parse("1.50")));
  }

  @Test
  void leavesEverythingElseToTheGeneralWay() {
    for (String s :
        new String[] {
          "", "-", ".", "e5", "1e", "1e+", "1e1000", "1e23", "1e-23", "-0", "-0.0", " 1", "1 ",
          "NaN", "Infinity", "0x1p3", "1.5d", "2f", "1_0", "1.2.3", "1234567890123456",
          "0.30000000000000004", "1e-0001", "--1", "1-"
        }) {
      assertEquals(Digits.NONE, parse(s), s);
    }
  }

  @Test
  void agreesWithJavaOnRandomShortAndLongTexts() {
    Random random = new Random(7);
    int[] tried = new int[3];
    int[] accepted = new int[3];
    for (int i = 0; i < 40_000; i++) {
      double v =
          switch (i % 4) {
            case 0 -> random.nextGaussian() * Math.pow(10, random.nextInt(40) - 20);
            case 1 -> Math.round(random.nextDouble() * 1e6) / Math.pow(10, random.nextInt(12));
            case 2 -> 1.7e9 + random.nextInt(1_000_000) / 1000.0;
            default -> Double.longBitsToDouble(random.nextLong());
          };
      if (!Double.isFinite(v)) {
        continue;
      }
      String[] texts = {
        Double.toString(v),
        new BigDecimal(v).round(new java.math.MathContext(1 + random.nextInt(15))).toString(),
        String.format("%." + random.nextInt(20) + "f", v)
      };
      for (int form = 0; form < texts.length; form++) {
        tried[form]++;
        accepted[form] += agrees(texts[form]) ? 1 : 0;
      }
    }
    // Each form is answered by the fast way often enough that agreeing means something (seed 7
    // gives 51%, 73% and 47% of 39,997); a parser refusing every text fails here.
    for (int form = 0; form < tried.length; form++) {
      assertTrue(
          accepted[form] * 3 > tried[form],
          "form " + form + ": the fast way answered " + accepted[form] + " of " + tried[form]);
    }
  }

  @Test
  void theExactWordsAreTheReferenceDecimal() {
    long[] words = new long[2];
    Random random = new Random(11);
    int fastCount = 0;
    for (int i = 0; i < 50_000; i++) {
      double v = Math.round(random.nextGaussian() * 1e9) / Math.pow(10, random.nextInt(19));
      String text = BigDecimal.valueOf(v).toString(); // Java's shortest-ish text of v
      long d = parse(text);
      BigDecimal reference = Partials.fixed(v);
      boolean has = Partials.exact(v, d, words);
      fastCount += d != Digits.NONE ? 1 : 0;
      assertEquals(reference != null, has, text);
      if (has) {
        assertEquals(0, reference.compareTo(Partials.decimal(words[0], words[1])), text);
      }
    }
    // These texts are the ingest's own shape: the fast way reads them (all 50,000 with seed 11),
    // so the words compared above came from its decimals.
    assertTrue(fastCount >= 45_000, "the fast way read " + fastCount + " of 50000 texts");
    assertTrue(Partials.exact(-2.5, parse("-2.5"), words));
    assertEquals(new BigDecimal("-2.500000000000000000"), Partials.decimal(words[0], words[1]));
  }

  @Test
  void theSumsMagnitudeLimitIsTenToThe38InBothSigns() {
    BigDecimal limit = BigDecimal.TEN.pow(20);
    long[] w = new long[2];
    java.math.BigInteger u = limit.setScale(18).unscaledValue();
    assertTrue(Partials.beyond(u.shiftRight(64).longValue(), u.longValue()));
    java.math.BigInteger below = u.subtract(java.math.BigInteger.ONE);
    assertTrue(!Partials.beyond(below.shiftRight(64).longValue(), below.longValue()));
    java.math.BigInteger neg = below.negate();
    assertTrue(!Partials.beyond(neg.shiftRight(64).longValue(), neg.longValue()));
    neg = u.negate();
    assertTrue(Partials.beyond(neg.shiftRight(64).longValue(), neg.longValue()));
    assertEquals(0, Partials.decimal(neg.shiftRight(64).longValue(), neg.longValue()).compareTo(limit.negate()));
    assertTrue(w.length == 2);
  }
}
