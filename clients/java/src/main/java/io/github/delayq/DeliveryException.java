package io.github.delayq;

/** Kafka did not take a message: the producer's send failed or was not acknowledged in time. */
public class DeliveryException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public DeliveryException(String message, Throwable cause) {
        super(message, cause);
    }
}
