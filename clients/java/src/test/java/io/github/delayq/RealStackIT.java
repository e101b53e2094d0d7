package io.github.delayq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The client against delayd on the real local stack (Kafka
 * 127.0.0.1:9092, Redis 6379, HBase ZooKeeper 2181, {@code make up}): a
 * delayd built from this checkout, run under the shared-stack lock,
 * receives a submit, a cancel by id and due time, a cancel by id, a
 * reschedule, a replace and a recurring series, and a consumer outside
 * delayq checks every delivery. The same delayd serves its HTTP API with
 * a bearer token: ApiClient submits, gets, reschedules, replaces, cancels
 * and lists tasks there, and sees a 401, a 400 and a 409 with their
 * reasons. Without the stack the test is skipped,
 * except under CI=true where it fails.
 */
class RealStackIT {
    static final String BROKERS = "127.0.0.1:9092";
    static final Path REPO = Path.of("").toAbsolutePath().resolve("../..").normalize();

    static void require(boolean ok, String why) {
        if (!ok) {
            if ("true".equals(System.getenv("CI"))) {
                fail(why);
            }
            Assumptions.abort(why);
        }
    }

    static void requireStack() {
        List<String> missing = new ArrayList<>();
        Map<String, Integer> services = new LinkedHashMap<>();
        services.put("Kafka", 9092);
        services.put("Redis", 6379);
        services.put("HBase ZooKeeper", 2181);
        services.forEach((name, port) -> {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 2000);
            } catch (IOException e) {
                missing.add(name + " 127.0.0.1:" + port + " (" + e.getMessage() + ")");
            }
        });
        require(missing.isEmpty(), "local stack not running (make up): " + String.join("; ", missing));
    }

    /**
     * e2etest's shared-stack lock ($TMPDIR/delayq-e2e.lock, flock(2)):
     * every delayd joins the fixed consumer groups on the shared
     * delay-input, so one test package's delayd at a time. The JVM has no
     * flock, so a flock(1) process holds it until its stdin closes.
     */
    static final class SharedLock implements AutoCloseable {
        final Process p;

        SharedLock() throws IOException {
            String tmp = System.getenv().getOrDefault("TMPDIR", "/tmp");
            Path path = Path.of(tmp.isEmpty() ? "/tmp" : tmp, "delayq-e2e.lock");
            p = new ProcessBuilder("flock", "-w", "1800", path.toString(), "sh", "-c", "echo locked; exec cat >/dev/null")
                    .redirectErrorStream(true).start();
            String line = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)).readLine();
            if (!"locked".equals(line)) {
                fail(path + " not taken within 30 min: " + line);
            }
        }

        @Override
        public void close() throws IOException {
            p.getOutputStream().close();
            try {
                p.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            p.destroy();
        }
    }

    /** A port of this helper's range (46000-46099) that is free now. */
    static int freePort(int from) throws IOException {
        for (int port = from; port < 46100; port++) {
            try (ServerSocket s = new ServerSocket()) {
                s.bind(new InetSocketAddress("127.0.0.1", port));
                return port;
            } catch (IOException busy) {
                // next
            }
        }
        throw new IOException("no free port in " + from + "-46099");
    }

    private static Path built;

    /** DELAYQ_DELAYD, or a delayd built from this checkout into dir, once per JVM (the ITs share it). */
    static synchronized Path delayd(Path dir) throws IOException, InterruptedException {
        String given = System.getenv("DELAYQ_DELAYD");
        if (given != null && !given.isEmpty()) {
            return Path.of(given);
        }
        if (built != null && Files.isExecutable(built)) {
            return built;
        }
        Path bin = dir.resolve("delayd");
        Process b = new ProcessBuilder("go", "build", "-o", bin.toString(), "./cmd/delayd").directory(REPO.toFile())
                .redirectErrorStream(true).start();
        String out = new String(b.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, b.waitFor(), "go build delayd: " + out);
        built = bin;
        return bin;
    }

    static void waitFor(String what, Duration timeout, BooleanSupplier cond, Process proc, Path log) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (cond.getAsBoolean()) {
                return;
            }
            if (proc != null && !proc.isAlive()) {
                fail("delayd exited (" + proc.exitValue() + ") while waiting for " + what + "\n" + tail(log));
            }
            Thread.sleep(100);
        }
        fail("timed out after " + timeout + " waiting for " + what + "\n" + tail(log));
    }

    static String tail(Path log) {
        try {
            String s = Files.readString(log);
            return s.substring(Math.max(0, s.length() - 4000));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    /** A delivery seen by the outside consumer. */
    record Got(String id, String at, String value, Map<String, String> headers) {}

    /** Reads the business topic from the start in a thread of its own. */
    static final class Collector implements AutoCloseable {
        final List<Got> got = new ArrayList<>();
        final List<String> errors = new ArrayList<>();
        final Thread t;
        volatile boolean stop;

        Collector(String topic) {
            this(topic, BROKERS);
        }

        Collector(String topic, String brokers) {
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
            p.put(ConsumerConfig.GROUP_ID_CONFIG, "javaclient-check-" + topic);
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            t = new Thread(() -> {
                try (KafkaConsumer<byte[], byte[]> c =
                        new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
                    c.subscribe(List.of(topic));
                    while (!stop) {
                        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                            Map<String, String> h = new HashMap<>();
                            for (Header x : r.headers()) {
                                h.put(x.key(), x.value() == null ? null : new String(x.value(), StandardCharsets.UTF_8));
                            }
                            String v = r.value() == null ? null : new String(r.value(), StandardCharsets.UTF_8);
                            synchronized (got) {
                                got.add(new Got(h.get("delay-id"), h.get("delay-at"), v, h));
                            }
                        }
                    }
                } catch (RuntimeException e) {
                    synchronized (got) {
                        errors.add(e.toString());
                    }
                }
            }, "collector");
            t.setDaemon(true);
            t.start();
        }

        List<Got> byId(String id) {
            synchronized (got) {
                return got.stream().filter(g -> id.equals(g.id())).toList();
            }
        }

        @Override
        public void close() {
            stop = true;
            try {
                t.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Test
    void opsOnTheRealStack() throws Exception {
        requireStack();
        require(System.getenv("DELAYQ_DELAYD") != null || which("go"), "go is not on PATH: cannot build delayd");
        require(which("flock"), "flock(1) is not on PATH: cannot take the shared-stack lock");
        String run = "javaclient" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        Path dir = Files.createTempDirectory("delayq-java-");
        Path bin = delayd(dir);
        String topic = "orders-" + run;
        long t0 = System.nanoTime();
        try (SharedLock lock = new SharedLock();
                Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, BROKERS))) {
            long locked = System.nanoTime();
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
            int http = freePort(46000);
            int api = freePort(http + 1);
            Path log = dir.resolve("delayd.log");
            ProcessBuilder pb = new ProcessBuilder(bin.toString(), "--brokers", BROKERS, "--redis", "127.0.0.1:6379",
                    "--hbase-zk", "127.0.0.1:2181", "--table", run, "--prefix", run, "--tick", "1s", "--salts", "4",
                    "--http", "127.0.0.1:" + http, "--roles", "ingest,dispatcher,scanner,api",
                    "--api", "127.0.0.1:" + api, "--log-level", "info")
                    .redirectErrorStream(true).redirectOutput(log.toFile());
            String token = "tok-" + UUID.randomUUID();
            pb.environment().put("DELAYQ_API_TOKEN", token);
            Process proc = pb.start();
            try {
                waitFor("delayd /readyz", Duration.ofSeconds(120), () -> ready(http), proc, log);
                long up = System.nanoTime();
                exercise(topic, run, proc, log, "http://127.0.0.1:" + api, token);
                System.err.printf("RealStackIT: lock waited %.1fs, delayd ready in %.1fs, ops and deliveries %.1fs%n",
                        (locked - t0) / 1e9, (up - locked) / 1e9, (System.nanoTime() - up) / 1e9);
            } finally {
                proc.destroy(); // SIGTERM: delayd drains and exits
                if (!proc.waitFor(60, TimeUnit.SECONDS)) {
                    proc.destroyForcibly().waitFor();
                }
                admin.deleteTopics(List.of(topic));
            }
        }
    }

    static void exercise(String topic, String run, Process proc, Path log, String apiUrl, String token)
            throws Exception {
        ApiClient api = ApiClient.builder().url(apiUrl).token(token).build();
        Map<String, String> ids = new HashMap<>();
        for (String n : List.of("plain", "byid", "byat", "moved", "replaced", "series", "last", "api-plain",
                "api-cancelled", "api-moved", "api-replaced")) {
            ids.put(n, run + "-" + n);
        }
        try (Collector col = new Collector(topic); Client c = Client.builder().property("bootstrap.servers", BROKERS).build()) {
            Receipt plain = c.submit(Task.to(topic).id(ids.get("plain")).after(Duration.ofSeconds(3)).key("k1")
                    .value("plain").header("trace", "abc").expireAfter(Duration.ofMinutes(10)));
            Receipt byid = c.submit(Task.to(topic).id(ids.get("byid")).after(Duration.ofSeconds(8)).value("byid"));
            c.cancelById(ids.get("byid"));
            Receipt byat = c.submit(Task.to(topic).id(ids.get("byat")).after(Duration.ofSeconds(6)).value("byat"));
            c.cancel(byat.id(), byat.at());
            Receipt movedOld = c.submit(Task.to(topic).id(ids.get("moved")).after(Duration.ofSeconds(20)).value("moved"));
            c.reschedule(ids.get("moved"), Duration.ofSeconds(4));
            c.submit(Task.to(topic).id(ids.get("replaced")).after(Duration.ofSeconds(15)).value("v1"));
            Receipt replaced = c.replace(Task.to(topic).id(ids.get("replaced")).after(Duration.ofSeconds(5)).value("v2"));
            Receipt series = c.submit(Task.to(topic).id(ids.get("series")).after(Duration.ofSeconds(2))
                    .every(Duration.ofSeconds(2)).count(3).value("tick"));
            assertEquals(List.of("delay-input", "delay-input", "delay-input"),
                    List.of(plain.input(), byid.input(), series.input()));
            ApiRun a = exerciseApi(api, ApiClient.builder().url(apiUrl).build(), topic, ids, proc, log);

            waitFor("plain, moved, replaced, 3 occurrences and the API's 3 tasks delivered", Duration.ofSeconds(120),
                    () -> !col.byId(ids.get("plain")).isEmpty() && !col.byId(ids.get("moved")).isEmpty()
                            && !col.byId(ids.get("replaced")).isEmpty() && col.byId(ids.get("series")).size() >= 3
                            && !col.byId(ids.get("api-plain")).isEmpty() && !col.byId(ids.get("api-moved")).isEmpty()
                            && !col.byId(ids.get("api-replaced")).isEmpty(),
                    proc, log);
            // A sentinel due after every time that must not deliver (the old
            // times of the moved tasks, 20 s): when it arrives, the scanner
            // has passed them all.
            c.submit(Task.to(topic).id(ids.get("last")).atMillis(Math.max(movedOld.atMs(), a.movedOld().atMs()) + 3000)
                    .value("last"));
            waitFor("the sentinel", Duration.ofSeconds(120), () -> !col.byId(ids.get("last")).isEmpty(), proc, log);

            List<Got> p = col.byId(ids.get("plain"));
            assertEquals(1, p.size(), "plain: " + p);
            assertEquals(Wire.formatTime(plain.atMs()), p.get(0).at());
            assertEquals("plain", p.get(0).value());
            assertEquals("abc", p.get(0).headers().get("trace"));
            assertEquals("10m0s", p.get(0).headers().get("delay-expire-after"));
            assertEquals(List.of(), col.byId(ids.get("byid")), "cancelled by id, delivered anyway");
            assertEquals(List.of(), col.byId(ids.get("byat")), "cancelled by id and due time, delivered anyway");
            List<Got> m = col.byId(ids.get("moved"));
            assertEquals(1, m.size(), "moved: " + m);
            assertNotEquals(Wire.formatTime(movedOld.atMs()), m.get(0).at(), "moved task delivered at its old time");
            List<Got> r = col.byId(ids.get("replaced"));
            assertEquals(1, r.size(), "replaced: " + r);
            assertEquals(Wire.formatTime(replaced.atMs()), r.get(0).at());
            assertEquals("v2", r.get(0).value());
            List<Got> s = col.byId(ids.get("series"));
            assertEquals(List.of("1", "2", "3"), s.stream().map(g -> g.headers().get("delay-occurrence")).toList());
            assertEquals(List.of(Wire.formatTime(series.atMs()), Wire.formatTime(series.atMs() + 2000),
                    Wire.formatTime(series.atMs() + 4000)), s.stream().map(Got::at).toList());
            assertTrue(s.stream().allMatch(g -> "2s".equals(g.headers().get("delay-every"))
                    && "3".equals(g.headers().get("delay-count"))), "series headers: " + s);
            checkApi(api, topic, ids, a, col);
            synchronized (col.got) {
                assertEquals(List.of(), col.errors);
            }
        }
    }

    /** The receipts of the HTTP API's ops. */
    record ApiRun(Receipt plain, Receipt movedOld, Receipt replaced) {}

    /**
     * The HTTP API's ops on the same delayd: a submit, a cancel (then its
     * state and a 409 for a submit of the id), a reschedule and a replace,
     * a 401 without the token and a 400 naming unix seconds.
     */
    static ApiRun exerciseApi(ApiClient api, ApiClient noToken, String topic, Map<String, String> ids, Process proc, Path log)
            throws Exception {
        Receipt plain = api.submit(Task.to(topic).id(ids.get("api-plain")).after(Duration.ofSeconds(4)).key("k2")
                .value("over http").header("trace", "h1"));
        assertEquals(new Receipt(ids.get("api-plain"), plain.atMs(), "delay-input"), plain);
        api.submit(Task.to(topic).id(ids.get("api-cancelled")).after(Duration.ofSeconds(8)).value("cancelled"));
        Map<String, Object> cancel = api.cancel(ids.get("api-cancelled"));
        assertTrue(String.valueOf(cancel.get("rule")).contains("stays cancelled"), "DELETE answer: " + cancel);
        Receipt movedOld = api.submit(Task.to(topic).id(ids.get("api-moved")).after(Duration.ofSeconds(20)).value("moved"));
        api.reschedule(ids.get("api-moved"), Duration.ofSeconds(5));
        api.submit(Task.to(topic).id(ids.get("api-replaced")).after(Duration.ofSeconds(15)).value("v1"));
        Receipt replaced = api.replace(Task.to(topic).id(ids.get("api-replaced")).after(Duration.ofSeconds(6)).value("v2"));

        ApiException.Unauthorized un = assertThrows(ApiException.Unauthorized.class,
                () -> noToken.get(ids.get("api-plain")));
        assertEquals(401, un.status());
        assertEquals("missing or wrong bearer token", un.reason());
        ApiException.BadRequest bad = assertThrows(ApiException.BadRequest.class,
                () -> api.submit(Task.to(topic).atMillis(1795829478L)));
        assertTrue(bad.reason().contains("looks like unix seconds"), bad.getMessage());

        waitFor("GET of the id cancelled by id says cancelled", Duration.ofSeconds(60),
                () -> "cancelled".equals(state(api, ids.get("api-cancelled"))), proc, log);
        ApiException.IdCancelled ic = assertThrows(ApiException.IdCancelled.class,
                () -> api.submit(Task.to(topic).id(ids.get("api-cancelled")).after(Duration.ofSeconds(5))));
        assertTrue(ic.reason().startsWith("id cancelled: ") && ic.reason().contains("blocked until"), ic.getMessage());
        waitFor("GET of the API's submit", Duration.ofSeconds(60), () -> state(api, ids.get("api-plain")) != null, proc, log);
        assertEquals(plain.atMs(), api.get(ids.get("api-plain")).get("at_ms"));
        return new ApiRun(plain, movedOld, replaced);
    }

    /** The deliveries of the API's tasks, and GET /v1/tasks finding them. */
    static void checkApi(ApiClient api, String topic, Map<String, String> ids, ApiRun a, Collector col) {
        List<Got> p = col.byId(ids.get("api-plain"));
        assertEquals(1, p.size(), "api-plain: " + p);
        assertEquals(Wire.formatTime(a.plain().atMs()), p.get(0).at());
        assertEquals("over http", p.get(0).value());
        assertEquals("h1", p.get(0).headers().get("trace"));
        assertEquals(List.of(), col.byId(ids.get("api-cancelled")), "cancelled over HTTP, delivered anyway");
        List<Got> m = col.byId(ids.get("api-moved"));
        assertEquals(1, m.size(), "api-moved: " + m);
        assertNotEquals(Wire.formatTime(a.movedOld().atMs()), m.get(0).at(), "moved task delivered at its old time");
        List<Got> r = col.byId(ids.get("api-replaced"));
        assertEquals(1, r.size(), "api-replaced: " + r);
        assertEquals(Wire.formatTime(a.replaced().atMs()), r.get(0).at());
        assertEquals("v2", r.get(0).value());
        Map<String, Object> page = api.list(Map.of("topic", topic, "key", "k2", "from", "-1h", "state", "any"));
        List<?> tasks = (List<?>) page.get("tasks");
        assertEquals(List.of(ids.get("api-plain")), tasks.stream().map(t -> ((Map<?, ?>) t).get("id")).toList(),
                "GET /v1/tasks?key=k2: " + page);
    }

    static String state(ApiClient api, String id) {
        try {
            return (String) api.get(id).get("state");
        } catch (ApiException.NotFound e) {
            return null;
        }
    }

    static boolean ready(int port) {
        try {
            HttpResponse<Void> r = HttpClient.newHttpClient().send(
                    HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/readyz"))
                            .timeout(Duration.ofSeconds(2)).build(),
                    HttpResponse.BodyHandlers.discarding());
            return r.statusCode() == 200;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    static boolean which(String cmd) {
        for (String d : System.getenv().getOrDefault("PATH", "").split(":")) {
            if (Files.isExecutable(Path.of(d, cmd))) {
                return true;
            }
        }
        return false;
    }
}
