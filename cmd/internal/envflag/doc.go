// Package envflag lets every flag of delayq's commands also be set from the
// environment: flag --hbase-zk reads DELAYQ_HBASE_ZK. A flag given on the
// command line beats the environment; an invalid environment value is an
// error that names the variable.
package envflag
