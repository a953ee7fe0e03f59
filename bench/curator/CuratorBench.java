// bench/curator/CuratorBench.java — Apache Curator's InterProcessMutex on the same server as
// zookeeper_bench, measured the way zookeeper_bench measures dblock and the raw recipe, so that the
// three can be put side by side (scripts/bench-zookeeper.sh compiles it with javac against Debian's
// jars in /usr/share/java and runs it pinned to the client CPU; nothing is downloaded).
//
//   java raw: the raw recipe pair with the Java client (create + get children + delete), before
//             and after the Curator pairs
//   pair:     acquire(10 s) + release of one InterProcessMutex, uncontended, N measured pairs after
//             a warm-up (which also lets the JIT compile the path)
//   hand-off: P contenders, each with its own CuratorFramework (its own session, as the forked
//             processes of zookeeper_bench have) and its own InterProcessMutex on one path, each
//             looping K x acquire(10 s) -> 20 us busy critical section -> release. Contenders are
//             threads of this JVM (pinned with it to one CPU). Hand-off latency: from the start of a
//             release to the return of the next holder's acquire, counted when that holder is another
//             contender that was already waiting (as in bench/contention.h). System.nanoTime is
//             CLOCK_MONOTONIC, as the C++ side's steady_clock.
//
// Usage: java -cp CLASSPATH CuratorBench CONNECT_STRING PAIRS WARMUP ITERATIONS PROCESSES
// Prints a few human lines and BENCH_JSON lines (java_raw_pair before and after curator_pair,
// curator_handoff). Times in µs.

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

public final class CuratorBench {
  static final String ROOT = "/dblock_bench_curator";
  static final int SESSION_TIMEOUT_MS = 10_000;  // as zookeeper_bench's both sides
  static final long CRITICAL_SECTION_NS = 20_000;
  static final long WAIT_S = 10;

  static CuratorFramework client(String connect) throws InterruptedException {
    CuratorFramework c = CuratorFrameworkFactory.newClient(connect, SESSION_TIMEOUT_MS, 10_000, new RetryOneTime(100));
    c.start();
    if (!c.blockUntilConnected(10, TimeUnit.SECONDS)) throw new IllegalStateException("no session: " + connect);
    return c;
  }

  static double percentile(double[] sorted, double q) {
    if (sorted.length == 0) return Double.NaN;
    int rank = (int) Math.ceil(q * sorted.length);
    return sorted[Math.max(1, Math.min(rank, sorted.length)) - 1];
  }

  static String summary(String prefix, double[] samples) {
    double[] s = samples.clone();
    Arrays.sort(s);
    double mean = Arrays.stream(s).average().orElse(Double.NaN);
    return String.format("\"%s_p50_us\":%.3f,\"%s_p90_us\":%.3f,\"%s_p99_us\":%.3f,\"%s_max_us\":%.3f,\"%s_mean_us\":%.3f",
        prefix, percentile(s, 0.5), prefix, percentile(s, 0.9), prefix, percentile(s, 0.99), prefix,
        s.length == 0 ? Double.NaN : s[s.length - 1], prefix, mean).replace("NaN", "null");
  }

  static double p(double[] samples, double q) {
    double[] s = samples.clone();
    Arrays.sort(s);
    return percentile(s, q);
  }

  static void pairs(String connect, int pairs, int warmup) throws Exception {
    try (CuratorFramework c = client(connect)) {
      InterProcessMutex mutex = new InterProcessMutex(c, ROOT + "/bench-lease");
      double[] pair = new double[pairs], acquire = new double[pairs], release = new double[pairs];
      for (int i = -warmup; i < pairs; ++i) {
        long t0 = System.nanoTime();
        if (!mutex.acquire(WAIT_S, TimeUnit.SECONDS)) throw new IllegalStateException("uncontended acquire failed");
        long t1 = System.nanoTime();
        mutex.release();
        long t2 = System.nanoTime();
        if (i < 0) continue;
        acquire[i] = (t1 - t0) / 1e3;
        release[i] = (t2 - t1) / 1e3;
        pair[i] = (t2 - t0) / 1e3;
      }
      System.out.printf("curator pair (InterProcessMutex acquire+release), N=%d after %d warm-up: p50 %.1f us, p99 %.1f us"
          + " (acquire p50 %.1f, release p50 %.1f)%n", pairs, warmup, p(pair, 0.5), p(pair, 0.99), p(acquire, 0.5),
          p(release, 0.5));
      System.out.printf("BENCH_JSON {\"figure\":\"curator_pair\",\"n\":%d,%s,%s,%s}%n", pairs, summary("pair", pair),
          summary("acquire", acquire), summary("release", release));
    }
  }

  // The raw recipe's pair with the Java client Curator wraps (its synchronous calls): create
  // EPHEMERAL_SEQUENTIAL + get children + delete, as zookeeper_bench's floor does with the C client.
  // It separates Curator's own cost from the Java client's.
  static void rawPairs(String connect, int pairs, int warmup) throws Exception {
    try (CuratorFramework c = client(connect)) {
      String dir = ROOT + "/raw-lease";
      if (c.checkExists().forPath(dir) == null) c.create().creatingParentsIfNeeded().forPath(dir);
      ZooKeeper zk = c.getZookeeperClient().getZooKeeper();
      double[] pair = new double[pairs];
      for (int i = -warmup; i < pairs; ++i) {
        long t0 = System.nanoTime();
        String own = zk.create(dir + "/lock-", new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL_SEQUENTIAL);
        List<String> children = zk.getChildren(dir, false);
        if (children.size() != 1) throw new IllegalStateException("raw recipe: not alone in " + dir);
        zk.delete(own, -1);
        long t1 = System.nanoTime();
        if (i >= 0) pair[i] = (t1 - t0) / 1e3;
      }
      System.out.printf("java raw recipe pair (create + get children + delete, the Java client), N=%d: p50 %.1f us, p99 %.1f us%n",
          pairs, p(pair, 0.5), p(pair, 0.99));
      System.out.printf("BENCH_JSON {\"figure\":\"java_raw_pair\",\"n\":%d,%s}%n", pairs, summary("pair", pair));
    }
  }

