# deploy/local/secure.sh — SECURE=1 of deploy/local/stack (sourced by it,
# never run): Kafka's client listener becomes SASL_SSL (SCRAM-SHA-512 and
# SCRAM-SHA-256) with the standard authorizer and ACLs, and Redis speaks
# only TLS and requires a client certificate.
#
# Everything lives in $DATA/secure (mode 700), made on first use:
#   ca.pem ca.key              the stack's CA (openssl, RSA 2048, 10 years)
#   server.pem server.key      127.0.0.1/localhost: Kafka's and Redis's
#   client.pem client.key      CN=delayq: the Redis (and optional Kafka) client
#   kafka-server.pem           server.key + server.pem: Kafka's PEM keystore
#   USER.password              SCRAM passwords of admin, delayq and producer
#   admin.properties           Kafka client config of admin (kafka-acls etc.)
#   delayd.env                 DELAYQ_* of a delayd as user delayq
#   enabled                    marks the stack as secure: later commands
#                              without SECURE= stay secure
#
# Kafka: the client listener KAFKA_PORT is SASL_SSL; the controller
# (KAFKA_CONTROLLER_PORT) and the inter-broker listener KAFKA_INTERNAL_PORT
# (default KAFKA_PORT+2) stay PLAINTEXT on 127.0.0.1 and are no client
# ports: their principal, User:ANONYMOUS, is a super user with User:admin.
# The SCRAM users are created at format time (StorageTool --add-scram):
# admin (super user), delayq (only the ACLs delayd needs, see docs/security.md,
# "Connecting to a secured Kafka and Redis") and producer (writes
# delay-input, nothing else). The ACLs are created with kafka.admin.AclCommand
# as admin once the broker first answers. delayq may write business
# topics whose names start with KAFKA_BUSINESS_PREFIX (biz-); a task for
# another topic goes to delay-failed with Kafka's refusal.

SECURE_DIR=$DATA/secure
KAFKA_INTERNAL_PORT=${KAFKA_INTERNAL_PORT:-$((KAFKA_PORT + 2))}
KAFKA_BUSINESS_PREFIX=${KAFKA_BUSINESS_PREFIX:-biz-}
SECURE_USERS=(admin delayq producer)

[[ $REDIS_CLUSTER != 1 ]] || die "SECURE=1 secures the single Redis; REDIS_CLUSTER=1 is not supported with it"
[[ ${REDIS_SENTINEL:-0} != 1 ]] || die "SECURE=1 secures the single Redis; REDIS_SENTINEL=1 is not supported with it"

REDIS_LISTEN=(--port 0 --tls-port "$REDIS_PORT"
	--tls-cert-file "$SECURE_DIR/server.pem" --tls-key-file "$SECURE_DIR/server.key"
	--tls-ca-cert-file "$SECURE_DIR/ca.pem" --tls-auth-clients yes)
REDIS_CLI=(redis-cli -h 127.0.0.1 --tls --cacert "$SECURE_DIR/ca.pem"
	--cert "$SECURE_DIR/client.pem" --key "$SECURE_DIR/client.key")

# secure_cert NAME CN SAN EKU: NAME.pem and NAME.key signed by the CA.
secure_cert() {
	local d=$SECURE_DIR
	openssl req -new -nodes -newkey rsa:2048 -keyout "$d/$1.key" -out "$d/$1.csr" -subj "/CN=$2" 2>/dev/null
	printf 'subjectAltName=%s\nextendedKeyUsage=%s\n' "$3" "$4" >"$d/$1.ext"
	openssl x509 -req -in "$d/$1.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
		-days 825 -sha256 -extfile "$d/$1.ext" -out "$d/$1.pem" 2>/dev/null
	rm -f "$d/$1.csr" "$d/$1.ext"
}

# secure_init: the CA, certificates, passwords and client configs, made
# once; later calls find them.
secure_init() {
	local d=$SECURE_DIR u
	[[ -f $d/enabled ]] && return
	command -v openssl >/dev/null || die "openssl not found: install it (apt-get install openssl)"
	log "secure: making a CA, certificates and SCRAM passwords in $d"
	mkdir -p "$d"
	chmod 700 "$d"
	(
		umask 077
		openssl req -x509 -new -nodes -newkey rsa:2048 -keyout "$d/ca.key" -out "$d/ca.pem" \
			-days 3650 -sha256 -subj "/CN=delayq local stack CA" 2>/dev/null
		secure_cert server localhost "IP:127.0.0.1,DNS:localhost" serverAuth
		secure_cert client delayq "DNS:delayq" clientAuth
		cat "$d/server.key" "$d/server.pem" >"$d/kafka-server.pem"
		for u in "${SECURE_USERS[@]}"; do
			[[ -s $d/$u.password ]] || openssl rand -hex 16 >"$d/$u.password"
		done
		cat >"$d/admin.properties" <<EOF
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="$(secure_password admin)";
ssl.truststore.type=PEM
ssl.truststore.location=$d/ca.pem
EOF
		cat >"$d/delayd.env" <<EOF
DELAYQ_BROKERS=127.0.0.1:$KAFKA_PORT
DELAYQ_KAFKA_TLS=true
DELAYQ_KAFKA_TLS_CA=$d/ca.pem
DELAYQ_KAFKA_SASL=scram-sha-512
DELAYQ_KAFKA_SASL_USER=delayq
DELAYQ_KAFKA_SASL_PASSWORD=$(secure_password delayq)
DELAYQ_REDIS=127.0.0.1:$REDIS_PORT
DELAYQ_HBASE_ZK=127.0.0.1:$HBASE_ZK_PORT
DELAYQ_REDIS_TLS=true
DELAYQ_REDIS_TLS_CA=$d/ca.pem
DELAYQ_REDIS_TLS_CERT=$d/client.pem
DELAYQ_REDIS_TLS_KEY=$d/client.key
EOF
	)
	touch "$d/enabled"
}

