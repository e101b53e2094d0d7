package io.github.delayq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.delayq.examples.ApiQuickstart;
import io.github.delayq.examples.Quickstart;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalTime;
import java.time.ZoneId;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The Java examples of docs/clients.md (the page holds them verbatim:
 * DocExamplesTest) run against {@code delayd --embedded} with the HTTP
 * API, Kafka and Redis in delayd's process on free ports (no shared
 * stack, no lock): Quickstart with the embedded broker, ApiQuickstart with
 * the API's URL, as their arguments. Their effects are checked through the
 * API: the Kafka series pending at tomorrow's 09:00 in Berlin, o-42
 * cancelled by id. The SASL example only compiles (SecureStackIT runs a
 * secured client).
 */
class DocExamplesIT {
    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket()) {
            s.bind(new InetSocketAddress("127.0.0.1", 0));
            return s.getLocalPort();
        }
    }

    @Test
    void examplesRunOnEmbeddedDelayd() throws Exception {
        RealStackIT.require(System.getenv("DELAYQ_DELAYD") != null || RealStackIT.which("go"),
                "go is not on PATH: cannot build delayd");
        Path dir = Files.createTempDirectory("delayq-java-doc-");
        Path bin = RealStackIT.delayd(dir);
        String brokers = "127.0.0.1:" + freePort();
        String http = "127.0.0.1:" + freePort();
        String apiUrl = "http://127.0.0.1:" + freePort();
        Path log = dir.resolve("delayd.log");
        ProcessBuilder pb = new ProcessBuilder(bin.toString(), "--embedded", "--brokers", brokers, "--redis",
                "127.0.0.1:" + freePort(), "--http", http, "--api", apiUrl.substring("http://".length()),
                "--roles", "ingest,dispatcher,scanner,api", "--log-level", "info")
                .redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().remove("DELAYQ_API_TOKEN");
        Process proc = pb.start();
        try {
            RealStackIT.waitFor("delayd --embedded /readyz", Duration.ofSeconds(120),
                    () -> RealStackIT.ready(Integer.parseInt(http.substring(http.indexOf(':') + 1))), proc, log);
            String out = captured(() -> {
                Quickstart.main(new String[] {brokers});
                ApiQuickstart.main(new String[] {apiUrl});
            });
            check(out, ApiClient.builder().url(apiUrl).build(), proc, log);
        } finally {
            proc.destroy();
            if (!proc.waitFor(60, TimeUnit.SECONDS)) {
                proc.destroyForcibly().waitFor();
            }
        }
    }

    static void check(String out, ApiClient api, Process proc, Path log) throws Exception {
        Matcher series = Pattern.compile("(?m)^series (\\S+) first at (\\S+)$").matcher(out);
        assertTrue(series.find(), "Quickstart printed no series: " + out);
        assertTrue(Pattern.compile("(?m)^\\{id=o-42, state=pending, ").matcher(out).find(), "ApiQuickstart's get: " + out);
        RealStackIT.waitFor("o-42 cancelled by id", Duration.ofSeconds(60),
                () -> "cancelled".equals(RealStackIT.state(api, "o-42")), proc, log);
        RealStackIT.waitFor("the digest series stored", Duration.ofSeconds(60),
                () -> !((List<?>) api.list(Map.of("topic", "digest")).get("tasks")).isEmpty(), proc, log);
        List<?> tasks = (List<?>) api.list(Map.of("topic", "digest")).get("tasks");
        assertEquals(1, tasks.size(), "digest: " + tasks);
        Map<?, ?> t = (Map<?, ?>) tasks.get(0);
        assertEquals(series.group(1), t.get("id"));
        Instant first = Instant.ofEpochMilli((Long) t.get("at_ms"));
        assertEquals(series.group(2), first.toString());
        assertEquals(LocalTime.of(9, 0), first.atZone(ZoneId.of("Europe/Berlin")).toLocalTime());
        Map<?, ?> h = (Map<?, ?>) t.get("headers");
        assertEquals(List.of("0 9 * * *", "30", "1h0m0s"),
                List.of(h.get("delay-cron"), h.get("delay-count"), h.get("delay-expire-after")));
    }

    interface Body {
        void run() throws Exception;
    }

    /** What body prints to System.out, printed too. */
    static String captured(Body body) throws Exception {
        PrintStream old = System.out;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        System.setOut(new PrintStream(buf, true, StandardCharsets.UTF_8));
        try {
            body.run();
        } finally {
            System.setOut(old);
            String s = buf.toString(StandardCharsets.UTF_8);
            old.print(s);
        }
        return buf.toString(StandardCharsets.UTF_8);
    }
}
