// A Kafka Streams application for kcoord's exactly-once test (tests/integration/test_streams_eos.py):
// counts the values of an input topic (groupBy value: a repartition topic; count: an in-memory
// store with its changelog) into an output topic, processing.guarantee=exactly_once_v2 with the
// classic group protocol. Without a record cache every input yields one output record, so
// exactly-once output holds, per key, the counts 1, 2, ... N once each.
//
//   KcoordStreamsCount BOOTSTRAP APPLICATION_ID INPUT OUTPUT STATE_DIR RECORD_DELAY_MS
//
// JSON lines on stdout: {"event":"state","state":S} on each state change, {"event":"processed",
// "count":N} every 20 input records this instance read (RECORD_DELAY_MS each, so a kill lands
// mid-run). SIGTERM closes it cleanly.
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.*;
import org.apache.kafka.streams.state.Stores;

public class KcoordStreamsCount {
    static void emit(String json) { System.out.println(json); System.out.flush(); }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], appId = args[1], input = args[2], output = args[3], stateDir = args[4];
        long delay = Long.parseLong(args[5]);
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        p.put("group.protocol", "classic");
        // The killed instance's tasks move after its session ends and its open transaction is
        // aborted: both short, so the survivor takes over within seconds.
        p.put(StreamsConfig.consumerPrefix("session.timeout.ms"), "6000");
        p.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), "500");
        p.put(StreamsConfig.producerPrefix("transaction.timeout.ms"), "5000");
        p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");

        AtomicLong processed = new AtomicLong();
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
               .peek((k, v) -> {
                   try { Thread.sleep(delay); } catch (InterruptedException e) { Thread.currentThread().interrupt(); }
                   long n = processed.incrementAndGet();
                   if (n % 20 == 0) emit("{\"event\":\"processed\",\"count\":" + n + "}");
               })
               .groupBy((k, v) -> v, Grouped.with("by-value", Serdes.String(), Serdes.String()))
               .count(Materialized.<String, Long>as(Stores.inMemoryKeyValueStore("counts"))
                                  .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
               .toStream()
               .map((k, v) -> KeyValue.pair(k, String.valueOf(v)))
               .to(output, Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        CountDownLatch closed = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            emit("{\"event\":\"state\",\"state\":\"" + now + "\"}");
            if (now == KafkaStreams.State.NOT_RUNNING || now == KafkaStreams.State.ERROR) closed.countDown();
        });
        streams.setUncaughtExceptionHandler(e -> {
            emit("{\"event\":\"error\",\"error\":\"" + e.getClass().getSimpleName() + "\",\"message\":\""
                 + String.valueOf(e.getMessage()).replace("\"", "'").replace("\n", " ") + "\"}");
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(streams::close));
        streams.start();
        closed.await();
        emit("{\"event\":\"done\"}");
    }
}
