package io.volpool.io.npy;

import java.io.Serializable;

/**
 * One .npy input file as planned on the driver.
 *
 * @param path the file's full path
 * @param relative its path below the input root (the output keeps it)
 * @param length its size in bytes when listed
 */
public record NpyFileRef(String path, String relative, long length) implements Serializable {}
