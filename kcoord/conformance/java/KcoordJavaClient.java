// A small command-line driver around Kafka's Java client, used by kcoord's tests.
// Every action prints JSON lines on stdout so the Python side can assert on them.
//
//   produce  --bootstrap B --topic T --count N [--partitions P]
//   consume  --bootstrap B (--topic T | --topic-regex R) --group G --count N [--commit] [--instance-id I]
//            [--assignor range|roundrobin|cooperative-sticky] [--session-ms S] [--max-seconds S]
//            [--group-protocol classic|consumer] [--remote-assignor uniform|range] [--client-regex] [--hold]
//
// --hold makes the consumer (the JVM started, the client's classes loaded), prints
// {"event":"ready"} and waits for a line on stdin before it subscribes: a test can have a
// member's replacement ready before it kills the member, so that the replacement joins within
// seconds of the kill even when a loaded machine takes longer than that to start a JVM.
// --group-protocol consumer (KIP-848, kafka-clients 4.x) sets group.protocol=consumer and leaves
// out what the client refuses in that mode (session.timeout.ms, heartbeat.interval.ms,
// partition.assignment.strategy); the session timeout and heartbeat interval are then the
// broker's, the assignor the broker's (group.remote.assignor picks one by name).
// --topic-regex subscribes to a pattern: with the consumer protocol it is a broker-side regex
// (subscribe(SubscriptionPattern), sent as SubscribedTopicRegex; found by reflection, so this
// source still compiles against kafka-clients 3.9.1); with --client-regex, or the classic
// protocol, a java.util.regex.Pattern the client matches against its metadata.
//   verify   --bootstrap B --topic T --group G [--instance-id I] [--session-ms S] [--group-protocol P]
//            a member that reports as Kafka's VerifiableConsumer does (startup_complete,
//            partitions_assigned/revoked, records_consumed, offsets_committed after a commitSync
//            of each batch, shutdown_complete), plus group_member {member_id, generation} after
//            each assignment; SIGTERM closes it (kcoord.conformance.verifiable_member is the
//            Python clients' twin)
//   assign   --bootstrap B --topic T --count N      (assign/seek/poll with a group id that never joins)
//   admin    --bootstrap B --action list-groups|describe-group|delete-group|list-offsets|describe-topic [--group G] [--topic T]
import java.time.Duration;
import java.util.*;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

public class KcoordJavaClient {
    static Map<String, String> opts = new HashMap<>();
    static Set<String> flags = new HashSet<>();

    static String opt(String name, String dflt) { return opts.getOrDefault(name, dflt); }
    static String req(String name) {
        String v = opts.get(name);
        if (v == null) throw new IllegalArgumentException("missing --" + name);
        return v;
    }

    static String q(String s) { return s == null ? "null" : "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\""; }

    static void emit(String json) { System.out.println(json); System.out.flush(); }

    public static void main(String[] args) throws Exception {
        String action = args[0];
        for (int i = 1; i < args.length; i++) {
            String a = args[i].substring(2);
            if (i + 1 < args.length && !args[i + 1].startsWith("--")) opts.put(a, args[++i]);
            else flags.add(a);
        }
        switch (action) {
            case "produce": produce(); break;
            case "consume": consume(); break;
            case "assign": assign(); break;
            case "verify": verify(); break;
            case "admin": admin(); break;
            default: throw new IllegalArgumentException("unknown action " + action);
        }
    }

