# deploy/local/cluster.sh — the cluster topology of deploy/local/stack,
# sourced by it when CLUSTER=1 (or when $DATA holds a cluster started
# earlier, so that status, down and logs find it). Not a script of its own.
#
# Services (each one process, a service of `stop [--kill] NAME` and
# `start NAME`):
#
#   zookeeper     ZooKeeper 3.8 (ZooKeeperServerMain from HBase's jars) on
#                 HBASE_ZK_PORT (2181)
#   kafka-1..3    KRaft nodes, each broker and controller (a 3-voter quorum),
#                 brokers on KAFKA_PORTS ("9092 9094 9096"), controllers on
#                 KAFKA_CONTROLLER_PORTS ("9093 9095 9097"): by default each
#                 pair is KAFKA_PORT + 2(n-1) and the next port.
#                 default.replication.factor=3, min.insync.replicas=2,
#                 unclean.leader.election.enable=false, offsets and
#                 transaction-state topics replicated 3 times.
#   hbase-master  HMaster on HBASE_MASTER_PORT (16000)
#   hbase-rs-1..2 HRegionServers on HBASE_REGIONSERVER_PORTS ("16020 16030":
#                 by default HBASE_REGIONSERVER_PORT and +10)
#   redis         as in the single-node stack (REDIS_PORT, 6379)
#
# HBase is distributed (hbase.cluster.distributed=true) over the local
# filesystem ($DATA/hbase/root): the WAL is written through Hadoop's
# RawLocalFileSystem, whose hflush hands every edit to the kernel, so a
# RegionServer killed -9 loses no acknowledged write (the checksummed local
# filesystem buffers; a machine crash still can). The ZooKeeper session
# timeout is HBASE_ZK_SESSION_TIMEOUT (10000 ms): a RegionServer or master
# killed -9 is declared dead after that long. Production keeps HBase's
# default, 90000 ms (a GC pause below it does not cost a RegionServer its
# regions). Heaps: CLUSTER_KAFKA_HEAP (256m each), CLUSTER_ZK_HEAP (128m),
# CLUSTER_MASTER_HEAP (256m), CLUSTER_RS_HEAP (384m each): the seven JVMs
# take about 3.5 GB of RSS.
#
# `stop kafka` / `start kafka` take every broker, `stop hbase` / `start
# hbase` the master and the RegionServers.

CLUSTER_KAFKA_HEAP=${CLUSTER_KAFKA_HEAP:-256m}
CLUSTER_ZK_HEAP=${CLUSTER_ZK_HEAP:-128m}
CLUSTER_MASTER_HEAP=${CLUSTER_MASTER_HEAP:-256m}
CLUSTER_RS_HEAP=${CLUSTER_RS_HEAP:-384m}
HBASE_ZK_SESSION_TIMEOUT=${HBASE_ZK_SESSION_TIMEOUT:-10000}
read -r -a CLUSTER_KAFKA_PORTS <<<"${KAFKA_PORTS:-$KAFKA_PORT $((KAFKA_PORT + 2)) $((KAFKA_PORT + 4))}"
if [[ -n ${KAFKA_CONTROLLER_PORTS:-} ]]; then
	read -r -a CLUSTER_CONTROLLER_PORTS <<<"$KAFKA_CONTROLLER_PORTS"
else
	CLUSTER_CONTROLLER_PORTS=()
	for p in "${CLUSTER_KAFKA_PORTS[@]}"; do CLUSTER_CONTROLLER_PORTS+=($((p + 1))); done
