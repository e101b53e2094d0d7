package io.github.delayq;

import java.time.Duration;
import java.util.Optional;

/**
 * An answer of delayd's HTTP API other than success ({@link ApiClient}):
 * {@link #status} is the HTTP status (0 when the API did not answer) and
 * {@link #reason} the API's {@code {"error": reason}} (the reasons
 * {@code delay-failed} would give). The message names both, with the
 * request: {@code delayq api: POST /v1/tasks: 409: id cancelled: …}.
 * Catch a subclass for one kind of answer, this class for any.
 */
public class ApiException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int status;
    private final String reason;
    private final Duration retryAfter;

    ApiException(String request, int status, String reason, Duration retryAfter, Throwable cause) {
        super("delayq api: " + request + ": " + (status == 0 ? "" : status + ": ") + reason, cause);
        this.status = status;
        this.reason = reason;
        this.retryAfter = retryAfter;
    }

    /** The HTTP status; 0 when the API did not answer (unreachable, timed out). */
    public int status() {
        return status;
    }

    /** The API's reason ({@code "error"} of the JSON answer, or its text). */
    public String reason() {
        return reason;
    }

    /** The answer's {@code Retry-After} (429, 503), when it sent one. */
    public Optional<Duration> retryAfter() {
        return Optional.ofNullable(retryAfter);
    }

    /** The exception of an answer with this status. */
    static ApiException of(String request, int status, String reason, Duration retryAfter) {
        return switch (status) {
            case 400, 413 -> new BadRequest(request, status, reason);
            case 401, 403 -> new Unauthorized(request, status, reason);
            case 404 -> new NotFound(request, reason);
            case 409 -> new IdCancelled(request, reason);
            case 429 -> new TooManyRequests(request, reason, retryAfter);
            default -> status >= 500 ? new ServerError(request, status, reason, retryAfter, null)
                    : new ApiException(request, status, reason, retryAfter, null);
        };
    }

    /** 400 or 413: a request delayd refuses (a bad task, malformed JSON, a body over the limit); nothing written. */
    public static class BadRequest extends ApiException {
        private static final long serialVersionUID = 1L;

        BadRequest(String request, int status, String reason) {
            super(request, status, reason, null, null);
        }
    }

    /** 401 or 403: no or a wrong bearer token (delayd's {@code DELAYQ_API_TOKEN}). */
    public static class Unauthorized extends ApiException {
        private static final long serialVersionUID = 1L;

        Unauthorized(String request, int status, String reason) {
            super(request, status, reason, null, null);
        }
    }

    /** 404: no task of this id is known (yet: a submit is found once ingest stored it). */
    public static class NotFound extends ApiException {
        private static final long serialVersionUID = 1L;

        NotFound(String request, String reason) {
            super(request, 404, reason, null, null);
        }
    }

    /** 409: a submit or replace of an id a cancel by id still blocks; the reason says until when. */
    public static class IdCancelled extends ApiException {
        private static final long serialVersionUID = 1L;

        IdCancelled(String request, String reason) {
            super(request, 409, reason, null, null);
        }
    }

    /** 429: over the API's rate limit ({@code --api-rate}); retry after {@link #retryAfter}. */
    public static class TooManyRequests extends ApiException {
        private static final long serialVersionUID = 1L;

        TooManyRequests(String request, String reason, Duration retryAfter) {
            super(request, 429, reason, retryAfter, null);
        }
    }

    /**
     * 5xx, or no answer at all (status 0, the I/O error as the cause). A
     * 503 means Kafka did not take the request in time: sending it again is
     * harmless (the same id and due time is one task).
     */
    public static class ServerError extends ApiException {
        private static final long serialVersionUID = 1L;

        ServerError(String request, int status, String reason, Duration retryAfter, Throwable cause) {
            super(request, status, reason, retryAfter, cause);
        }
    }
}
