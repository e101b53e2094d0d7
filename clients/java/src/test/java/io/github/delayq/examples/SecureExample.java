package io.github.delayq.examples;

import io.github.delayq.Client;

/** The SASL_SSL example of docs/clients.md: compiled, not run (it needs a secured broker; SecureStackIT runs one). */
final class SecureExample {
    private SecureExample() {}

    static Client secured() {
        // doc-begin sasl
        Client c = Client.builder()
                .property("bootstrap.servers", "broker-1:9093")
                .property("security.protocol", "SASL_SSL")
                .property("sasl.mechanism", "SCRAM-SHA-512")
                .property("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required "
                        + "username=\"producer\" password=\"" + System.getenv("KAFKA_PASSWORD") + "\";")
                .property("ssl.truststore.type", "PEM")
                .property("ssl.truststore.location", "/etc/kafka/ca.pem")
                .build();
        // doc-end sasl
        return c;
    }
}