fi
read -r -a CLUSTER_RS_PORTS <<<"${HBASE_REGIONSERVER_PORTS:-$HBASE_REGIONSERVER_PORT $((HBASE_REGIONSERVER_PORT + 10))}"
((${#CLUSTER_CONTROLLER_PORTS[@]} == ${#CLUSTER_KAFKA_PORTS[@]})) ||
	die "KAFKA_CONTROLLER_PORTS needs one port per broker of KAFKA_PORTS"

CLUSTER_KAFKA=()
for i in "${!CLUSTER_KAFKA_PORTS[@]}"; do CLUSTER_KAFKA+=("kafka-$((i + 1))"); done
CLUSTER_HBASE=(hbase-master)
for i in "${!CLUSTER_RS_PORTS[@]}"; do CLUSTER_HBASE+=("hbase-rs-$((i + 1))"); done
# In start order; down goes the other way (RegionServers before the master,
# ZooKeeper last).
SERVICES=(redis zookeeper "${CLUSTER_KAFKA[@]}" "${CLUSTER_HBASE[@]}")

# The single-node stack's functions this file extends keep their names
# with a single_ prefix; the cluster's versions handle the cluster's
# services and hand the others (redis, Redis Cluster nodes) to them.
for fn in marker ready port_of ports_of start_service cmd_stop cmd_start; do
	eval "single_$(declare -f "$fn")"
done

# nth NAME: the 0-based index of kafka-N or hbase-rs-N.
nth() { echo $((${1##*-} - 1)); }

marker() {
	case $1 in
	zookeeper) echo ZooKeeperServerMain ;;
	kafka-*) echo kafka.Kafka ;;
	hbase-master) echo HMaster ;;
	hbase-rs-*) echo HRegionServer ;;
	*) single_marker "$1" ;;
	esac
}

port_of() {
	case $1 in
	zookeeper) echo "$HBASE_ZK_PORT" ;;
	kafka-*) echo "${CLUSTER_KAFKA_PORTS[$(nth "$1")]}" ;;
	hbase-master) echo "$HBASE_MASTER_PORT" ;;
	hbase-rs-*) echo "${CLUSTER_RS_PORTS[$(nth "$1")]}" ;;
	*) single_port_of "$1" ;;
	esac
}

ports_of() {
	case $1 in
	kafka-*) echo "${CLUSTER_KAFKA_PORTS[$(nth "$1")]} ${CLUSTER_CONTROLLER_PORTS[$(nth "$1")]}" ;;
	zookeeper | hbase-*) port_of "$1" ;;
	*) single_ports_of "$1" ;;
	esac
}

ready() {
	case $1 in
	zookeeper) [[ $(zk_ruok) == imok ]] ;;
	kafka-*) port_open 127.0.0.1 "$(port_of "$1")" &&
		grep -q 'Kafka Server started\|started (kafka.server.KafkaRaftServer)' "$(logfile "$1")" ;;
	hbase-master) port_open 127.0.0.1 "$HBASE_MASTER_PORT" && grep -q 'Master has completed initialization' "$(logfile "$1")" ;;
	hbase-rs-*) port_open 127.0.0.1 "$(port_of "$1")" && grep -q 'Serving as ' "$(logfile "$1")" ;;
	*) single_ready "$1" ;;
	esac
}

# zk_ruok: ZooKeeper's answer to ruok ("imok" when it serves).
zk_ruok() { (exec 3<>"/dev/tcp/127.0.0.1/$HBASE_ZK_PORT" && printf ruok >&3 && timeout 2 cat <&3) 2>/dev/null; }

start_service() {
	case $1 in
	zookeeper) start_cluster_zookeeper ;;
	kafka-*) start_cluster_kafka "$(nth "$1")" ;;
	hbase-master) start_cluster_hbase hbase-master "$CLUSTER_MASTER_HEAP" org.apache.hadoop.hbase.master.HMaster ;;
	hbase-rs-*) start_cluster_hbase "$1" "$CLUSTER_RS_HEAP" org.apache.hadoop.hbase.regionserver.HRegionServer ;;
	*) single_start_service "$1" ;;
	esac
}

# group NAME: the services of the pseudo-service kafka or hbase.
group() {
	case $1 in
	kafka) echo "${CLUSTER_KAFKA[*]}" ;;
	hbase) echo "${CLUSTER_HBASE[*]}" ;;
	esac
}

