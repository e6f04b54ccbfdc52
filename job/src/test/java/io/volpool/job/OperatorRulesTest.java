package io.volpool.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.volpool.op.Operator;
import io.volpool.ops.Operators;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The registry is the only list of operators: outside {@code io/volpool/ops/} (each operator's
 * package and {@code Operators}), no main source names an operator's type or spells its name in a
 * string. The engine, the backends, the settings and the SQL registration reach operators only
 * through {@code Operators} and the {@code Stage} contract. The benchmark tools ({@code bench}),
 * which measure named operators on purpose, are the one exception.
 */
class OperatorRulesTest {
  private static Path root() {
    return Files.exists(Paths.get("udf")) ? Paths.get(".") : Paths.get("..");
  }

  /** The simple names of every class in an operator's package. */
  private static List<String> operatorTypes() throws Exception {
    List<String> names = new ArrayList<>();
    for (Operator o : Operators.ALL) {
      Path pkg = root().resolve("udf/src/main/java/io/volpool/ops").resolve(o.name());
      assertThat(pkg).as("operator " + o.name() + " lives in package io.volpool.ops." + o.name()).isDirectory();
      try (var files = Files.list(pkg)) {
        files.map(f -> f.getFileName().toString()).filter(f -> f.endsWith(".java"))
            .forEach(f -> names.add(f.substring(0, f.length() - ".java".length())));
      }
    }
    return names;
  }

  @Test
  void noSourceOutsideTheOperatorPackagesNamesAnOperator() throws Exception {
    List<String> types = operatorTypes();
    assertThat(types).contains("MaxPool3dSpec", "AvgPool3dSpec", "FusedOp");
    Pattern type = Pattern.compile("\\b(" + String.join("|", types) + ")\\b");
    Pattern name = Pattern.compile("\"[^\"\\n]*\\b(" + String.join("|", Operators.ALL.stream().map(Operator::name).toList())
        + ")\\b[^\"\\n]*\"");
    List<String> wrong = new ArrayList<>();
    for (PackageRulesTest.Source src : PackageRulesTest.sources()) {
      if (src.pkg().equals("ops") || src.pkg().equals("bench")) {
        continue;
      }
      for (int i = 0; i < src.code().size(); i++) {
        String line = src.code().get(i);
        if (type.matcher(line).find() || name.matcher(line).find()) {
          wrong.add(src.path() + ":" + (i + 1) + ": " + line.trim());
        }
      }
    }
    assertThat(wrong).as("operators named outside io.volpool.ops (add behaviour to the Stage or Operator contract instead)")
        .isEmpty();
  }

  @Test
  void everyOperatorHasSettingsUnderItsNameAndSqlFunctions() {
    for (Operator o : Operators.ALL) {
      assertThat(o.settings()).as(o.name() + "'s settings").isNotEmpty()
          .allMatch(k -> k.key().startsWith("spark.volpool." + o.name() + "."));
      assertThat(o.sqlFunctions()).as(o.name() + "'s SQL functions").isNotEmpty()
          .allMatch(f -> f.name().startsWith("volpool_" + o.name()));
    }
    assertThat(Operators.ALL.stream().map(Operator::name)).doesNotHaveDuplicates()
        .contains("fused", "avgpool3d", "maxpool3d");
  }
}
