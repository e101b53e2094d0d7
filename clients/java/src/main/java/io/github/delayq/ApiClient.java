package io.github.delayq;

import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import org.apache.kafka.common.header.Header;

/**
 * A client of delayd's HTTP API ({@code delayd --roles …,api}; docs/api.md)
 * on the JDK's {@link HttpClient}, for services that do not produce to
 * Kafka themselves:
 *
 * <pre>{@code
 * ApiClient api = ApiClient.builder().url("http://127.0.0.1:8080")
 *         .token(System.getenv("DELAYQ_API_TOKEN")).build();
 * Receipt r = api.submit(Task.to("orders").id("o-42").after(Duration.ofMinutes(30)).value("remind"));
 * }</pre>
 *
 * Tasks are the {@link Task}s of the Kafka {@link Client}; delayd checks
 * them (the API refuses what {@code delay-failed} would), the client only
 * what the API's JSON cannot carry: a key or header value that is not
 * UTF-8, or a header name given twice ({@link InvalidTaskException}). Each
 * write returns once delayd has the request in {@code delay-input}. An
 * answer other than success throws an {@link ApiException} naming the
 * status and the API's reason: {@link ApiException.BadRequest} (400, 413),
 * {@link ApiException.Unauthorized} (401, 403), {@link ApiException.NotFound}
 * (404), {@link ApiException.IdCancelled} (409), {@link
 * ApiException.TooManyRequests} (429), {@link ApiException.ServerError}
 * (5xx, and no answer at all: status 0). Answers other than receipts are
 * the API's JSON as a {@code Map} (objects LinkedHashMap, arrays List,
 * integers Long). Thread-safe.
 */
public final class ApiClient {
    /** The default address: delayd's default {@code --api}. */
    public static final String DEFAULT_URL = "http://127.0.0.1:8080";

    private final String url;
    private final String token;
    private final Duration timeout;
    private final HttpClient http;

    private ApiClient(Builder b) {
        this.url = b.url.replaceAll("/+$", "");
        this.token = b.token;
        this.timeout = b.timeout;
        this.http = b.http != null ? b.http
                : HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(b.timeout).build();
    }

    /** A builder with the defaults. */
    public static Builder builder() {
        return new Builder();
    }

    /** POST /v1/tasks: submits task (give exactly one of at and after); its receipt. */
    public Receipt submit(Task task) {
        return receipt(send("POST", "/v1/tasks", body(task, true)));
    }

    /**
     * GET /v1/tasks/{id}: {@code {"id", "state", "at", "at_ms"}} and, for
     * an id cancelled by id, until when it is blocked. {@link
     * ApiException.NotFound} until ingest stored a task of the id.
     */
    public Map<String, Object> get(String id) {
        return send("GET", path(id), null);
    }

    /** PATCH /v1/tasks/{id}: moves the task with this id to at. */
    public Map<String, Object> reschedule(String id, Instant at) {
        Objects.requireNonNull(at, "at");
        return send("PATCH", path(id), Map.of("at", at.toEpochMilli()));
    }

    /** PATCH /v1/tasks/{id}: moves the task with this id to now + after. */
    public Map<String, Object> reschedule(String id, Duration after) {
        Objects.requireNonNull(after, "after");
        return send("PATCH", path(id), Map.of("after", Durations.format(after)));
    }

    /**
     * PUT /v1/tasks/{id} of task's id (required): task takes the place of
     * the id's task, the old one never delivered; no recurrence. {@link
     * ApiException.IdCancelled} for an id a cancel by id blocks.
     */
    public Receipt replace(Task task) {
        if (task.id == null || task.id.isEmpty()) {
            throw new InvalidTaskException("a replace needs the task id");
        }
        return receipt(send("PUT", path(task.id), body(task, false)));
    }

    /**
     * DELETE /v1/tasks/{id}: cancels the id whatever its due time; the id
     * stays blocked for delayd's {@code --max-delay} + {@code --retention}
     * ({@code "rule"} of the answer).
     */
    public Map<String, Object> cancel(String id) {
        return send("DELETE", path(id), null);
    }

    /**
     * GET /v1/tasks with these filters ({@code topic}, {@code key}, {@code
     * from}, {@code to}, {@code state}, {@code limit}, {@code cursor}; see
     * docs/api.md): {@code {"tasks": [...], "next"?, "examined"}}. Pass
     * {@code "cursor"} = {@code "next"} of the previous page for the
     * following one.
     */
    public Map<String, Object> list(Map<String, ?> filters) {
        StringBuilder q = new StringBuilder();
        for (Map.Entry<String, ?> e : new TreeMap<String, Object>(filters).entrySet()) {
            if (e.getValue() == null) {
                continue;
            }
            q.append(q.length() == 0 ? "?" : "&").append(enc(e.getKey())).append('=').append(enc(e.getValue().toString()));
        }
        return send("GET", "/v1/tasks" + q, null);
    }

    // ---- the request ----

