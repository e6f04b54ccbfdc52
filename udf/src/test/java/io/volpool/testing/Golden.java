package io.volpool.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.volpool.format.Npy;
import io.volpool.format.NpyArray;
import io.volpool.format.SafeTensors;
import io.volpool.op.AvgPool3dSpec;
import io.volpool.op.FusedModel;
import io.volpool.op.FusedOp;
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

/** The PyTorch reference cases in {@code ../shared/golden}, read in place (never copied into the repo). */
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

    public AvgPool3dSpec avgPool() {
      JsonNode a = avgParams();
      return new AvgPool3dSpec(a.get("kernel_size").asInt(), a.get("stride").asInt(), a.get("padding").asInt(),
          a.get("ceil_mode").asBoolean(), a.get("count_include_pad").asBoolean());
    }

    public Pipeline pipeline() {
      List<Stage> st = new ArrayList<>();
      if (!op().equals("avgpool3d")) {
        st.add(fused());
      }
      if (!op().equals("fused")) {
        st.add(avgPool());
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

  public static List<Case> cases() {
    Path r = root();
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
