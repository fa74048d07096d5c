// Kafka's Java transactional producer and read_committed consumer, driven by kcoord's tests
// (tests/integration/test_transactions_java.py). Compiled against kafka-clients 3.9.1 and
// 4.3.1 alike. Every action prints JSON lines on stdout; a client exception is printed by its
// class's simple name (and its cause's), which is what the tests assert on.
//
//   produce-txn    --bootstrap B --topic T --transactional-id X --pattern cac --records M [--partitions P]
//                  one transaction per letter of the pattern (c: commit, a: abort), each of M
//                  records "t<i>-r<j>" sent to partition j % P
//   read-committed --bootstrap B --topic T [--idle-ms I] [--max-seconds S]
//                  every partition from the beginning with isolation.level=read_committed,
//                  until each position has reached its end offset (the LSO) and nothing came for I ms
//   fence          --bootstrap B --topic T --transactional-id X
//                  a first producer sends in a transaction; a second with the same transactional.id
//                  runs initTransactions; the first then sends, commits and (that failing) aborts,
//                  each step's exception printed; the second commits "fence-2"
//   timeout        --bootstrap B --topic T --transactional-id X --transaction-timeout-ms T --sleep-ms S
//                  begin, send "timeout-1", sleep S ms, commit (what it throws is printed); then a
//                  new producer with the same transactional.id commits "after-timeout"
//   ctp            --bootstrap B --input I --output O --group G --transactional-id X
//                  [--transaction-timeout-ms T] [--session-ms S] [--delay-ms D] [--max-records R]
//                  [--max-seconds S]
//                  consume-transform-produce: per poll one transaction of "out-<value>" records and
//                  the consumed offsets (sendOffsetsToTransaction with the consumer's group metadata);
//                  D ms inside each transaction, before the commit. Stops once it holds every
//                  partition of I and has processed each to its end.
import java.time.Duration;
import java.util.*;

import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.*;
import org.apache.kafka.common.serialization.*;

public class KcoordTxnClient {
    static Map<String, String> opts = new HashMap<>();

    static String opt(String name, String dflt) { return opts.getOrDefault(name, dflt); }
    static String req(String name) {
        String v = opts.get(name);
        if (v == null) throw new IllegalArgumentException("missing --" + name);
        return v;
    }
    static int num(String name, String dflt) { return Integer.parseInt(dflt == null ? req(name) : opt(name, dflt)); }

    static String q(String s) { return s == null ? "null" : "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\""; }

    static void emit(String json) { System.out.println(json); System.out.flush(); }

    // An exception as the tests see it: its class, its cause's class, its message.
    static String error(String event, String stage, Throwable e) {
        Throwable cause = e.getCause();
        return "{\"event\":" + q(event) + ",\"stage\":" + q(stage) + ",\"error\":" + q(e.getClass().getSimpleName())
               + ",\"cause\":" + q(cause == null ? null : cause.getClass().getSimpleName())
               + ",\"message\":" + q(e.getMessage()) + "}";
    }

    public static void main(String[] args) throws Exception {
        for (int i = 1; i < args.length; i += 2) opts.put(args[i].substring(2), args[i + 1]);
        switch (args[0]) {
            case "produce-txn": produceTxn(); break;
            case "read-committed": readCommitted(); break;
            case "fence": fence(); break;
            case "timeout": timeout(); break;
            case "ctp": ctp(); break;
            default: throw new IllegalArgumentException("unknown action " + args[0]);
        }
    }

    static KafkaProducer<String, String> producer(String transactionalId) {
        Properties p = new Properties();
        p.put("bootstrap.servers", req("bootstrap"));
        p.put("transactional.id", transactionalId);
        p.put("linger.ms", "5");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        if (opts.containsKey("transaction-timeout-ms")) p.put("transaction.timeout.ms", opts.get("transaction-timeout-ms"));
        return new KafkaProducer<>(p);
    }