    private Map<String, Object> send(String method, String path, Map<String, Object> body) {
        String request = method + " " + path;
        HttpRequest.Builder rb = HttpRequest.newBuilder(URI.create(url + path)).timeout(timeout);
        if (body == null) {
            rb.method(method, HttpRequest.BodyPublishers.noBody());
        } else {
            rb.header("Content-Type", "application/json")
                    .method(method, HttpRequest.BodyPublishers.ofString(Json.write(body), StandardCharsets.UTF_8));
        }
        if (token != null && !token.isEmpty()) {
            rb.header("Authorization", "Bearer " + token);
        }
        HttpResponse<String> resp;
        try {
            resp = http.send(rb.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new ApiException.ServerError(request, 0, "no answer: " + e, null, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ApiException.ServerError(request, 0, "interrupted", null, e);
        }
        int status = resp.statusCode();
        if (status < 200 || status > 299) {
            throw ApiException.of(request, status, reason(resp.body(), status),
                    retryAfter(resp.headers().firstValue("Retry-After").orElse(null)));
        }
        return answer(request, status, resp.body());
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> answer(String request, int status, String text) {
        if (text == null || text.isBlank()) {
            return new LinkedHashMap<>();
        }
        try {
            Object v = Json.parse(text);
            if (v instanceof Map) {
                return (Map<String, Object>) v;
            }
        } catch (RuntimeException bad) { // not JSON (the reader's errors, or an index past a cut-off text)
            // below
        }
        throw new ApiException.ServerError(request, status, "not a JSON object: " + abbrev(text), null, null);
    }

    /** The API's reason: {"error": reason}, else the body's text, else the status. */
    static String reason(String text, int status) {
        if (text != null) {
            try {
                if (Json.parse(text) instanceof Map<?, ?> m && m.get("error") instanceof String s) {
                    return s;
                }
            } catch (RuntimeException notJson) { // as in answer
                // the text itself
            }
            if (!text.isBlank()) {
                return abbrev(text.strip());
            }
        }
        return "HTTP " + status;
    }

    static Duration retryAfter(String v) {
        if (v == null) {
            return null;
        }
        try {
            return Duration.ofSeconds(Long.parseLong(v.strip()));
        } catch (NumberFormatException dateOrJunk) {
            return null;
        }
    }

    private static String abbrev(String s) {
        return s.length() <= 500 ? s : s.substring(0, 500) + "…";
    }

    private static Receipt receipt(Map<String, Object> a) {
        if (a.get("id") instanceof String id && a.get("at_ms") instanceof Long at) {
            return new Receipt(id, at, a.get("input") instanceof String in ? in : "");
        }
        throw new IllegalStateException("delayq api: answer without id and at_ms: " + a);
    }

    static String path(String id) {
        if (id == null || id.isEmpty()) {
            throw new InvalidTaskException("an op needs the task id");
        }
        return "/v1/tasks/" + enc(id);
    }

    private static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
    }

    /** The JSON body of a POST (withId) or PUT of task. */
    static Map<String, Object> body(Task t, boolean withId) {
        List<String> reasons = new ArrayList<>();
        Map<String, Object> b = new LinkedHashMap<>();
        b.put("topic", t.topic);
        if (withId && t.id != null && !t.id.isEmpty()) {
            b.put("id", t.id);
        }
        if (t.atMs != null) {
            b.put("at", t.atMs);
        }
        if (t.after != null) {
            b.put("after", Durations.format(t.after));
        }
        if (t.key != null) {
            String k = utf8(t.key);
            if (k == null) {
                reasons.add("key: the HTTP API takes a UTF-8 key (send binary keys with the Kafka Client)");
            }
            b.put("key", k);
        }
        if (t.value != null) {
            String v = utf8(t.value);
            if (v != null) {
                b.put("value", v);
            } else {
                b.put("value_base64", Base64.getEncoder().encodeToString(t.value));
            }
        }
        if (!t.headers.isEmpty()) {
            b.put("headers", headers(t.headers, reasons));
        }
        putIf(b, "every", t.every == null ? null : Durations.format(t.every));
        putIf(b, "cron", t.cron);
        putIf(b, "tz", t.tz);
        putIf(b, "until", t.untilMs);
        putIf(b, "count", t.count == 0 ? null : t.count);
        putIf(b, "expire_after", t.expireAfter == null ? null : Durations.format(t.expireAfter));
        if (!reasons.isEmpty()) {
            throw new InvalidTaskException(String.join("; ", reasons));
        }
        return b;
    }

    private static Map<String, Object> headers(List<Header> hs, List<String> reasons) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (Header h : hs) {
            String v = h.value() == null ? "" : utf8(h.value());
            if (v == null) {
                reasons.add("header " + h.key() + ": the HTTP API takes UTF-8 header values");
            } else if (out.put(h.key(), v) != null) {
                reasons.add("header " + h.key() + " given more than once: the HTTP API takes one value per name");
            }
        }
        return out;
    }

    private static void putIf(Map<String, Object> b, String k, Object v) {
        if (v != null && !"".equals(v)) {
            b.put(k, v);
        }
    }

    /** b as UTF-8, or null when it is not valid UTF-8. */
    private static String utf8(byte[] b) {
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b)).toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }

    /** Configures an ApiClient; every setting has a default. */
    public static final class Builder {
        private String url = DEFAULT_URL;
        private String token;
        private Duration timeout = Duration.ofSeconds(30);
        private HttpClient http;

        private Builder() {}

        /** The API's base URL (default http://127.0.0.1:8080, delayd's default {@code --api}). */
        public Builder url(String url) {
            this.url = Objects.requireNonNull(url, "url");
            return this;
        }

        /** The bearer token (delayd's {@code DELAYQ_API_TOKEN}); null or empty: none sent. */
        public Builder token(String token) {
            this.token = token;
            return this;
        }

        /** How long a request may take, and a connect (default 30 s). */
        public Builder timeout(Duration d) {
            this.timeout = Objects.requireNonNull(d, "timeout");
            return this;
        }

        /** Your HttpClient (proxies, TLS, an executor); default a new HTTP/1.1 one. */
        public Builder httpClient(HttpClient http) {
            this.http = http;
            return this;
        }

        public ApiClient build() {
            URI u = URI.create(url);
            if (!"http".equals(u.getScheme()) && !"https".equals(u.getScheme())) {
                throw new IllegalArgumentException("delayq: api url " + url + ": want http:// or https://");
            }
            return new ApiClient(this);
        }
    }
}
