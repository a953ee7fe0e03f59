// Apache Curator's lock recipes, driven by a test through stdin: one command a line, answers on
// stdout, one a line, each starting with the lock's id. One long-lived JVM serves a whole test run.
//
//   java -cp ... CuratorLocks CONNECT_STRING SESSION_TIMEOUT_MS [USER:PASSWORD]
//   -> "ready" once the session is established ("error ..." and exit 69 when none within 20 s);
//      with USER:PASSWORD the client authenticates with ZooKeeper's digest scheme
//
//   acquire ID KIND PATH TIMEOUT_MS   KIND: write | read (InterProcessReadWriteLock on PATH) or
//                                     mutex (InterProcessMutex on PATH); acquire(TIMEOUT_MS) runs on
//                                     ID's own thread, the command returns at once
//     -> "ID acquired CZXID NODE"     when acquire returned true: its node's czxid and name
//     -> "ID refused"                 when it returned false (the timeout passed; Curator deleted
//                                     its node)
//   release ID                        release() on ID's thread -> "ID released"
//   quit                              closes the client (its session ends, and its nodes with it)
//
// A failure is "ID error <exception>" (or "error <what>" for a bad command). Curator's locks
// belong to the thread that acquired them, so each ID has its own single thread; ids are not
// reused while their lock lives. Output lines are written whole (synchronized on System.out).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.data.Stat;

public final class CuratorLocks {
  private static final class Entry {
    final InterProcessMutex lock;
    final ExecutorService thread = Executors.newSingleThreadExecutor();

    Entry(InterProcessMutex lock) {
      this.lock = lock;
    }
  }

  private final CuratorFramework client;
  private final Map<String, Entry> locks = new HashMap<>();  // main thread only

  private CuratorLocks(CuratorFramework client) {
    this.client = client;
  }

  private static void say(String line) {
    synchronized (System.out) {
      System.out.println(line);
      System.out.flush();
    }
  }

  private InterProcessMutex newLock(String kind, String path) {
    switch (kind) {
      case "write":
        return new InterProcessReadWriteLock(client, path).writeLock();
      case "read":
        return new InterProcessReadWriteLock(client, path).readLock();
      case "mutex":
        return new InterProcessMutex(client, path);
      default:
        throw new IllegalArgumentException("unknown lock kind " + kind);
    }
  }

  // The node the lock holds (InterProcessMutex.getLockPath is protected).
  private static String lockPath(InterProcessMutex lock) throws Exception {
    Method method = InterProcessMutex.class.getDeclaredMethod("getLockPath");
    method.setAccessible(true);
    return (String) method.invoke(lock);
  }

  private void acquire(String id, String kind, String path, long timeoutMs) {
    if (locks.containsKey(id)) {
      say(id + " error id in use");
      return;
    }
    Entry entry = new Entry(newLock(kind, path));
    locks.put(id, entry);
    entry.thread.submit(() -> {
      try {
        if (!entry.lock.acquire(timeoutMs, TimeUnit.MILLISECONDS)) {
          say(id + " refused");
          return;
        }
        String node = lockPath(entry.lock);
        Stat stat = client.checkExists().forPath(node);
        say(id + " acquired " + (stat == null ? -1 : stat.getCzxid()) + " " + ZKPaths.getNodeFromPath(node));
      } catch (Exception e) {
        say(id + " error " + e);
      }
    });
  }

  private void release(String id) {
    Entry entry = locks.remove(id);
    if (entry == null) {
      say(id + " error no such lock");
      return;
    }
    entry.thread.submit(() -> {
      try {
        entry.lock.release();
        say(id + " released");
      } catch (Exception e) {
        say(id + " error " + e);
      }
    });
    entry.thread.shutdown();
  }

  private void serve() throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      String[] w = line.trim().split(" +");
      try {
        if (w[0].equals("acquire") && w.length == 5) {
          acquire(w[1], w[2], w[3], Long.parseLong(w[4]));
        } else if (w[0].equals("release") && w.length == 2) {
          release(w[1]);
        } else if (w[0].equals("quit")) {
          return;
        } else {
          say("error bad command: " + line);
        }
      } catch (RuntimeException e) {
        say("error " + e);
      }
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 2 && args.length != 3) {
      System.err.println("usage: CuratorLocks CONNECT_STRING SESSION_TIMEOUT_MS [USER:PASSWORD]");
      System.exit(64);
    }
    CuratorFrameworkFactory.Builder builder = CuratorFrameworkFactory.builder()
        .connectString(args[0])
        .sessionTimeoutMs(Integer.parseInt(args[1]))
        .retryPolicy(new ExponentialBackoffRetry(100, 3));
    if (args.length == 3) builder.authorization("digest", args[2].getBytes(StandardCharsets.UTF_8));
    CuratorFramework client = builder.build();
    client.start();
    if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) {
      say("error no session with " + args[0] + " within 20 s");
      System.exit(69);
    }
    say("ready");
    new CuratorLocks(client).serve();
    client.close();
    System.exit(0);  // the lock threads of unreleased ids are not daemons
  }
}
