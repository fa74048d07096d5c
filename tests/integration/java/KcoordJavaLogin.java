// Logs a Java consumer into a group with the security settings given as client properties.
//
//   java KcoordJavaLogin BOOTSTRAP TOPIC GROUP MAX_SECONDS key=value...
//
// Prints {"event":"assigned","partitions":N} once the group hands it an assignment, or
// {"event":"error","error":"<exception class>","message":"..."} when the login fails.
import java.time.Duration;
import java.util.*;

import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class KcoordJavaLogin {
    static String q(String s) { return s == null ? "null" : "\"" + s.replace("\\", "\\\\").replace("\"", "'").replace("\n", " ") + "\""; }

    public static void main(String[] args) {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("group.id", args[2]);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("session.timeout.ms", "10000");
        p.put("reconnect.backoff.max.ms", "1000");
        for (int i = 4; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            p.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        long deadline = System.currentTimeMillis() + 1000L * Integer.parseInt(args[3]);
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            c.subscribe(Collections.singletonList(args[1]));
            while (System.currentTimeMillis() < deadline) {
                c.poll(Duration.ofMillis(200));
                Set<TopicPartition> a = c.assignment();
                if (!a.isEmpty()) {
                    System.out.println("{\"event\":\"assigned\",\"partitions\":" + a.size() + "}");
                    return;
                }
            }
            System.out.println("{\"event\":\"timeout\"}");
        } catch (Exception e) {
            System.out.println("{\"event\":\"error\",\"error\":" + q(e.getClass().getName()) + ",\"message\":" + q(e.getMessage()) + "}");
        }
    }
}