    static void produce() throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", req("bootstrap"));
        p.put("linger.ms", opt("linger-ms", "5"));
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        int count = Integer.parseInt(req("count"));
        String topic = req("topic");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < count; i++) producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i));
            producer.flush();
        }
        emit("{\"event\":\"produced\",\"count\":" + count + "}");
    }

    static Properties consumerProps() {
        Properties p = new Properties();
        p.put("bootstrap.servers", req("bootstrap"));
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        if (opts.containsKey("group")) p.put("group.id", opts.get("group"));
        if (opts.containsKey("instance-id")) p.put("group.instance.id", opts.get("instance-id"));
        if (opts.containsKey("rebalance-ms")) p.put("max.poll.interval.ms", opts.get("rebalance-ms"));
        if (consumerProtocol()) {
            // KIP-848: the client refuses the classic group configs in this mode.
            p.put("group.protocol", "consumer");
            if (opts.containsKey("remote-assignor")) p.put("group.remote.assignor", opts.get("remote-assignor"));
            return p;
        }
        if (opts.containsKey("session-ms")) p.put("session.timeout.ms", opts.get("session-ms"));
        String assignor = opt("assignor", "range");
        String cls = assignor.equals("roundrobin") ? RoundRobinAssignor.class.getName()
                : assignor.equals("cooperative-sticky") ? CooperativeStickyAssignor.class.getName()
                : RangeAssignor.class.getName();
        p.put("partition.assignment.strategy", cls);
        return p;
    }

    static boolean consumerProtocol() { return opt("group-protocol", "classic").equals("consumer"); }

    // subscribe() to --topic, or to the --topic-regex pattern (see the header).
    static void subscribe(KafkaConsumer<String, String> c, ConsumerRebalanceListener listener) throws Exception {
        String regex = opts.get("topic-regex");
        if (regex == null) {
            c.subscribe(Collections.singletonList(req("topic")), listener);
        } else if (consumerProtocol() && !flags.contains("client-regex")) {
            Class<?> cls = Class.forName("org.apache.kafka.clients.consumer.SubscriptionPattern");
            Object pattern = cls.getConstructor(String.class).newInstance(regex);
            c.getClass().getMethod("subscribe", cls, ConsumerRebalanceListener.class).invoke(c, pattern, listener);
        } else {
            c.subscribe(Pattern.compile(regex), listener);
        }
    }

    static String tps(Collection<TopicPartition> parts) {
        StringBuilder b = new StringBuilder("[");
        for (TopicPartition tp : parts) {
            if (b.length() > 1) b.append(",");
            b.append("[").append(q(tp.topic())).append(",").append(tp.partition()).append("]");
        }
        return b.append("]").toString();
    }

    static volatile boolean stopping = false;

    static void consume() throws Exception {
        int count = Integer.parseInt(opt("count", "-1"));
        Thread main = Thread.currentThread();
        // SIGTERM: leave the group cleanly (close sends LeaveGroup), as a real service would.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping = true;
            try { main.join(10000); } catch (InterruptedException ignored) { }
        }));
        long deadline = System.currentTimeMillis() + 1000L * Long.parseLong(opt("max-seconds", "60"));
        boolean commit = flags.contains("commit");
        int seen = 0;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps())) {
            if (flags.contains("hold")) {
                emit("{\"event\":\"ready\"}");
                new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
            }
            subscribe(c, new ConsumerRebalanceListener() {
                // With the consumer protocol the generation is the member epoch, and the
                // member id the client's own (a UUID it generated).
                // "owned": what the member holds once the callback returns, whichever way the
                // client orders its assignment update around the callback.
                public void onPartitionsRevoked(Collection<TopicPartition> parts) {
                    Set<TopicPartition> owned = new HashSet<>(c.assignment());
                    owned.removeAll(parts);
                    emit("{\"event\":\"revoked\",\"partitions\":" + tps(parts) + ",\"owned\":" + tps(owned) + "}");
                }
                public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                    Set<TopicPartition> owned = new HashSet<>(c.assignment());
                    owned.addAll(parts);
                    emit("{\"event\":\"assigned\",\"partitions\":" + tps(parts) + ",\"owned\":" + tps(owned) + ",\"generation\":" + c.groupMetadata().generationId() + ",\"member_id\":" + q(c.groupMetadata().memberId()) + "}");
                }
                // Then onPartitionsRevoked, as the interface's default does.
                public void onPartitionsLost(Collection<TopicPartition> parts) { emit("{\"event\":\"lost\",\"partitions\":" + tps(parts) + "}"); onPartitionsRevoked(parts); }
            });
            while (!stopping && System.currentTimeMillis() < deadline && (count < 0 || seen < count)) {
                ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(200));
                seen += records.count();
                if (records.count() > 0) {
                    StringBuilder offs = new StringBuilder("[");
                    for (ConsumerRecord<String, String> r : records) {
                        if (offs.length() > 1) offs.append(",");
                        offs.append("[").append(r.partition()).append(",").append(r.offset()).append("]");
                    }
                    emit("{\"event\":\"records\",\"count\":" + records.count() + ",\"total\":" + seen + ",\"offsets\":" + offs.append("]") + "}");
                    if (commit) c.commitSync();
                }
            }
            emit("{\"event\":\"done\",\"total\":" + seen + ",\"assignment\":" + tps(c.assignment()) + "}");
        } catch (org.apache.kafka.common.errors.FencedInstanceIdException e) {
            emit("{\"event\":\"fenced\",\"error\":" + q(e.getMessage()) + "}");
            System.exit(3);
        } catch (org.apache.kafka.common.KafkaException e) {
            // Say what the client gave up on (UnreleasedInstanceIdException, ...), then fail as before.
            emit("{\"event\":\"error\",\"error\":" + q(e.getClass().getSimpleName()) + ",\"message\":" + q(e.getMessage()) + "}");
            throw e;
        }
    }

    static String named(Collection<TopicPartition> parts) {
        StringBuilder b = new StringBuilder("[");
        for (TopicPartition tp : parts) {
            if (b.length() > 1) b.append(",");
            b.append("{\"topic\":").append(q(tp.topic())).append(",\"partition\":").append(tp.partition()).append("}");
        }
        return b.append("]").toString();
    }

    static void verify() throws Exception {
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping = true;
            try { main.join(15000); } catch (InterruptedException ignored) { }
        }));
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps())) {
            subscribe(c, new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> parts) {
                    emit("{\"name\":\"partitions_revoked\",\"partitions\":" + named(parts) + "}");
                }
                public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                    emit("{\"name\":\"partitions_assigned\",\"partitions\":" + named(parts) + "}");
                    emit("{\"name\":\"group_member\",\"member_id\":" + q(c.groupMetadata().memberId())
                         + ",\"generation\":" + c.groupMetadata().generationId() + "}");
                }
                public void onPartitionsLost(Collection<TopicPartition> parts) { onPartitionsRevoked(parts); }
            });
            emit("{\"name\":\"startup_complete\"}");
            while (!stopping) {
                ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(200));
                if (records.isEmpty()) continue;
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                StringBuilder parts = new StringBuilder("[");
                for (TopicPartition tp : records.partitions()) {
                    List<ConsumerRecord<String, String>> rs = records.records(tp);
                    long first = rs.get(0).offset(), last = rs.get(rs.size() - 1).offset();
                    if (parts.length() > 1) parts.append(",");
                    parts.append("{\"topic\":").append(q(tp.topic())).append(",\"partition\":").append(tp.partition())
                         .append(",\"count\":").append(rs.size()).append(",\"minOffset\":").append(first)
                         .append(",\"maxOffset\":").append(last).append("}");
                    offsets.put(tp, new OffsetAndMetadata(last + 1));
                }
                emit("{\"name\":\"records_consumed\",\"count\":" + records.count() + ",\"partitions\":" + parts + "]}");
                StringBuilder committed = new StringBuilder("[");
                for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
                    if (committed.length() > 1) committed.append(",");
                    committed.append("{\"topic\":").append(q(e.getKey().topic())).append(",\"partition\":")
                             .append(e.getKey().partition()).append(",\"offset\":").append(e.getValue().offset()).append("}");
                }
                committed.append("]");
                try {
                    c.commitSync(offsets);
                    emit("{\"name\":\"offsets_committed\",\"offsets\":" + committed + ",\"success\":true}");
                } catch (org.apache.kafka.common.KafkaException e) {
                    emit("{\"name\":\"offsets_committed\",\"offsets\":" + committed + ",\"success\":false,\"error\":"
                         + q(e.getClass().getSimpleName() + ": " + e.getMessage()) + "}");
                }
            }
        }
        emit("{\"name\":\"shutdown_complete\"}");
    }

    static void assign() throws Exception {
        // Spark's default Kafka source: offsets come from an AdminClient on the driver,
        // executors assign/seek/poll with a group id that never joins the group.
        String topic = req("topic");
        int count = Integer.parseInt(req("count"));
        Map<TopicPartition, Long> start = new HashMap<>(), end = new HashMap<>();
        Properties ap = new Properties();
        ap.put("bootstrap.servers", req("bootstrap"));
        try (Admin admin = Admin.create(ap)) {
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic);
            Map<TopicPartition, OffsetSpec> earliest = new HashMap<>(), latest = new HashMap<>();
            d.partitions().forEach(p -> {
                earliest.put(new TopicPartition(topic, p.partition()), OffsetSpec.earliest());
                latest.put(new TopicPartition(topic, p.partition()), OffsetSpec.latest());
            });
            admin.listOffsets(earliest).all().get(30, TimeUnit.SECONDS).forEach((tp, r) -> start.put(tp, r.offset()));
            admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS).forEach((tp, r) -> end.put(tp, r.offset()));
        }
        opts.putIfAbsent("group", "spark-kafka-source-executor");
        int seen = 0;
        long deadline = System.currentTimeMillis() + 1000L * Long.parseLong(opt("max-seconds", "60"));
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps())) {
            c.assign(start.keySet());
            start.forEach(c::seek);
            while (seen < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    if (r.offset() < end.get(new TopicPartition(r.topic(), r.partition()))) seen++;
                }
            }
        }
        emit("{\"event\":\"done\",\"total\":" + seen + "}");
    }

    static void admin() throws Exception {
        Properties ap = new Properties();
        ap.put("bootstrap.servers", req("bootstrap"));
        try (Admin admin = Admin.create(ap)) {
            switch (req("action")) {
                case "list-groups":
                    for (ConsumerGroupListing g : admin.listConsumerGroups().all().get(30, TimeUnit.SECONDS))
                        emit("{\"group\":" + q(g.groupId()) + ",\"state\":" + q(String.valueOf(g.state().orElse(null))) + "}");
                    break;
                case "describe-group": {
                    ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(req("group"))).all().get(30, TimeUnit.SECONDS).get(req("group"));
                    emit("{\"group\":" + q(d.groupId()) + ",\"state\":" + q(d.state().toString()) + ",\"members\":" + d.members().size() + ",\"assignor\":" + q(d.partitionAssignor()) + "}");
                    break;
                }
                case "delete-group":
                    admin.deleteConsumerGroups(List.of(req("group"))).all().get(30, TimeUnit.SECONDS);
                    emit("{\"deleted\":" + q(req("group")) + "}");
                    break;
                case "list-offsets": {
                    ListConsumerGroupOffsetsResult r = admin.listConsumerGroupOffsets(req("group"));
                    for (Map.Entry<TopicPartition, OffsetAndMetadata> e : r.partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS).entrySet())
                        emit("{\"topic\":" + q(e.getKey().topic()) + ",\"partition\":" + e.getKey().partition() + ",\"offset\":" + e.getValue().offset() + "}");
                    break;
                }
                case "create-topic":
                    admin.createTopics(List.of(new NewTopic(req("topic"), Integer.parseInt(opt("partitions", "1")), (short) 1))).all().get(30, TimeUnit.SECONDS);
                    emit("{\"created\":" + q(req("topic")) + "}");
                    break;
                default:
                    throw new IllegalArgumentException("unknown admin action");
            }
        }
    }
}
