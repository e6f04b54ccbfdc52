package io.volpool.ops.fused;

import io.volpool.op.VolumeShape;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The fused operator rewritten as one small stencil per output. A ConvTranspose3d followed by a
 * P-wide average pool reads, along each dimension, a few input positions per pooled output; the
 * kernel taps that land on the same input position are summed ahead of time, so each output is
 * {@code sum_ci sum_taps x * Weff + const}. For the reference configuration (k=3, s=2, p=1, P=2)
 * that is 2 taps per dimension: 8 per input channel, 24 multiply-adds instead of 81.
 *
 * <p>Per dimension the tap pattern of an output depends only on its phase (and on clipping at the
 * borders), so the effective weights are computed once per combination of the three dimensions'
 * patterns. Immutable; built once per (operator, input shape) and shared by the CPU and CUDA backends.
 */
public final class FusedStencil {
  /** The taps of one dimension: for each output index j, the first input index and a pattern id. */
  public static final class Dim {
    /** Output length. */
    public final int out;
    /** Taps per pattern (the largest group count; shorter patterns are padded with zero-weight taps). */
    public final int taps;
    /** For output j: the input index of tap 0; tap g reads input {@code start[j] + offset[pattern[j]][g]}. */
    public final int[] start;
    /** For output j: its pattern id. */
    public final int[] pattern;
    /** Per pattern, per tap: input offset from start (padding taps: 0). */
    public final int[][] offset;
    /** Per pattern, per tap: the kernel indices summed into this tap (padding taps: none). */
    public final int[][][] kernelIdx;

    Dim(int out, int taps, int[] start, int[] pattern, int[][] offset, int[][][] kernelIdx) {
      this.out = out;
      this.taps = taps;
      this.start = start;
      this.pattern = pattern;
      this.offset = offset;
      this.kernelIdx = kernelIdx;
    }

    public int patterns() {
      return offset.length;
    }
  }

  private final FusedOp op;
  private final VolumeShape in;
  private final VolumeShape out;
  private final Dim d;
  private final Dim h;
  private final Dim w;
  private final float[] weights;
  private final float[] constant;

  private FusedStencil(FusedOp op, VolumeShape in) {
    this.op = op;
    this.in = in;
    this.out = op.outputShape(in);
    int k = op.kernel();
    this.d = dim(in.d(), k, op.stride(), op.padding(), op.poolKernel(), out.d());
    this.h = dim(in.h(), k, op.stride(), op.padding(), op.poolKernel(), out.h());
    this.w = dim(in.w(), k, op.stride(), op.padding(), op.poolKernel(), out.w());
    FusedWeights fw = op.weights();
    int cin = fw.inChannels();
    int cout = fw.outChannels();
    int combos = d.patterns() * h.patterns() * w.patterns();
    int per = comboSize();
    this.weights = new float[combos * per];
    double norm = (double) fw.scale1() * fw.scale2() / ((double) op.poolKernel() * op.poolKernel() * op.poolKernel());
    for (int pd = 0; pd < d.patterns(); pd++) {
      for (int ph = 0; ph < h.patterns(); ph++) {
        for (int pw = 0; pw < w.patterns(); pw++) {
          int base = ((pd * h.patterns() + ph) * w.patterns() + pw) * per;
          for (int ci = 0; ci < cin; ci++) {
            for (int a = 0; a < d.taps; a++) {
              for (int b = 0; b < h.taps; b++) {
                for (int c = 0; c < w.taps; c++) {
                  for (int co = 0; co < cout; co++) {
                    double sum = 0;
                    for (int kd : d.kernelIdx[pd][a]) {
                      for (int kh : h.kernelIdx[ph][b]) {
                        for (int kw : w.kernelIdx[pw][c]) {
                          sum += fw.w(ci, co, kd, kh, kw);
                        }
                      }
                    }
                    weights[base + (((ci * d.taps + a) * h.taps + b) * w.taps + c) * cout + co] = (float) (sum * norm);
                  }
                }
              }
            }
          }
        }
      }
    }
    this.constant = new float[cout];
    for (int co = 0; co < cout; co++) {
      constant[co] = (float) (((double) fw.convBias()[co] * fw.scale1() + fw.bias()[co]) * fw.scale2());
    }
  }

