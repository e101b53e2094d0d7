package io.github.delayq;

/**
 * A request that breaks the delay contract: delayd would refuse it (into
 * {@code delay-failed}; the HTTP API with 400). Thrown before anything is
 * written; the message names every reason, in the words delayd and the Go
 * and Python clients use.
 */
public class InvalidTaskException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    public InvalidTaskException(String message) {
        super(message);
    }
}
