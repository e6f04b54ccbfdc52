import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.*;
import java.util.*;
public class ListCost {
  public static void main(String[] a) throws Exception {
    Path root = new Path(a[0]);
    FileSystem fs = root.getFileSystem(new Configuration());
    for (int round = 0; round < 3; round++) {
      long t0 = System.nanoTime();
      int n = 0;
      RemoteIterator<LocatedFileStatus> it = fs.listFiles(root, true);
      while (it.hasNext()) { it.next(); n++; }
      long t1 = System.nanoTime();
      int m = 0;
      ArrayDeque<Path> dirs = new ArrayDeque<>(List.of(root));
      while (!dirs.isEmpty()) {
        RemoteIterator<FileStatus> j = fs.listStatusIterator(dirs.pop());
        while (j.hasNext()) { FileStatus f = j.next(); if (f.isDirectory()) dirs.push(f.getPath()); else m++; }
      }
      long t2 = System.nanoTime();
      System.out.printf("round %d: listFiles %d files in %.0f ms; listStatus walk %d files in %.0f ms%n", round, n, (t1 - t0) / 1e6, m, (t2 - t1) / 1e6);
    }
  }
}
