// Package tools holds delayq's operator-side programs that are not part of the
// service: the load generator and the delivery checkers that measure a
// running delayq from the outside, through Kafka only. Each tool is a main
// package in a folder of its own below this one.
package tools