secure_password() { cat "$SECURE_DIR/$1.password"; }

# secure_kafka DIR: the SASL_SSL listener, TLS files and authorizer,
# appended to DIR/server.properties (a later key wins), and the SCRAM users
# StorageTool adds when it formats the log.
secure_kafka() {
	secure_init
	local d=$SECURE_DIR m u
	cat >>"$1/server.properties" <<EOF
# SECURE=1 (deploy/local/secure.sh)
listeners=SASL_SSL://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT,INTERNAL://127.0.0.1:$KAFKA_INTERNAL_PORT
advertised.listeners=SASL_SSL://127.0.0.1:$KAFKA_PORT,INTERNAL://127.0.0.1:$KAFKA_INTERNAL_PORT
inter.broker.listener.name=INTERNAL
listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT
sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
ssl.keystore.type=PEM
ssl.keystore.location=$d/kafka-server.pem
ssl.truststore.type=PEM
ssl.truststore.location=$d/ca.pem
listener.name.sasl_ssl.ssl.client.auth=requested
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin;User:ANONYMOUS
allow.everyone.if.no.acl.found=false
EOF
	KAFKA_FORMAT_ARGS=()
	for u in "${SECURE_USERS[@]}"; do
		for m in SCRAM-SHA-512 SCRAM-SHA-256; do
			KAFKA_FORMAT_ARGS+=(--add-scram "$m=[name=$u,password=$(secure_password "$u")]")
		done
	done
}

secure_redis() { secure_init; }

# secure_acls: the ACLs of delayq and producer, created once with
# kafka.admin.AclCommand as admin over the SASL_SSL listener, three JVMs at
# once. --producer is WRITE, DESCRIBE and CREATE on the topics; --consumer
# is READ and DESCRIBE on the topics and READ on the groups.
secure_acls() {
	local d=$SECURE_DIR cp i rc=0 pids=()
	[[ -f $d/acls.done ]] && return
	cp=$(classpath kafka)
	local acls=(
		"--allow-principal User:delayq --producer --consumer --topic delay-input --topic delay-input-slow --topic delay-scan --topic delay-failed --group delayq-ingest --group delayq-scanner"
		"--allow-principal User:delayq --operation Write --operation Describe --resource-pattern-type prefixed --topic $KAFKA_BUSINESS_PREFIX"
		"--allow-principal User:producer --operation Write --operation Describe --topic delay-input"
	)
	log "kafka: creating the ACLs of delayq and producer"
	for i in "${!acls[@]}"; do
		# shellcheck disable=SC2086 # the words of one command line
		java -cp "$cp" -Dlog4j.configuration="file:$DATA/kafka/log4j.properties" kafka.admin.AclCommand \
			--bootstrap-server "127.0.0.1:$KAFKA_PORT" --command-config "$d/admin.properties" --add --force \
			${acls[i]} >"$DATA/kafka.acls.$i.log" 2>&1 &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do
		if ! wait "${pids[i]}"; then
			tail -n 30 "$DATA/kafka.acls.$i.log" >&2
			rc=1
		fi
	done
	((rc == 0)) || die "kafka: creating ACLs failed (logs: $DATA/kafka.acls.*.log)"
	touch "$d/acls.done"
}

secure_ready() { [[ $1 != kafka ]] || secure_acls; }

# secure_print: what a client needs.
secure_print() {
	local d=$SECURE_DIR
	[[ -f $d/enabled ]] || return 0
	cat >&2 <<EOF
stack: SECURE=1: Kafka SASL_SSL 127.0.0.1:$KAFKA_PORT (SCRAM-SHA-512/256, ACLs), Redis TLS 127.0.0.1:$REDIS_PORT (client certificate required)
stack: a delayd as user delayq (the documented ACLs; business topics $KAFKA_BUSINESS_PREFIX*):
  DELAYQ_KAFKA_SASL_PASSWORD=\$(cat $d/delayq.password) delayd \\
    --brokers 127.0.0.1:$KAFKA_PORT --kafka-tls --kafka-tls-ca $d/ca.pem \\
    --kafka-sasl scram-sha-512 --kafka-sasl-user delayq \\
    --redis 127.0.0.1:$REDIS_PORT --redis-tls --redis-tls-ca $d/ca.pem \\
    --redis-tls-cert $d/client.pem --redis-tls-key $d/client.key --hbase-zk 127.0.0.1:$HBASE_ZK_PORT
stack: or all of it from the environment: set -a; . $d/delayd.env; set +a
stack: Kafka tools as admin: --command-config $d/admin.properties
EOF
}