    static KafkaConsumer<String, String> consumer(String group) {
        Properties p = new Properties();
        p.put("bootstrap.servers", req("bootstrap"));
        p.put("isolation.level", "read_committed");
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        if (group != null) {
            p.put("group.id", group);
            p.put("session.timeout.ms", opt("session-ms", "6000"));
            p.put("heartbeat.interval.ms", "500");
            p.put("max.poll.records", opt("max-records", "5"));
        }
        return new KafkaConsumer<>(p);
    }

    static void produceTxn() {
        String topic = req("topic"), pattern = req("pattern");
        int records = num("records", null), partitions = num("partitions", "1");
        try (KafkaProducer<String, String> producer = producer(req("transactional-id"))) {
            producer.initTransactions();
            for (int i = 0; i < pattern.length(); i++) {
                producer.beginTransaction();
                for (int j = 0; j < records; j++)
                    producer.send(new ProducerRecord<>(topic, j % partitions, "k" + j, "t" + i + "-r" + j));
                boolean commit = pattern.charAt(i) == 'c';
                if (commit) producer.commitTransaction();
                else producer.abortTransaction();
                emit("{\"event\":\"transaction\",\"index\":" + i + ",\"outcome\":" + q(commit ? "commit" : "abort") + "}");
            }
        }
        emit("{\"event\":\"done\"}");
    }