  // One acquisition of one contender.
  static final class Record {
    int process;
    long start, acquired, releaseStart, releaseEnd, seq;
    boolean ok;
  }

  static void busyWait(long ns) {
    long end = System.nanoTime() + ns;
    while (System.nanoTime() < end) Thread.onSpinWait();
  }

  static void handoff(String connect, int processes, int iterations) throws Exception {
    Record[] records = new Record[processes * iterations];
    AtomicLong nextSeq = new AtomicLong();
    AtomicInteger holders = new AtomicInteger(), violations = new AtomicInteger(), failures = new AtomicInteger();
    CountDownLatch ready = new CountDownLatch(processes), go = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    for (int index = 0; index < processes; ++index) {
      final int me = index;
      Thread t = new Thread(() -> {
        try (CuratorFramework c = client(connect)) {
          InterProcessMutex mutex = new InterProcessMutex(c, ROOT + "/hot");
          ready.countDown();
          go.await();
          for (int j = 0; j < iterations; ++j) {
            Record r = new Record();
            records[me * iterations + j] = r;
            r.process = me;
            r.start = System.nanoTime();
            r.ok = mutex.acquire(WAIT_S, TimeUnit.SECONDS);
            r.acquired = System.nanoTime();
            if (!r.ok) continue;
            r.seq = nextSeq.getAndIncrement();
            if (holders.getAndIncrement() != 0) violations.incrementAndGet();
            busyWait(CRITICAL_SECTION_NS);
            holders.decrementAndGet();
            r.releaseStart = System.nanoTime();
            mutex.release();
            r.releaseEnd = System.nanoTime();
          }
        } catch (Exception e) {
          failures.incrementAndGet();
          e.printStackTrace();
        }
      });
      threads.add(t);
      t.start();
    }
    ready.await();
    go.countDown();
    for (Thread t : threads) t.join();
    if (failures.get() > 0) throw new IllegalStateException(failures.get() + " contenders failed");

    List<Record> held = new ArrayList<>();
    long first = Long.MAX_VALUE, last = Long.MIN_VALUE;
    int timeouts = 0;
    for (Record r : records) {
      first = Math.min(first, r.start);
      if (!r.ok) { ++timeouts; continue; }
      last = Math.max(last, r.releaseEnd);
      held.add(r);
    }
    held.sort((a, b) -> Long.compare(a.seq, b.seq));
    List<Double> latencies = new ArrayList<>();
    int handoffs = 0;
    for (int i = 1; i < held.size(); ++i) {
      Record prev = held.get(i - 1), r = held.get(i);
      if (r.process == prev.process) continue;
      ++handoffs;
      if (r.start < prev.releaseStart) latencies.add((r.acquired - prev.releaseStart) / 1e3);
    }
    double[] lat = latencies.stream().mapToDouble(Double::doubleValue).toArray();
    double share = held.size() < 2 ? Double.NaN : (double) handoffs / (held.size() - 1);
    double throughput = held.size() / ((last - first) / 1e9);
    System.out.printf("curator hand-off, %d contenders x %d: p50 %.1f us, p99 %.1f us, %.0f acquisitions/s, switch %.0f%%,"
        + " timeouts %d, violations %d%n", processes, iterations, p(lat, 0.5), p(lat, 0.99), throughput, 100 * share,
        timeouts, violations.get());
    System.out.printf("BENCH_JSON {\"figure\":\"curator_handoff\",\"processes\":%d,\"iterations\":%d,\"handoffs_measured\":%d,"
        + "%s,\"handoff_share\":%.4f,\"throughput_per_s\":%.1f,\"timeouts\":%d,\"violations\":%d}%n", processes,
        iterations, lat.length, summary("handoff_latency", lat), share, throughput, timeouts, violations.get());
  }

  static void cleanup(String connect) throws Exception {
    try (CuratorFramework c = client(connect)) {
      if (c.checkExists().forPath(ROOT) != null) c.delete().deletingChildrenIfNeeded().forPath(ROOT);
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 5) {
      System.err.println("usage: CuratorBench CONNECT_STRING PAIRS WARMUP ITERATIONS PROCESSES");
      System.exit(2);
    }
    String connect = args[0];
    int pairs = Integer.parseInt(args[1]), warmup = Integer.parseInt(args[2]);
    int iterations = Integer.parseInt(args[3]), processes = Integer.parseInt(args[4]);
    System.out.printf("curator: Apache Curator (Debian's jars), java %s, session timeout %d ms, at %s%n",
        System.getProperty("java.version"), SESSION_TIMEOUT_MS, connect);
    cleanup(connect);
    rawPairs(connect, pairs, warmup);
    pairs(connect, pairs, warmup);
    rawPairs(connect, pairs, 0);  // after as well as before: drift shows as a difference between the two
    handoff(connect, processes, iterations);
    cleanup(connect);
  }
}
