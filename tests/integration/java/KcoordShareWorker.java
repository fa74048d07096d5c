// A share-group worker for the share group scenarios (tests/integration/test_share_groups.py, run by
// kcoord.testing.share_workers.ShareWorkers): a KafkaShareConsumer on one topic that acknowledges
// each record by what its value asks for, so a scenario decides a record's fate when producing it.
//
//   KcoordShareWorker topic=TOPIC [hold.ms=MS] [renew.every.ms=MS] [process.ms=MS] NAME=VALUE...
//
// Every other NAME=VALUE is a consumer property (bootstrap.servers, group.id,
// share.acknowledgement.mode, share.acquire.mode, max.poll.records...). In explicit mode a value
// starting with "release" is released, "reject" rejected, "hold" kept unacknowledged for hold.ms
// before it is accepted (by sleeping on it, or when renew.every.ms is set by renewing it that often:
// KIP-1222), anything else accepted; each poll's acknowledgements are committed with commitSync
// before the next poll. In implicit mode the
// next poll accepts them all. process.ms: a pause per record, as slow work.
//
// JSON lines on stdout: {"event":"record","partition":P,"offset":O,"delivery":N,"value":V} per
// record received; {"event":"ack","offset":O,"type":T} per acknowledgement given;
// {"event":"commit","failed":[...]} after each commitSync (offsets whose acknowledgement failed);
// {"event":"polling"} once its first poll has returned; {"event":"lock","ms":N} once the broker has said its acquisition lock timeout;
// {"event":"done"} after a clean close. SIGTERM closes it.
import java.time.Duration;
import java.util.*;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;

public class KcoordShareWorker {
    static void emit(String json) { System.out.println(json); System.out.flush(); }

    static String quote(String s) {
        return "\"" + String.valueOf(s).replace("\\", "\\\\").replace("\"", "'").replace("\n", " ") + "\"";
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = new LinkedHashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            options.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        String topic = options.remove("topic");
        long holdMs = Long.parseLong(options.getOrDefault("hold.ms", "0"));
        long renewEveryMs = Long.parseLong(options.getOrDefault("renew.every.ms", "0"));
        long processMs = Long.parseLong(options.getOrDefault("process.ms", "0"));
        options.remove("hold.ms");
        options.remove("renew.every.ms");
        options.remove("process.ms");
        Properties p = new Properties();
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        p.putAll(options);
        boolean explicit = "explicit".equals(p.getProperty("share.acknowledgement.mode"));

        KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(p);
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            consumer.wakeup();
            try { closed.await(); } catch (InterruptedException ignored) { }
        }));
        boolean lockSeen = false, polled = false;
        Map<Long, long[]> renewing = new HashMap<>();   // offset -> {first seen ms, delivery count}
        try {
            consumer.subscribe(List.of(topic));
            while (true) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                if (!polled) {
                    polled = true;
                    emit("{\"event\":\"polling\"}");
                }
                if (!lockSeen && consumer.acquisitionLockTimeoutMs().isPresent()) {
                    lockSeen = true;
                    emit("{\"event\":\"lock\",\"ms\":" + consumer.acquisitionLockTimeoutMs().get() + "}");
                }
                for (ConsumerRecord<String, String> r : records) {
                    String v = String.valueOf(r.value());
                    short delivery = r.deliveryCount().orElse((short) -1);
                    // A renewed record comes back from poll with the same delivery count: not a new delivery.
                    boolean renewed = renewing.containsKey(r.offset()) && renewing.get(r.offset())[1] == delivery;
                    if (!renewed) {
                        emit("{\"event\":\"record\",\"partition\":" + r.partition() + ",\"offset\":" + r.offset()
                             + ",\"delivery\":" + delivery + ",\"value\":" + quote(v) + "}");
                        if (processMs > 0) Thread.sleep(processMs);
                    }
                    if (!explicit) continue;
                    AcknowledgeType type = v.startsWith("release") ? AcknowledgeType.RELEASE
                        : v.startsWith("reject") ? AcknowledgeType.REJECT : AcknowledgeType.ACCEPT;
                    if (v.startsWith("hold") && holdMs > 0) {
                        if (renewEveryMs == 0) {
                            Thread.sleep(holdMs);
                        } else {
                            long[] since = renewing.computeIfAbsent(r.offset(), o -> new long[] {System.currentTimeMillis(), delivery});
                            if (System.currentTimeMillis() < since[0] + holdMs) {
                                // KIP-1222: RENEW keeps the lock; the next poll returns the record again.
                                Thread.sleep(renewEveryMs);
                                consumer.acknowledge(r, AcknowledgeType.RENEW);
                                emit("{\"event\":\"ack\",\"offset\":" + r.offset() + ",\"type\":\"renew\"}");
                                continue;
                            }
                            renewing.remove(r.offset());
                        }
                    }
                    consumer.acknowledge(r, type);
                    emit("{\"event\":\"ack\",\"offset\":" + r.offset() + ",\"type\":" + quote(type.toString()) + "}");
                }
                if (explicit && !records.isEmpty()) commit(consumer);
            }
        } catch (WakeupException stopping) {
            // SIGTERM: close below, which acknowledges what is pending and leaves the group.
        } finally {
            consumer.close();
            emit("{\"event\":\"done\"}");
            closed.countDown();
        }
    }

    static void commit(KafkaShareConsumer<String, String> consumer) {
        Map<TopicIdPartition, Optional<KafkaException>> result = consumer.commitSync();
        StringJoiner failed = new StringJoiner(",", "[", "]");
        result.forEach((tp, error) -> error.ifPresent(e -> failed.add(quote(tp.topic() + "-" + tp.partition() + ": " + e))));
        emit("{\"event\":\"commit\",\"failed\":" + failed + "}");
    }
}
