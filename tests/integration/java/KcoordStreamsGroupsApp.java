// A Kafka Streams instance for the streams group scenarios (tests/integration/test_streams_groups.py,
// run by kcoord.testing.streams_app.StreamsApp): counts an input topic's values (groupBy value: a
// repartition topic; count: a persistent store with its changelog) into an output topic. Without a
// record cache each input yields one output record, so with exactly_once_v2 the last output record
// of a key is its exact count.
//
//   KcoordStreamsGroupsApp input=TOPIC output=TOPIC NAME=VALUE...
//
// Every other NAME=VALUE is a StreamsConfig property (bootstrap.servers, application.id,
// group.protocol, state.dir, num.standby.replicas, commit.interval.ms, processing.guarantee,
// consumer./producer.-prefixed client settings, group.instance.id for the classic protocol...).
//
// JSON lines on stdout: {"event":"state","state":S,"from":S} on each KafkaStreams.State change;
// {"event":"tasks","active":[...],"standby":[...]} whenever the tasks this instance holds change
// (metadataForLocalThreads() polled every 200 ms: a rebalance listener of the streams protocol is
// internal in 4.3.1, and the classic one reports partitions, not tasks); {"event":"error",...} on a
// stream thread's uncaught exception; {"event":"done"} after a clean close. SIGTERM closes it.
import java.util.*;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Collectors;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.*;

public class KcoordStreamsGroupsApp {
    static void emit(String json) { System.out.println(json); System.out.flush(); }

    static String quote(String s) {
        return "\"" + String.valueOf(s).replace("\\", "\\\\").replace("\"", "'").replace("\n", " ") + "\"";
    }

    static String taskList(Collection<String> ids) {
        return ids.stream().sorted().map(KcoordStreamsGroupsApp::quote).collect(Collectors.joining(",", "[", "]"));
    }

    static List<String> ids(Set<ThreadMetadata> threads, boolean active) {
        List<String> out = new ArrayList<>();
        for (ThreadMetadata t : threads)
            for (TaskMetadata task : active ? t.activeTasks() : t.standbyTasks()) out.add(task.taskId().toString());
        return out;
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = new LinkedHashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            options.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        String input = options.remove("input"), output = options.remove("output");
        Properties p = new Properties();
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        p.putAll(options);

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
               .groupBy((k, v) -> v, Grouped.with("by-value", Serdes.String(), Serdes.String()))
               .count(Materialized.as("counts"))
               .toStream()
               .map((k, v) -> KeyValue.pair(k, String.valueOf(v)))
               .to(output, Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        CountDownLatch closed = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            emit("{\"event\":\"state\",\"state\":\"" + now + "\",\"from\":\"" + before + "\"}");
            if (now == KafkaStreams.State.NOT_RUNNING || now == KafkaStreams.State.ERROR) closed.countDown();
        });
        streams.setUncaughtExceptionHandler(e -> {
            emit("{\"event\":\"error\",\"error\":" + quote(e.getClass().getName()) + ",\"message\":"
                 + quote(e.getMessage()) + "}");
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close();
            emit("{\"event\":\"done\"}");
        }));
        streams.start();

        String last = "";
        while (closed.getCount() > 0) {
            try {
                Set<ThreadMetadata> threads = streams.metadataForLocalThreads();
                String now = "{\"event\":\"tasks\",\"active\":" + taskList(ids(threads, true))
                             + ",\"standby\":" + taskList(ids(threads, false)) + "}";
                if (!now.equals(last)) {
                    emit(now);
                    last = now;
                }
            } catch (RuntimeException e) {
                // Asked while the client is between states (closing): the next poll answers.
            }
            closed.await(200, java.util.concurrent.TimeUnit.MILLISECONDS);
        }
    }
}
