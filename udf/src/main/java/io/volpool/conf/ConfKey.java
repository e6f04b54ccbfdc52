package io.volpool.conf;

import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One {@code spark.volpool.*} setting, declared once (in {@link VolpoolOptions}): its key, default,
 * one-line documentation, and how its text is parsed and checked into a typed value. Every reader
 * gets the value through {@link #get}, so a setting is parsed and checked in one place, and error
 * messages name the key, the rule and the value. Immutable.
 *
 * @param <T> the value's type
 */
public final class ConfKey<T> {
  /** Parses and checks a setting's text (never null or empty); throws {@link SettingsException} naming the rule. */
  @FunctionalInterface
  public interface Parser<T> {
    T parse(String key, String text);
  }

  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ConfKey.class);
  /** Deprecated keys already warned about in this JVM: each warns once. */
  private static final java.util.Set<String> WARNED = java.util.concurrent.ConcurrentHashMap.newKeySet();

  private final String key;
  private final String defaultValue;
  private final String doc;
  private final Parser<T> parser;
  private final java.util.List<String> aliases;

  private ConfKey(String key, String defaultValue, String doc, Parser<T> parser) {
    this(key, defaultValue, doc, parser, java.util.List.of());
  }

  private ConfKey(String key, String defaultValue, String doc, Parser<T> parser, java.util.List<String> aliases) {
    this.key = key;
    this.defaultValue = defaultValue;
    this.doc = doc;
    this.parser = parser;
    this.aliases = java.util.List.copyOf(aliases);
  }

  /**
   * This key, also read from {@code oldKey}, its name before the settings were renamed: a value
   * under the old name still works and logs a warning (once per JVM) naming the new key.
   */
  public ConfKey<T> formerly(String oldKey) {
    java.util.List<String> a = new java.util.ArrayList<>(aliases);
    a.add(oldKey);
    return new ConfKey<>(key, defaultValue, doc, parser, a);
  }

  /** The deprecated names this key is still read from. */
  public java.util.List<String> aliases() {
    return aliases;
  }

  /** A duration in whole seconds in {@code [min, max]}: {@code 180}, {@code 180s}, {@code 3m}, {@code 1h} (a bare number is seconds). */
  public static ConfKey<Integer> seconds(String key, String defaultValue, int min, int max, String doc) {
    return new ConfKey<>(key, defaultValue, doc, (k, v) -> {
      Matcher m = DURATION.matcher(v.trim().toLowerCase(Locale.ROOT));
      if (!m.matches()) {
        throw new SettingsException(k + " must be a duration such as 180s, 3m or 1h (a bare number is seconds), got '"
            + v + "'");
      }
      long unit = switch (m.group(2) == null ? "s" : m.group(2)) {
        case "m", "min" -> 60;
        case "h" -> 3600;
        default -> 1;
      };
      long s;
      try {
        s = Math.multiplyExact(Long.parseLong(m.group(1)), unit);
      } catch (ArithmeticException | NumberFormatException e) {
        throw new SettingsException(k + " is too large: '" + v + "'");
      }
      if (s < min || s > max) {
        throw new SettingsException(k + " must be between " + min + "s and " + max + "s, got '" + v + "'");
      }
      return (int) s;
    });
  }

  private static final Pattern DURATION = Pattern.compile("(\\d+)\\s*(s|m|min|h)?");

  /** Free text; null when unset without a default. */
  public static ConfKey<String> text(String key, String defaultValue, String doc) {
    return new ConfKey<>(key, defaultValue, doc, (k, v) -> v);
  }

  /** One of {@code allowed}, in any case (the value is lower-cased). */
  public static ConfKey<String> choice(String key, String defaultValue, String doc, String... allowed) {
    return new ConfKey<>(key, defaultValue, doc, (k, v) -> {
      String l = v.toLowerCase(Locale.ROOT);
      if (!Arrays.asList(allowed).contains(l)) {
        throw new SettingsException(k + " must be one of " + String.join(", ", allowed) + ", got '" + v + "'");
      }
      return l;
    });
  }

  /**
   * One of the enum's constants, named in lower case (any case accepted): a typed value, never a
   * string compared elsewhere.
   */
  public static <E extends Enum<E>> ConfKey<E> option(String key, E defaultValue, Class<E> type, String doc) {
    E[] all = type.getEnumConstants();
    String[] names = Arrays.stream(all).map(ConfKey::name).toArray(String[]::new);
    return new ConfKey<>(key, defaultValue == null ? null : name(defaultValue), doc, (k, v) -> {
      String l = v.toLowerCase(Locale.ROOT);
      for (E e : all) {
        if (name(e).equals(l)) {
          return e;
        }
      }
      throw new SettingsException(k + " must be one of " + String.join(", ", names) + ", got '" + v + "'");
    });
  }

  /** An option's name as a setting spells it: the constant in lower case. */
  public static String name(Enum<?> e) {
    return e.name().toLowerCase(Locale.ROOT);
  }

  /**
   * The keys one class declares, in declaration order: each key is added as it is created
   * ({@code KEY = KEYS.add(ConfKey.text(...))}), so no list of them is kept by hand. A key declared
   * twice in a JVM fails that class's initialisation.
   */
  public static final class Declared {
    private static final java.util.Set<String> ALL_KEYS = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final java.util.List<ConfKey<?>> keys = new java.util.ArrayList<>();

    public synchronized <T> ConfKey<T> add(ConfKey<T> k) {
      if (!ALL_KEYS.add(k.key())) {
        throw new IllegalStateException("setting " + k.key() + " is declared twice");
      }
      keys.add(k);
      return k;
    }

    /** Every key added so far, in order. */
    public synchronized java.util.List<ConfKey<?>> all() {
      return java.util.List.copyOf(keys);
    }
  }

  /** An integer in {@code [min, max]}. */
  public static ConfKey<Integer> integer(String key, String defaultValue, int min, int max, String doc) {
    return new ConfKey<>(key, defaultValue, doc, (k, v) -> {
      int i;
      try {
        i = Integer.parseInt(v);
      } catch (NumberFormatException e) {
        throw new SettingsException(k + " must be an integer, got '" + v + "'");
      }
      if (i < min) {
        throw new SettingsException(k + " must be at least " + min + ", got " + i);
      }
      if (i > max) {
        throw new SettingsException(k + " must be at most " + max + ", got " + i);
      }
      return i;
    });
  }

  /** {@code true} or {@code false}, in any case. */
  public static ConfKey<Boolean> bool(String key, String defaultValue, String doc) {
    return new ConfKey<>(key, defaultValue, doc, (k, v) -> {
      String l = v.toLowerCase(Locale.ROOT);
      if (!l.equals("true") && !l.equals("false")) {
        throw new SettingsException(k + " must be true or false, got '" + v + "'");
      }
      return l.equals("true");
    });
  }

  /** A number in {@code (above, atMost]}. */
  public static ConfKey<Double> decimal(String key, String defaultValue, double above, double atMost, String doc) {
    return new ConfKey<>(key, defaultValue, doc, (k, v) -> {
      double d;
      try {
        d = Double.parseDouble(v);
      } catch (NumberFormatException e) {
        throw new SettingsException(k + " must be a number, got '" + v + "'");
      }
      if (!(d > above && d <= atMost)) {
        throw new SettingsException(k + " must be between " + above + " and " + atMost + ", got " + v);
      }
      return d;
    });
  }

  /**
   * A size in bytes ({@code 512m}, {@code 6g}, {@code 6442450944}) in {@code [min, max]}; with
   * {@code auto} allowed, {@code auto} is 0.
   */
  public static ConfKey<Long> bytes(String key, String defaultValue, long min, long max, boolean auto, String range,
      String doc) {
    return new ConfKey<>(key, defaultValue, doc, (k, v) -> {
      String l = v.trim().toLowerCase(Locale.ROOT);
      if (auto && l.equals("auto")) {
        return 0L;
      }
      long b = parseBytes(k, l, auto ? "auto or " : "");
      if (b < min || b > max) {
        throw new SettingsException(k + " must be " + range + ", got '" + v + "'");
      }
      return b;
    });
  }

  /** Any other type: {@code parser} parses and checks. */
  public static <T> ConfKey<T> of(String key, String defaultValue, String doc, Parser<T> parser) {
    return new ConfKey<>(key, defaultValue, doc, parser);
  }

  private static final Pattern SIZE = Pattern.compile("(\\d+)\\s*([kmgt]?)(i?b)?");

  static long parseBytes(String key, String v, String alternatives) {
    Matcher m = SIZE.matcher(v);
    if (!m.matches()) {
      throw new SettingsException(key + " must be " + alternatives + "a size such as 512m, 6g or 6442450944, got '" + v
          + "'");
    }
    int shift = switch (m.group(2)) {
      case "k" -> 10;
      case "m" -> 20;
      case "g" -> 30;
      case "t" -> 40;
      default -> 0;
    };
    try {
      return Math.multiplyExact(Long.parseLong(m.group(1)), 1L << shift);
    } catch (ArithmeticException | NumberFormatException e) {
      throw new SettingsException(key + " is too large: '" + v + "'");
    }
  }

  public String key() {
    return key;
  }

  /** The default as text; null when the setting is required or has no default. */
  public String defaultValue() {
    return defaultValue;
  }

  public String doc() {
    return doc;
  }

  /** The text of this setting in {@code values}, else its default; null when neither is there. */
  public String raw(Map<String, String> values) {
    String v = values.get(key);
    if (v == null || v.isBlank()) {
      for (String a : aliases) {
        String old = values.get(a);
        if (old != null && !old.isBlank()) {
          if (WARNED.add(a)) {
            LOG.warn("setting {} is deprecated; use {} (same value: {}={})", a, key, key, old.trim());
          }
          return old.trim();
        }
      }
    }
    return v == null || v.isBlank() ? defaultValue : v.trim();
  }

  /** The typed, checked value in {@code values} (else the default's); null when unset without a default. */
  public T get(Map<String, String> values) {
    String v = raw(values);
    return v == null ? null : parser.parse(key, v);
  }

  /** {@code key=value}, for messages. */
  public String is(Object value) {
    return key + "=" + value;
  }

  /** The README table row for this key. */
  public String markdownRow() {
    String d = defaultValue == null ? "(none)" : defaultValue.isEmpty() ? "(empty)" : "`" + defaultValue + "`";
    String was = aliases.isEmpty() ? "" : " Formerly " + String.join(", ", aliases.stream().map(a -> "`" + a + "`").toList())
        + " (still read, with a warning).";
    return "| `" + key + "` | " + d + " | " + doc + was + " |";
  }

  @Override
  public String toString() {
    return key;
  }
}
