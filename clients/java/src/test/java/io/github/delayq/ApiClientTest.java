package io.github.delayq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * ApiClient against a JDK HttpServer that answers as delayd's API does:
 * the requests it sends (method, path, token, content type, body) and the
 * exception each status maps to.
 */
class ApiClientTest {
    /** A request the stub got. */
    record Got(String method, String path, String auth, String contentType, Object body) {}

    HttpServer server;
    final List<Got> got = new ArrayList<>();
    volatile int status = 200;
    volatile String answer = "{}";
    volatile String retryAfter;

    @BeforeEach
    void start() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", ex -> {
            String text = new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
            synchronized (got) {
                got.add(new Got(ex.getRequestMethod(), ex.getRequestURI().getRawPath()
                        + (ex.getRequestURI().getRawQuery() == null ? "" : "?" + ex.getRequestURI().getRawQuery()),
                        ex.getRequestHeaders().getFirst("Authorization"), ex.getRequestHeaders().getFirst("Content-Type"),
                        text.isEmpty() ? null : Json.parse(text)));
            }
            byte[] out = answer.getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().set("Content-Type", "application/json");
            if (retryAfter != null) {
                ex.getResponseHeaders().set("Retry-After", retryAfter);
            }
            ex.sendResponseHeaders(status, out.length == 0 ? -1 : out.length);
            try (OutputStream os = ex.getResponseBody()) {
                os.write(out);
            }
        });
        server.start();
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    ApiClient api(String token) {
        return ApiClient.builder().url("http://127.0.0.1:" + server.getAddress().getPort() + "/").token(token)
                .timeout(Duration.ofSeconds(10)).build();
    }

    Got last() {
        synchronized (got) {
            return got.get(got.size() - 1);
        }
    }

    static Map<String, Object> map(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    @Test
    void submitSendsTheTaskAsJSONWithTheToken() {
        status = 201;
        answer = "{\"id\":\"o-42\",\"at\":\"2026-11-23T04:02:10.123Z\",\"at_ms\":1795406530123,\"input\":\"delay-input\"}\n";
        Receipt r = api("t0k").submit(Task.to("orders").id("o-42").after(Duration.ofMinutes(30)).key("o-42")
                .value(new byte[] {(byte) 0xff, 0}).header("trace", "abc").header("q", "\"\\\n\u00e9")
                .expireAfter(Duration.ofMinutes(10)));
        assertEquals(new Receipt("o-42", 1795406530123L, "delay-input"), r);
        Got g = last();
        assertEquals("POST", g.method());
        assertEquals("/v1/tasks", g.path());
        assertEquals("Bearer t0k", g.auth());
        assertEquals("application/json", g.contentType());
        assertEquals(map("topic", "orders", "id", "o-42", "after", "30m0s", "key", "o-42", "value_base64", "/wA=",
                "headers", map("trace", "abc", "q", "\"\\\n\u00e9"), "expire_after", "10m0s"), g.body());
    }

    @Test
    void recurringSubmitAtAnInstant() {
        status = 201;
        answer = "{\"id\":\"s\",\"at_ms\":1893456000000,\"input\":\"delay-input-slow\"}";
        Receipt r = api(null).submit(Task.to("digest").at(Instant.ofEpochMilli(1893456000000L)).value("v")
                .cron("0 9 * * *").tz("Europe/Berlin").count(30).untilMillis(1896048000000L));
        assertEquals("delay-input-slow", r.input());
        assertNull(last().auth(), "no token, no Authorization header");
        assertEquals(map("topic", "digest", "at", 1893456000000L, "value", "v", "cron", "0 9 * * *", "tz",
                "Europe/Berlin", "until", 1896048000000L, "count", 30L), last().body());
        api(null).submit(Task.to("tick").after(Duration.ZERO).every(Duration.ofSeconds(90)));
        assertEquals(map("topic", "tick", "after", "0s", "every", "1m30s"), last().body());
    }

    @Test
    void opsByIdEscapeTheIdAndSendTheirBodies() {
        ApiClient api = api("");
        status = 202;
        answer = "{\"id\":\"a/b c\",\"rule\":\"…\"}";
        assertEquals("…", api.reschedule("a/b c", Duration.ofHours(1)).get("rule"));
        api.reschedule("a/b c", Instant.ofEpochMilli(1795406530123L));
        api.cancel("a/b c");
        answer = "{\"id\":\"a/b c\",\"at\":\"x\",\"at_ms\":1795406530123,\"input\":\"delay-input\",\"rule\":\"r\"}";
        Receipt r = api.replace(Task.to("orders").id("a/b c").atMillis(1795406530123L).value("v"));
        assertEquals(new Receipt("a/b c", 1795406530123L, "delay-input"), r);
        status = 200;
        answer = "{\"tasks\":[{\"id\":\"x\",\"at_ms\":1}],\"next\":\"c1\",\"examined\":3}";
        Map<String, Object> page = api.list(map("topic", "orders", "from", "now", "limit", 10, "key", "o-&=", "to", null));
        assertEquals("c1", page.get("next"));
        assertEquals(3L, page.get("examined"));
        assertEquals(List.of(map("id", "x", "at_ms", 1L)), page.get("tasks"));
        answer = "{\"id\":\"a/b c\",\"state\":\"pending\",\"at_ms\":1795406530123}";
        assertEquals("pending", api.get("a/b c").get("state"));
        List<Got> want = List.of(
                new Got("PATCH", "/v1/tasks/a%2Fb%20c", null, "application/json", map("after", "1h0m0s")),
                new Got("PATCH", "/v1/tasks/a%2Fb%20c", null, "application/json", map("at", 1795406530123L)),
                new Got("DELETE", "/v1/tasks/a%2Fb%20c", null, null, null),
                new Got("PUT", "/v1/tasks/a%2Fb%20c", null, "application/json",
                        map("topic", "orders", "at", 1795406530123L, "value", "v")),
                new Got("GET", "/v1/tasks?from=now&key=o-%26%3D&limit=10&topic=orders", null, null, null),
                new Got("GET", "/v1/tasks/a%2Fb%20c", null, null, null));
        synchronized (got) {
            assertEquals(want, got);
        }
    }

    @ParameterizedTest
    @CsvSource({
        "400, BadRequest", "413, BadRequest", "401, Unauthorized", "403, Unauthorized", "404, NotFound",
        "409, IdCancelled", "429, TooManyRequests", "500, ServerError", "503, ServerError", "421, ApiException",
    })
    void errorsNameStatusAndReason(int code, String kind) {
        String reason = "id cancelled: submit of id \"o-42\" refused: … blocked until 2026-12-30T03:40:12Z (" + code + ")";
        status = code;
        answer = Json.write(map("error", reason));
        retryAfter = "3";
        ApiException e = assertThrows(ApiException.class,
                () -> api("t").submit(Task.to("orders").id("o-42").after(Duration.ofSeconds(5))));
        assertEquals(kind, e.getClass().getSimpleName());
        assertEquals(code, e.status());
        assertEquals(reason, e.reason());
        assertEquals("delayq api: POST /v1/tasks: " + code + ": " + reason, e.getMessage());
        if (code == 429 || code >= 500 || code == 421) { // the answers that may carry one keep it
            assertEquals(Duration.ofSeconds(3), e.retryAfter().orElseThrow());
        } else {
            assertFalse(e.retryAfter().isPresent());
        }
    }

    @Test
    void notJSONErrorsAndAnswers() {
        status = 502;
        answer = "bad gateway\n";
        ApiException e = assertThrows(ApiException.ServerError.class, () -> api(null).get("x"));
        assertEquals("bad gateway", e.reason());
        assertEquals(502, e.status());
        status = 500;
        answer = "{\"error\":\"cut \\u12";
        assertEquals("{\"error\":\"cut \\u12", assertThrows(ApiException.ServerError.class, () -> api(null).get("x")).reason());
        status = 404;
        answer = "";
        assertEquals("HTTP 404", assertThrows(ApiException.NotFound.class, () -> api(null).get("x")).reason());
        status = 200;
        answer = "[1]";
        assertThrows(ApiException.ServerError.class, () -> api(null).get("x"));
        status = 201;
        answer = "{\"id\":\"x\"}";
        assertThrows(IllegalStateException.class, () -> api(null).submit(Task.to("t").after(Duration.ZERO)));
    }

    @Test
    void unreachableIsAServerErrorWithStatusZero() throws IOException {
        int port;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
            port = s.getLocalPort();
        }
        ApiClient api = ApiClient.builder().url("http://127.0.0.1:" + port).timeout(Duration.ofSeconds(5)).build();
        ApiException e = assertThrows(ApiException.ServerError.class, () -> api.get("x"));
        assertEquals(0, e.status());
        assertTrue(e.getMessage().startsWith("delayq api: GET /v1/tasks/x: no answer: "), e.getMessage());
        assertInstanceOf(IOException.class, e.getCause());
    }

    @Test
    void refusedLocallyWhatJSONCannotCarry() {
        ApiClient api = api(null);
        InvalidTaskException e = assertThrows(InvalidTaskException.class, () -> api.submit(Task.to("t")
                .after(Duration.ZERO).key(new byte[] {(byte) 0xc3}).header("h", "1").header("h", "2")
                .header("b", new byte[] {(byte) 0xff})));
        assertEquals("key: the HTTP API takes a UTF-8 key (send binary keys with the Kafka Client); "
                + "header h given more than once: the HTTP API takes one value per name; "
                + "header b: the HTTP API takes UTF-8 header values", e.getMessage());
        assertThrows(InvalidTaskException.class, () -> api.replace(Task.to("t").after(Duration.ZERO)));
        assertThrows(InvalidTaskException.class, () -> api.get(""));
        assertThrows(IllegalArgumentException.class, () -> ApiClient.builder().url("127.0.0.1:8080").build());
        synchronized (got) {
            assertEquals(List.of(), got, "a refused request was sent");
        }
    }
}
