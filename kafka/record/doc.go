// Package record converts between delayq's own message type
// (payload.Message, payload.Header) and kafka-go's (kafka.Message,
// kafka.Header). The stages decide on delayq's types; they call these
// functions only where they meet a kafka-go reader or writer, so that a
// change of Kafka client touches the kafka/ folder and those edges.
//
// Every conversion copies the header slice (the two header types are
// distinct) and shares the keys, values and header values: a message and
// its conversion alias the same bytes. Nil stays nil: a nil header slice
// converts to a nil one, a nil value to a nil value.
package record