cmd_stop() {
	local arg sig=TERM name="" i members
	for arg in "$@"; do
		case $arg in
		--kill) sig=KILL ;;
		*) name=$arg ;;
		esac
	done
	members=$(group "$name")
	[[ -n $members ]] || { single_cmd_stop "$@"; return; }
	read -r -a members <<<"$members"
	for ((i = ${#members[@]} - 1; i >= 0; i--)); do stop_service "${members[i]}" "$sig"; done
}

cmd_start() {
	local name members
	members=$(group "${1:-}")
	[[ -n $members ]] || { single_cmd_start "$@"; return; }
	mkdir -p "$DATA"
	for name in $members; do
		running "$name" && continue
		check_ports "$name"
		log "$name: starting"
		start_service "$name"
	done
	for name in $members; do wait_ready "$name"; done
	for name in $members; do status_line "$name"; done
}

cluster_log4j2() {
	cat >"$1" <<'EOF'
status = warn
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5p [%t] %c{2}: %m%n
rootLogger = WARN,console
logger.hbase.name = org.apache.hadoop.hbase
logger.hbase.level = INFO
logger.zk.name = org.apache.zookeeper
logger.zk.level = WARN
logger.zkmain.name = org.apache.zookeeper.server.ZooKeeperServerMain
logger.zkmain.level = INFO
logger.hadoop.name = org.apache.hadoop.hbase.shaded
logger.hadoop.level = WARN
EOF
}

start_cluster_zookeeper() {
	local cp dir="$DATA/zookeeper"
	cp=$(classpath hbase)
	mkdir -p "$dir/data"
	# tickTime 1 s: sessions of 2–20 s (HBASE_ZK_SESSION_TIMEOUT is clamped
	# to that range), a dead session noticed within a tick.
	cat >"$dir/zoo.cfg" <<EOF
tickTime=1000
maxSessionTimeout=$((HBASE_ZK_SESSION_TIMEOUT > 20000 ? HBASE_ZK_SESSION_TIMEOUT : 20000))
dataDir=$dir/data
clientPort=$HBASE_ZK_PORT
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat
EOF
	cluster_log4j2 "$dir/log4j2.properties"
	launch zookeeper java -Xms"$CLUSTER_ZK_HEAP" -Xmx"$CLUSTER_ZK_HEAP" -XX:+UseG1GC -Djava.awt.headless=true \
		-Dlog4j2.configurationFile="$dir/log4j2.properties" -Dzookeeper.admin.enableServer=false \
		-cp "$cp" org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg"
}

# start_cluster_kafka I: broker and controller node I+1.
start_cluster_kafka() {
	local i=$1 name="kafka-$(($1 + 1))" cp dir voters="" j
	dir="$DATA/$name"
	cp=$(classpath kafka)
	mkdir -p "$dir"
	for j in "${!CLUSTER_CONTROLLER_PORTS[@]}"; do
		voters+="${voters:+,}$((j + 1))@127.0.0.1:${CLUSTER_CONTROLLER_PORTS[j]}"
	done
	cat >"$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=$((i + 1))
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:${CLUSTER_KAFKA_PORTS[i]},CONTROLLER://127.0.0.1:${CLUSTER_CONTROLLER_PORTS[i]}
advertised.listeners=PLAINTEXT://127.0.0.1:${CLUSTER_KAFKA_PORTS[i]}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$dir/data
num.partitions=4
default.replication.factor=3
min.insync.replicas=2
unclean.leader.election.enable=false
offsets.topic.replication.factor=3
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
log.retention.hours=168
# A follower that stops fetching leaves the ISR after 10 s (Kafka's
# default is 30 s), a fenced broker after 6 s without a heartbeat.
replica.lag.time.max.ms=10000
broker.session.timeout.ms=6000
EOF
	cat >"$dir/log4j.properties" <<'EOF'
log4j.rootLogger=WARN, stdout
log4j.logger.kafka=INFO
log4j.logger.kafka.server.KafkaServer=INFO
log4j.logger.org.apache.kafka=INFO
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
EOF
	if [[ ! -f $dir/data/meta.properties ]]; then
		# One cluster id for every node.
		if [[ ! -s $DATA/kafka-cluster.id ]]; then
			java -cp "$cp" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1 >"$DATA/kafka-cluster.id"
		fi
		java -cp "$cp" -Dlog4j.configuration="file:$dir/log4j.properties" kafka.tools.StorageTool format \
			-t "$(cat "$DATA/kafka-cluster.id")" -c "$dir/server.properties" >"$DATA/$name.format.log" 2>&1 ||
			{ cat "$DATA/$name.format.log" >&2; die "$name: storage format failed"; }
	fi
	launch "$name" java -Xms"$CLUSTER_KAFKA_HEAP" -Xmx"$CLUSTER_KAFKA_HEAP" -XX:+UseG1GC -Djava.awt.headless=true \
		-Dlog4j.configuration="file:$dir/log4j.properties" -cp "$cp" kafka.Kafka "$dir/server.properties"
}

# start_cluster_hbase NAME HEAP CLASS: the master or a RegionServer, each
# with a configuration folder of its own (only the ports differ).
start_cluster_hbase() {
	local name=$1 heap=$2 class=$3 cp dir="$DATA/hbase" rsport=$HBASE_REGIONSERVER_PORT
	cp=$(classpath hbase)
	[[ $name != hbase-rs-* ]] || rsport=$(port_of "$name")
	mkdir -p "$dir/conf-$name" "$dir/tmp"
	cat >"$dir/conf-$name/hbase-site.xml" <<EOF
<?xml version="1.0"?>
<configuration>
  <property><name>hbase.cluster.distributed</name><value>true</value></property>
  <property><name>hbase.rootdir</name><value>file://$dir/root</value></property>
  <property><name>hbase.tmp.dir</name><value>$dir/tmp</value></property>
  <property><name>fs.file.impl</name><value>org.apache.hadoop.fs.RawLocalFileSystem</value></property>
  <property><name>hbase.wal.provider</name><value>filesystem</value></property>
  <property><name>hbase.unsafe.stream.capability.enforce</name><value>false</value></property>
  <property><name>hbase.zookeeper.quorum</name><value>127.0.0.1</value></property>
  <property><name>hbase.zookeeper.property.clientPort</name><value>$HBASE_ZK_PORT</value></property>
  <property><name>zookeeper.session.timeout</name><value>$HBASE_ZK_SESSION_TIMEOUT</value></property>
  <property><name>hbase.master.hostname</name><value>localhost</value></property>
  <property><name>hbase.unsafe.regionserver.hostname</name><value>localhost</value></property>
  <property><name>hbase.master.port</name><value>$HBASE_MASTER_PORT</value></property>
  <property><name>hbase.regionserver.port</name><value>$rsport</value></property>
  <property><name>hbase.master.info.port</name><value>-1</value></property>
  <property><name>hbase.regionserver.info.port</name><value>-1</value></property>
  <property><name>hbase.master.wait.on.regionservers.mintostart</name><value>1</value></property>
  <!-- Java NIO binds with SO_REUSEADDR: a master or RegionServer killed -9
       and started again within a minute finds its port in TIME_WAIT,
       which Netty's native epoll transport refuses to bind. -->
  <property><name>hbase.netty.nativetransport</name><value>false</value></property>
</configuration>
EOF
	cluster_log4j2 "$dir/conf-$name/log4j2.properties"
	launch "$name" java -Xms"$heap" -Xmx"$heap" -XX:+UseG1GC -Djava.awt.headless=true \
		"${HBASE_JDK_FLAGS[@]}" -Dlog4j2.configurationFile="$dir/conf-$name/log4j2.properties" \
		-Dhbase.log.dir="$dir" -cp "$dir/conf-$name:$cp" "$class" start
}

# cluster_admin ARGS: deploy/local/hbase/ClusterAdmin.java (compiled into
# $DATA/admin on first use) with ARGS, as a client of the cluster's HBase:
#   regions TABLE   one line per region: encoded name, RegionServer port,
#                   start key (hex, - for the first)
#   move TABLE PORT every region of TABLE to the RegionServer on PORT
#   split TABLE     flush TABLE and split its first splittable region
#   balance         switch the balancer on and run it once
#   compact TABLE   request a major compaction
# Commands separated by -- run one after the other on one connection, each
# answer followed by "COMMAND took N ms".
cluster_admin() {
	local cp src="$HERE/hbase/ClusterAdmin.java" out="$DATA/admin"
	cp=$(classpath hbase)
	if [[ ! -f $out/ClusterAdmin.class || $src -nt $out/ClusterAdmin.class ]]; then
		mkdir -p "$out"
		javac -nowarn -cp "$cp" -d "$out" "$src" || die "admin: javac failed"
	fi
	[[ -d $DATA/hbase/conf-hbase-master ]] || die "admin: no cluster HBase in $DATA"
	# The client's own log goes to stderr: stdout is the command's answer.
	cat >"$out/log4j2.properties" <<'EOF2'
status = warn
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5p [%t] %c{2}: %m%n
rootLogger = ERROR,console
EOF2
	java -Xmx128m "${HBASE_JDK_FLAGS[@]}" -Dlog4j2.configurationFile="$out/log4j2.properties" \
		-cp "$out:$DATA/hbase/conf-hbase-master:$cp" ClusterAdmin "$@"
}
