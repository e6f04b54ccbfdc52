package io.volpool.spark;

import io.volpool.op.Pipeline;
import java.io.Serializable;

/**
 * What executors need to process a partition: the pipeline (weights included), the device
 * choice and batching. Built once on the driver from the job settings; small and serializable.
 *
 * @param device {@code auto}, {@code cpu} or {@code gpu}
 * @param batchSize volumes per batch; 0 lets the backend choose from the shape (and free device memory)
 * @param cpuThreads threads of the CPU backend; 0 means all cores
 * @param gpuTasksPerDevice how many tasks may use one GPU at once
 */
public record RunSpec(Pipeline pipeline, String device, int batchSize, int cpuThreads, int gpuTasksPerDevice)
    implements Serializable {}
