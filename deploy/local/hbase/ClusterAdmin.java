// ClusterAdmin drives HBase's Admin API for the cluster topology of
// deploy/local/stack (`CLUSTER=1 stack admin ...`, see cluster.sh): the
// region moves, splits, balancer runs and compactions that fault tests and
// drills need and gohbase does not offer. One command per run; output is
// one line per region or server, fields separated by spaces.
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HRegionLocation;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.RegionLocator;

public class ClusterAdmin {
  static final String USAGE = "usage: ClusterAdmin COMMAND [-- COMMAND]...; COMMAND: regions TABLE | move TABLE PORT | split TABLE | balance | compact TABLE";

  public static void main(String[] all) throws Exception {
    if (all.length == 0) {
      fail(USAGE);
    }
    Configuration conf = HBaseConfiguration.create();
    try (Connection conn = ConnectionFactory.createConnection(conf); Admin admin = conn.getAdmin()) {
      // Commands separated by "--" run one after the other on one
      // connection; each answer line ends with the command's duration.
      List<String> cmd = new ArrayList<>();
      for (int i = 0; i <= all.length; i++) {
        if (i < all.length && !all[i].equals("--")) {
          cmd.add(all[i]);
          continue;
        }
        long start = System.nanoTime();
        run(conn, admin, cmd.toArray(new String[0]));
        if (all.length > cmd.size()) {
          System.out.printf("%s took %d ms%n", cmd.get(0), (System.nanoTime() - start) / 1000000);
        }
        cmd.clear();
      }
    }
  }

  static void run(Connection conn, Admin admin, String[] args) throws Exception {
    if (args.length == 0) {
      fail(USAGE);
    }
    {
      switch (args[0]) {
        case "regions":
          // regions TABLE: "ENCODED_NAME PORT START_KEY_HEX" per region.
          need(args, 2);
          for (HRegionLocation l : locations(conn, args[1])) {
            System.out.printf("%s %d %s%n", l.getRegion().getEncodedName(),
                l.getServerName() == null ? -1 : l.getServerName().getPort(),
                hex(l.getRegion().getStartKey()));
          }
          break;
        case "move":
          // move TABLE PORT: every region of TABLE to the RegionServer on PORT.
          need(args, 3);
          ServerName target = server(admin, Integer.parseInt(args[2]));
          int moved = 0;
          for (HRegionLocation l : locations(conn, args[1])) {
            if (!target.equals(l.getServerName())) {
              admin.move(l.getRegion().getEncodedNameAsBytes(), target);
              moved++;
            }
          }
          System.out.printf("moved %d%n", moved);
          break;
        case "split":
          // split TABLE: flush it, then split the first region that has a
          // split point (a region without store files has none).
          need(args, 2);
          TableName table = TableName.valueOf(args[1]);
          admin.flush(table);
          Exception last = null;
          for (HRegionLocation l : locations(conn, args[1])) {
            try {
              admin.splitRegionAsync(l.getRegion().getRegionName()).get(60, TimeUnit.SECONDS);
              System.out.printf("split %s%n", l.getRegion().getEncodedName());
              return;
            } catch (Exception e) {
              last = e;
            }
          }
          fail("no region of " + args[1] + " could be split: " + last);
          break;
        case "balance":
          admin.balancerSwitch(true, true);
          System.out.printf("balanced %b%n", admin.balance(true));
          break;
        case "compact":
          need(args, 2);
          admin.majorCompact(TableName.valueOf(args[1]));
          System.out.println("major compaction requested");
          break;
        default:
          fail(USAGE);
      }
    }
  }

  static List<HRegionLocation> locations(Connection conn, String table) throws Exception {
    try (RegionLocator rl = conn.getRegionLocator(TableName.valueOf(table))) {
      rl.clearRegionLocationCache();
      return new ArrayList<>(rl.getAllRegionLocations());
    }
  }

  static ServerName server(Admin admin, int port) throws Exception {
    for (ServerName s : admin.getRegionServers()) {
      if (s.getPort() == port) {
        return s;
      }
    }
    fail("no live RegionServer on port " + port);
    return null;
  }

  static String hex(byte[] b) {
    StringBuilder s = new StringBuilder();
    for (byte x : b) {
      s.append(String.format("%02x", x));
    }
    return s.length() == 0 ? "-" : s.toString();
  }

  static void need(String[] args, int n) {
    if (args.length != n) {
      fail(USAGE);
    }
  }

  static void fail(String msg) {
    System.err.println("ClusterAdmin: " + msg);
    System.exit(1);
  }
}
