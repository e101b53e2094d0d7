package io.github.delayq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The client over SASL_SSL with SCRAM-SHA-512, against a private SECURE=1
 * stack that clients/java/test.sh starts with JAVA_SECURE=1 (Kafka's
 * client listener 127.0.0.1:46092 SASL_SSL with ACLs; its PLAINTEXT
 * inter-broker listener 46094, where the test creates the topic and
 * checks deliveries as a super user; Redis TLS on 46079; HBase the shared
 * stack's). The client logs in as user producer, which may write
 * delay-input and nothing else; delayd as user delayq. A wrong password
 * is refused. Skipped unless test.sh started the stack
 * (DELAYQ_JAVA_SECURE_DIR).
 */
class SecureStackIT {
    static final String SASL_SSL = "127.0.0.1:46092";
    static final String INTERNAL = "127.0.0.1:46094";

    @Test
    void scramOverTls() throws Exception {
        String dirName = System.getenv("DELAYQ_JAVA_SECURE_DIR");
        Assumptions.assumeTrue(dirName != null && !dirName.isEmpty(),
                "no private SECURE=1 stack: run JAVA_SECURE=1 clients/java/test.sh");
        Path secure = Path.of(dirName);
        RealStackIT.requireStack(); // the shared HBase
        String run = "javasec" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        Path dir = Files.createTempDirectory("delayq-java-secure-");
        Path bin = RealStackIT.delayd(dir);
        String topic = "biz-orders-" + run; // delayq may write biz-* only
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, INTERNAL))) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
            int http = RealStackIT.freePort(46050);
            Path log = dir.resolve("delayd.log");
            ProcessBuilder pb = new ProcessBuilder(bin.toString(), "--table", run, "--prefix", run, "--tick", "1s",
                    "--salts", "4", "--http", "127.0.0.1:" + http, "--log-level", "info")
                    .redirectErrorStream(true).redirectOutput(log.toFile());
            pb.environment().putAll(env(secure.resolve("delayd.env")));
            Process proc = pb.start();
            try {
                RealStackIT.waitFor("delayd /readyz", Duration.ofSeconds(120), () -> RealStackIT.ready(http), proc, log);
                exercise(secure, topic, run, proc, log);
            } finally {
                proc.destroy();
                if (!proc.waitFor(60, TimeUnit.SECONDS)) {
                    proc.destroyForcibly().waitFor();
                }
            }
        }
    }

    static Properties scram(Path secure, String user, String password) {
        Properties p = new Properties();
        p.put("bootstrap.servers", SASL_SSL);
        p.put("security.protocol", "SASL_SSL");
        p.put("sasl.mechanism", "SCRAM-SHA-512");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
                + user + "\" password=\"" + password + "\";");
        p.put("ssl.truststore.type", "PEM");
        p.put("ssl.truststore.location", secure.resolve("ca.pem").toString());
        return p;
    }

    static void exercise(Path secure, String topic, String run, Process proc, Path log) throws Exception {
        String password = Files.readString(secure.resolve("producer.password")).strip();
        Map<String, String> ids = new HashMap<>();
        for (String n : List.of("plain", "byid", "series")) {
            ids.put(n, run + "-" + n);
        }
        try (RealStackIT.Collector col = new RealStackIT.Collector(topic, INTERNAL);
                Client c = Client.builder().properties(scram(secure, "producer", password)).build()) {
            Receipt plain = c.submit(Task.to(topic).id(ids.get("plain")).after(Duration.ofSeconds(2)).value("plain")
                    .header("trace", "abc"));
            c.submit(Task.to(topic).id(ids.get("byid")).after(Duration.ofSeconds(4)).value("byid"));
            c.cancelById(ids.get("byid"));
            Receipt series = c.submit(Task.to(topic).id(ids.get("series")).after(Duration.ofSeconds(2))
                    .every(Duration.ofSeconds(2)).count(2).value("tick"));
            RealStackIT.waitFor("plain and 2 occurrences delivered", Duration.ofSeconds(120),
                    () -> !col.byId(ids.get("plain")).isEmpty() && col.byId(ids.get("series")).size() >= 2, proc, log);
            // The cancelled task was due at 4 s, before the second occurrence.
            List<RealStackIT.Got> p = col.byId(ids.get("plain"));
            assertEquals(1, p.size(), "plain: " + p);
            assertEquals(Wire.formatTime(plain.atMs()), p.get(0).at());
            assertEquals("abc", p.get(0).headers().get("trace"));
            assertEquals(List.of(), col.byId(ids.get("byid")), "cancelled by id, delivered anyway");
            assertEquals(List.of(Wire.formatTime(series.atMs()), Wire.formatTime(series.atMs() + 2000)),
                    col.byId(ids.get("series")).stream().map(RealStackIT.Got::at).toList());
        }
        // A wrong password: the op fails, nothing is written.
        Properties bad = scram(secure, "producer", password + "x");
        bad.put("max.block.ms", "15000");
        try (Client c = Client.builder().properties(bad).timeout(Duration.ofSeconds(15)).build()) {
            DeliveryException e = assertThrows(DeliveryException.class,
                    () -> c.submit(Task.to(topic).id(run + "-bad").after(Duration.ofSeconds(1))));
            assertTrue(String.valueOf(e.getMessage()).contains("Authentication failed"), e.getMessage());
        } catch (org.apache.kafka.common.KafkaException e) {
            throw new AssertionError("close after a refused login: " + e, e);
        }
    }

    static Map<String, String> env(Path file) throws IOException {
        Map<String, String> out = new HashMap<>();
        for (String line : Files.readAllLines(file)) {
            int eq = line.indexOf('=');
            if (eq > 0 && !line.startsWith("#")) {
                out.put(line.substring(0, eq), line.substring(eq + 1));
            }
        }
        return out;
    }
}
