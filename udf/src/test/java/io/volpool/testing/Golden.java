package io.volpool.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.volpool.format.Npy;
import io.volpool.format.NpyArray;
import io.volpool.format.SafeTensors;
import io.volpool.ops.avgpool3d.AvgPool3dSpec;
import io.volpool.ops.fused.FusedModel;
import io.volpool.ops.fused.FusedOp;
import io.volpool.ops.maxpool3d.MaxPool3dSpec;
import io.volpool.op.Pipeline;
import io.volpool.op.Stage;
import io.volpool.op.VolumeShape;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.stream.Stream;

/**
 * The PyTorch reference cases: the shared ones in {@code ../shared/golden}, read in place (never
 * copied into the repo), and the project's own in {@code udf/src/test/resources/golden} (written by
 * {@code scripts/golden/make-maxpool-golden.py}), in the same layout.
 */
public final class Golden {
  private Golden() {}

  /** The golden folder: system property {@code volpool.golden} (set by the build), else {@code ../shared/golden}. */
  public static Path root() {
    String p = System.getProperty("volpool.golden");
    Path r = p != null ? Paths.get(p) : Paths.get("..", "..", "shared", "golden");
    if (!Files.isDirectory(r)) {
      r = Paths.get("..", "shared", "golden");
    }
    if (!Files.isDirectory(r)) {
      throw new IllegalStateException("golden cases not found at " + r.toAbsolutePath()
          + "; they live in ../shared/golden beside the checkout (set -Dvolpool.golden=DIR)");
    }
    return r.normalize();
  }

  /**
   * The project's own cases: system property {@code volpool.golden.project}, else
   * {@code src/test/resources/golden} of the udf module (from either module's folder).
   */
  public static Path projectRoot() {
    String p = System.getProperty("volpool.golden.project");
    List<Path> candidates = p != null ? List.of(Paths.get(p))
        : List.of(Paths.get("..", "udf", "src", "test", "resources", "golden"), Paths.get("udf", "src", "test", "resources", "golden"));
    for (Path r : candidates) {
      if (Files.isDirectory(r)) {
        return r.normalize();
      }
    }
    throw new IllegalStateException("the project's golden cases were not found at " + candidates + " (from "
        + Paths.get("").toAbsolutePath() + "); set -Dvolpool.golden.project=DIR");
  }

  /**
   * The dtype references ({@code udf/src/test/resources/dtypes}, beside the project's golden cases):
   * found from either module's folder and from the repository root, where the GPU machine runs the tests.
   */
  public static Path dtypesDir() {
    return projectRoot().toAbsolutePath().getParent().resolve("dtypes").normalize();
  }

  /** One case: its parameters, input, expected output and (fused cases) model file. */
  public record Case(String name, Path dir, JsonNode json) {
    public String op() {
      return json.get("op").asText();
    }

    public NpyArray input() {
      return read(dir.resolve("input.npy"));
    }

    public NpyArray expected() {
      return read(dir.resolve("expected.npy"));
    }

    public Path model() {
      return dir.resolve("model.safetensors");
    }

    public JsonNode fusedParams() {
      return json.get("fused");
    }

    public JsonNode avgParams() {
      return json.get("avgpool");
    }

    public FusedOp fused() {
      JsonNode f = fusedParams();
      try {
        return FusedModel.load(SafeTensors.read(Files.readAllBytes(model()), model().toString()),
            new FusedModel.Params(OptionalInt.of(f.get("stride").asInt()), OptionalInt.of(f.get("padding").asInt()),
                OptionalInt.of(f.get("output_padding").asInt()), OptionalInt.of(f.get("pool_kernel").asInt())));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    public JsonNode maxParams() {
      return json.get("maxpool3d");
    }

    public MaxPool3dSpec maxPool() {
      JsonNode a = maxParams();
      return new MaxPool3dSpec(a.get("kernel_size").asInt(), a.get("stride").asInt(), a.get("padding").asInt(),
          a.get("dilation").asInt(), a.get("ceil_mode").asBoolean());
    }

    /** The stage names in order: {@code op} is one name, a comma list, or {@code pipeline} (fused then avgpool3d). */
    public List<String> stageNames() {
      return List.of((op().equals("pipeline") ? "fused,avgpool3d" : op()).split(","));
    }

    public AvgPool3dSpec avgPool() {
      JsonNode a = avgParams();
      return new AvgPool3dSpec(a.get("kernel_size").asInt(), a.get("stride").asInt(), a.get("padding").asInt(),
          a.get("ceil_mode").asBoolean(), a.get("count_include_pad").asBoolean());
    }

    public Pipeline pipeline() {
      List<Stage> st = new ArrayList<>();
      for (String n : stageNames()) {
        st.add(switch (n) {
          case "fused" -> fused();
          case "avgpool3d" -> avgPool();
          case "maxpool3d" -> maxPool();
          default -> throw new IllegalStateException(name + ": unknown op " + n);
        });
      }
      return new Pipeline(st);
    }

    /** The input's volume shape {@code [C,D,H,W]} and batch size N. */
    public VolumeShape volumeShape() {
      long[] s = input().shape();
      return new VolumeShape((int) s[1], (int) s[2], (int) s[3], (int) s[4]);
    }

    public int batch() {
      return (int) input().shape()[0];
    }

    @Override
    public String toString() {
      return name;
    }
  }

  /** Every case: the shared ones, then the project's own. */
  public static List<Case> cases() {
    List<Case> out = new ArrayList<>(casesIn(root()));
    out.addAll(casesIn(projectRoot()));
    return out;
  }

  private static List<Case> casesIn(Path r) {
    try (Stream<Path> s = Files.list(r)) {
      List<Case> out = new ArrayList<>();
      for (Path d : s.filter(Files::isDirectory).sorted().toList()) {
        JsonNode j = new ObjectMapper().readTree(d.resolve("case.json").toFile());
        out.add(new Case(d.getFileName().toString(), d, j));
      }
      if (out.isEmpty()) {
        throw new IllegalStateException("no golden cases under " + r);
      }
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public static Case get(String name) {
    return cases().stream().filter(c -> c.name().equals(name)).findFirst()
        .orElseThrow(() -> new IllegalArgumentException("no golden case " + name));
  }

  public static NpyArray read(Path p) {
    try {
      return Npy.read(Files.readAllBytes(p), p.toString());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
