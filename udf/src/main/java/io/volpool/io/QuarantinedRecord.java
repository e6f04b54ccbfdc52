package io.volpool.io;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A bad record a task set aside instead of failing ({@code spark.volpool.badRecords.path}), as one
 * line of JSON in the task's committed side file and in the run's {@code bad_records.json}: the
 * record's name, its id column, its file and row there, and the rule it broke. Immutable value.
 *
 * @param record the record as messages name it ({@code id=...}, {@code row 3 of FILE}, or a file's path)
 * @param id the row's id column; null when the input has none (.npy files, rows without ids)
 * @param file the file holding it
 * @param row its row in {@code file}, counted from 0; -1 for a whole file (an .npy)
 * @param rule the rule it broke, as the failure would have said it
 */
public record QuarantinedRecord(String record, String id, String file, long row, String rule) {
  private static final ObjectMapper JSON = new ObjectMapper();
  /** The folder of a task's side file, in the task's committed output (left out of what is counted as data). */
  public static final String FOLDER = "_bad_records";

  /** {@code e}'s record; {@code where} is the source it came from (null: {@code e} names a whole file). */
  public static QuarantinedRecord of(BadRecordException e, VolumeSource where) {
    String rule = e.rule();
    if (where == null) {
      return new QuarantinedRecord(e.record(), null, e.record(), -1, rule);
    }
    String id = e.record().startsWith("id=") ? e.record().substring(3) : null;
    return new QuarantinedRecord(e.record(), id, where.filePath(), where.rowInFile(), rule);
  }

  /** The record as one line of JSON (no newline). */
  public String toJson() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("record", record);
    m.put("id", id);
    m.put("file", file);
    m.put("row", row < 0 ? null : row);
    m.put("rule", rule);
    try {
      return JSON.writeValueAsString(m);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The name of task {@code task}'s side file in {@link #FOLDER}. */
  public static String fileName(int task) {
    return String.format(java.util.Locale.ROOT, "task-%05d.json", task);
  }
}