    static void readCommitted() {
        String topic = req("topic");
        long idle = num("idle-ms", "2000");
        long deadline = System.currentTimeMillis() + 1000L * num("max-seconds", "60");
        int count = 0;
        try (KafkaConsumer<String, String> c = consumer(null)) {
            List<TopicPartition> parts = new ArrayList<>();
            for (PartitionInfo info : c.partitionsFor(topic)) parts.add(new TopicPartition(topic, info.partition()));
            c.assign(parts);
            c.seekToBeginning(parts);
            long last = System.currentTimeMillis();
            boolean reachedEnd = false;
            while (System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, String> r : records) {
                    count++;
                    emit("{\"event\":\"record\",\"partition\":" + r.partition() + ",\"offset\":" + r.offset()
                         + ",\"key\":" + q(r.key()) + ",\"value\":" + q(r.value()) + "}");
                }
                if (!records.isEmpty()) { last = System.currentTimeMillis(); continue; }
                if (System.currentTimeMillis() - last < idle) continue;
                // read_committed: the end offsets are the last stable offsets.
                Map<TopicPartition, Long> end = c.endOffsets(parts);
                reachedEnd = parts.stream().allMatch(tp -> c.position(tp) >= end.get(tp));
                if (reachedEnd) break;
            }
            emit("{\"event\":\"done\",\"count\":" + count + ",\"reached_end\":" + reachedEnd + "}");
        }
    }

    // A first producer of the id with a transaction open: one record sent to partition 0.
    static KafkaProducer<String, String> openTransaction(String id, String topic, String value) throws Exception {
        KafkaProducer<String, String> producer = producer(id);
        producer.initTransactions();
        producer.beginTransaction();
        producer.send(new ProducerRecord<>(topic, 0, "k", value)).get();
        emit("{\"event\":\"sent\",\"producer\":1}");
        return producer;
    }

    static void fence() throws Exception {
        String topic = req("topic"), id = req("transactional-id");
        try (KafkaProducer<String, String> first = openTransaction(id, topic, "fence-1")) {
            try (KafkaProducer<String, String> second = producer(id)) {
                second.initTransactions();
                emit("{\"event\":\"initialized\",\"producer\":2}");
                try {
                    first.send(new ProducerRecord<>(topic, 0, "k", "fence-1b")).get();
                    emit("{\"event\":\"sent\",\"producer\":1}");
                } catch (Exception e) {
                    // The future fails with an ExecutionException around what the broker's answer meant.
                    emit(error("failed", "send", e.getCause() == null ? e : e.getCause()));
                }
                try {
                    first.commitTransaction();
                    emit("{\"event\":\"committed\",\"producer\":1}");
                } catch (KafkaException e) {
                    emit(error("failed", "commit", e));
                    // What an application does after an abortable error; EndTxn then meets the new epoch.
                    try {
                        first.abortTransaction();
                        emit("{\"event\":\"aborted\",\"producer\":1}");
                    } catch (KafkaException again) {
                        emit(error("failed", "abort", again));
                    }
                }
                commitOne(second, topic, "fence-2");
            }
        }
        emit("{\"event\":\"done\"}");
    }

    // The second producer of a transactional id commits one record to partition 0.
    static void commitOne(KafkaProducer<String, String> producer, String topic, String value) {
        producer.beginTransaction();
        producer.send(new ProducerRecord<>(topic, 0, "k", value));
        producer.commitTransaction();
        emit("{\"event\":\"committed\",\"producer\":2}");
    }

    static void timeout() throws Exception {
        String topic = req("topic"), id = req("transactional-id");
        try (KafkaProducer<String, String> producer = openTransaction(id, topic, "timeout-1")) {
            Thread.sleep(num("sleep-ms", null));
            try {
                producer.commitTransaction();
                emit("{\"event\":\"committed\",\"producer\":1}");
            } catch (KafkaException e) {
                emit(error("failed", "commit", e));
            }
        }
        try (KafkaProducer<String, String> after = producer(id)) {
            after.initTransactions();
            commitOne(after, topic, "after-timeout");
        }
        emit("{\"event\":\"done\"}");
    }

    static void ctp() throws Exception {
        String input = req("input"), output = req("output");
        long delay = num("delay-ms", "0");
        long deadline = System.currentTimeMillis() + 1000L * num("max-seconds", "120");
        int total = 0;
        try (KafkaConsumer<String, String> c = consumer(req("group"));
             KafkaProducer<String, String> producer = producer(req("transactional-id"))) {
            producer.initTransactions();
            c.subscribe(List.of(input), new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> parts) { }
                public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                    emit("{\"event\":\"assigned\",\"partitions\":" + parts.size() + ",\"owned\":" + c.assignment().size() + "}");
                }
            });
            int partitions = c.partitionsFor(input).size();
            while (System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(200));
                if (records.isEmpty()) {
                    if (c.assignment().size() == partitions && atEnd(c)) break;
                    continue;
                }
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, String> r : records)
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                try {
                    producer.beginTransaction();
                    for (ConsumerRecord<String, String> r : records)
                        producer.send(new ProducerRecord<>(output, r.key(), "out-" + r.value()));
                    producer.sendOffsetsToTransaction(offsets, c.groupMetadata());
                    if (delay > 0) Thread.sleep(delay);
                    producer.commitTransaction();
                } catch (ProducerFencedException | OutOfOrderSequenceException | AuthorizationException
                         | UnsupportedVersionException e) {
                    emit(error("fatal", "transaction", e));
                    System.exit(2);
                } catch (KafkaException e) {
                    // Abortable (a rebalance took the partitions: CommitFailedException, ...): abort
                    // and go back to what the group has committed, as an EOS application does.
                    emit(error("aborted", "transaction", e));
                    producer.abortTransaction();
                    rewind(c);
                    continue;
                }
                total += records.count();
                emit("{\"event\":\"committed\",\"count\":" + records.count() + ",\"total\":" + total + "}");
            }
        }
        emit("{\"event\":\"done\",\"total\":" + total + "}");
    }

    static boolean atEnd(KafkaConsumer<String, String> c) {
        Map<TopicPartition, Long> end = c.endOffsets(c.assignment());
        return c.assignment().stream().allMatch(tp -> c.position(tp) >= end.get(tp));
    }

    static void rewind(KafkaConsumer<String, String> c) {
        Map<TopicPartition, OffsetAndMetadata> committed = c.committed(c.assignment());
        for (TopicPartition tp : c.assignment()) {
            OffsetAndMetadata at = committed.get(tp);
            if (at == null) c.seekToBeginning(List.of(tp));
            else c.seek(tp, at.offset());
        }
    }
}