  /** Builds the stencil of {@code op} for inputs of shape {@code in}; rejects shapes the operator cannot take. */
  public static FusedStencil of(FusedOp op, VolumeShape in) {
    return new FusedStencil(op, in);
  }

  static Dim dim(int lin, int k, int s, int p, int pool, int outLen) {
    Map<String, Integer> ids = new HashMap<>();
    List<int[]> offsets = new ArrayList<>();
    List<int[][]> kidx = new ArrayList<>();
    int[] start = new int[outLen];
    int[] pattern = new int[outLen];
    int maxTaps = 1;
    List<int[]> rawOff = new ArrayList<>();
    List<int[][]> rawK = new ArrayList<>();
    for (int j = 0; j < outLen; j++) {
      // (input index -> kernel taps) for conv outputs o in [j*pool, j*pool+pool)
      java.util.TreeMap<Integer, List<Integer>> groups = new java.util.TreeMap<>();
      for (int q = 0; q < pool; q++) {
        int o = j * pool + q;
        for (int kk = 0; kk < k; kk++) {
          int t = o + p - kk;
          if (t < 0 || t % s != 0) {
            continue;
          }
          int i = t / s;
          if (i >= lin) {
            continue;
          }
          groups.computeIfAbsent(i, x -> new ArrayList<>()).add(kk);
        }
      }
      int first = groups.isEmpty() ? Math.min(Math.max(j * pool / s, 0), lin - 1) : groups.firstKey();
      int[] off = new int[groups.size()];
      int[][] ks = new int[groups.size()][];
      int g = 0;
      for (Map.Entry<Integer, List<Integer>> e : groups.entrySet()) {
        off[g] = e.getKey() - first;
        ks[g] = e.getValue().stream().mapToInt(Integer::intValue).sorted().toArray();
        g++;
      }
      maxTaps = Math.max(maxTaps, groups.size());
      String key = Arrays.toString(off) + Arrays.deepToString(ks);
      Integer id = ids.get(key);
      if (id == null) {
        id = rawOff.size();
        ids.put(key, id);
        rawOff.add(off);
        rawK.add(ks);
      }
      start[j] = first;
      pattern[j] = id;
    }
    for (int pi = 0; pi < rawOff.size(); pi++) {
      int[] off = Arrays.copyOf(rawOff.get(pi), maxTaps);
      int[][] ks = new int[maxTaps][];
      for (int g = 0; g < maxTaps; g++) {
        ks[g] = g < rawK.get(pi).length ? rawK.get(pi)[g] : new int[0];
      }
      offsets.add(off);
      kidx.add(ks);
    }
    return new Dim(outLen, maxTaps, start, pattern, offsets.toArray(new int[0][]), kidx.toArray(new int[0][][]));
  }

  public FusedOp op() {
    return op;
  }

  public VolumeShape input() {
    return in;
  }

  public VolumeShape output() {
    return out;
  }

  public Dim d() {
    return d;
  }

  public Dim h() {
    return h;
  }

  public Dim w() {
    return w;
  }

  /** Floats per pattern combination: {@code Cin * tapsD * tapsH * tapsW * Cout}. */
  public int comboSize() {
    return op.inChannels() * d.taps * h.taps * w.taps * op.outChannels();
  }

  /** The id of the weight block used by outputs whose three dimensions have these patterns. */
  public int combo(int pd, int ph, int pw) {
    return (pd * h.patterns() + ph) * w.patterns() + pw;
  }

  /**
   * Effective weights, laid out {@code [combo][ci][a][b][c][co]}, with {@code scale1 * scale2 / P^3}
   * folded in. Callers must not modify the array.
   */
  public float[] weights() {
    return weights;
  }

  /** Per output channel: {@code (convBias * scale1 + bias) * scale2}. Callers must not modify the array. */
  public float[] constant() {
    return constant;
  }
}
