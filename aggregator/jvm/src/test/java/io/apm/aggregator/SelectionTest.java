package io.apm.aggregator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The server regexes that {@code apm.query} compiles from globs, as Java's regex (Spark's
 * {@code RLIKE}, {@link Selection#matches}) evaluates them: the same answer as a plain glob
 * matcher, and in time linear in the name's length even for globs whose naive translation
 * backtracks for years.
 */
class SelectionTest {
  // {glob, regex}: tests/apm/test_query_glob.py checks that each regex is exactly what
  // apm.query_glob.glob_to_regex compiles the glob to, so this runs Python's output.
  static final String[][] GLOBS = {
    {"*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?Z", "(?>.*?.)(?>.*?.)(?>.*?.)(?>.*?.)(?>.*?.)(?>.*?.)(?>.*?.)(?>.*?.)(?>.*?.)(?>.*?.)(?>.*?.)(?>.*?.)(?>.*?.)(?>.*?.)(?>.*?.).*.Z"},
    {"*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*ab", "(?>.*?a)(?>.*?a)(?>.*?a)(?>.*?a)(?>.*?a)(?>.*?a)(?>.*?a)(?>.*?a)(?>.*?a)(?>.*?a)(?>.*?a)(?>.*?a)(?>.*?a)(?>.*?a)(?>.*?a).*ab"},
    {"*aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab*", "(?>.*?aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab).*"},
    {"*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa*aaaaaaa", "(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa)(?>.*?aaaaaaa).*aaaaaaa"},
    {"a*b", "a.*b"},
    {"*a", ".*a"},
    {"*", ".*"},
    {"**a**b**", "(?>.*?a)(?>.*?b).*"},
    {"a?b*", "a.b.*"},
    {"*[ab]-*[!a]", "(?>.*?[ab]\\-).*[^a]"},
    {"[a-b]*-?*", "[a-b](?>.*?\\-.).*"},
    {"*-*-*", "(?>.*?\\-)(?>.*?\\-).*"},
    {"[-a]*a", "[\\-a].*a"},
    {"a*a*a", "a(?>.*?a).*a"},
    {"[--a]*", "[\\--a].*"},
    {"*[a-b-Z]", ".*[a-b\\-Z]"},
    {"?[!-Z]*", ".[^\\-Z].*"},
    {"[!!][!a-b]", "[^!][^a-b]"},
  };

  private static Selection select(String... regexes) {
    // As aggregator.plan.server_match hands the globs over: one anchored alternation.
    String regex = "^(?:" + String.join("|", regexes) + ")$";
    return new Selection("q", "cpu", 10, false, false, List.of(), List.of(), regex);
  }

  /** Plain recursive glob matching over the same syntax, memoised: the reference. */
  private static boolean glob(String g, String s) {
    return glob(g, 0, s, 0, new Boolean[g.length() + 1][s.length() + 1]);
  }

  private static boolean glob(String g, int i, String s, int j, Boolean[][] memo) {
    if (memo[i][j] != null) {
      return memo[i][j];
    }
    boolean out;
    if (i == g.length()) {
      out = j == s.length();
    } else if (g.charAt(i) == '*') {
      out = glob(g, i + 1, s, j, memo) || (j < s.length() && glob(g, i, s, j + 1, memo));
    } else if (j == s.length()) {
      out = false;
    } else if (g.charAt(i) == '[') {
      int end = g.indexOf(']', i + 1);
      String body = g.substring(i + 1, end);
      boolean negate = body.startsWith("!");
      boolean member = inClass(negate ? body.substring(1) : body, s.charAt(j));
      out = member != negate && glob(g, end + 1, s, j + 1, memo);
    } else {
      out = (g.charAt(i) == '?' || g.charAt(i) == s.charAt(j)) && glob(g, i + 1, s, j + 1, memo);
    }
    memo[i][j] = out;
    return out;
  }

  private static boolean inClass(String body, char c) {
    for (int k = 0; k < body.length(); ) {
      if (k + 2 < body.length() && body.charAt(k + 1) == '-') {
        if (body.charAt(k) <= c && c <= body.charAt(k + 2)) {
          return true;
        }
        k += 3;
      } else if (body.charAt(k++) == c) {
        return true;
      }
    }
    return false;
  }

  /** Every name of up to {@code max} characters over {@code alphabet}. */
  private static List<String> names(String alphabet, int max) {
    List<String> out = new ArrayList<>(List.of(""));
    for (int from = 0, len = 1; len <= max; len++) {
      int to = out.size();
      for (int k = from; k < to; k++) {
        for (char c : alphabet.toCharArray()) {
          out.add(out.get(k) + c);
        }
      }
      from = to;
    }
    return out;
  }

  @Test
  void everyRegexMatchesExactlyWhatItsGlobMatches() {
    List<String> names = names("ab-Z", 6);
    for (String[] pair : GLOBS) {
      Selection one = select(pair[1]);
      for (String name : names) {
        assertEquals(glob(pair[0], name), one.matches(name), pair[0] + " on '" + name + "'");
      }
    }
    String[] all = Arrays.stream(GLOBS).map(p -> p[1]).toArray(String[]::new);
    Selection any = select(all);
    for (String name : names) {
      boolean want = Arrays.stream(GLOBS).anyMatch(p -> glob(p[0], name));
      assertEquals(want, any.matches(name), "any glob on '" + name + "'");
    }
  }

  @Test
  void theWorstGlobsCostTimeLinearInTheName() {
    // 200 characters is the longest server name (apm.model.MAX_NAME_LEN). The naive
    // translation of the first glob (.*..*..* ... .Z) does not finish on the first name.
    List<String> worst =
        List.of("a".repeat(200), "a".repeat(199) + "b", "ab".repeat(100), "a".repeat(100));
    String[] all = Arrays.stream(GLOBS).map(p -> p[1]).toArray(String[]::new);
    Selection any = select(all);
    assertTimeoutPreemptively(
        Duration.ofSeconds(10),
        () -> {
          for (int round = 0; round < 100; round++) {
            for (String name : worst) {
              any.matches(name);
              any.matches(name + "Z");
            }
          }
        });
    for (String name : worst) {
      for (String[] pair : GLOBS) {
        assertEquals(glob(pair[0], name), select(pair[1]).matches(name), pair[0]);
      }
    }
  }
}
