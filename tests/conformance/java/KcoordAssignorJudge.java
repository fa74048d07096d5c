// Runs Apache Kafka's own server assignors (UniformAssignor, RangeAssignor and the share groups'
// SimpleAssignor of kafka-group-coordinator) on assignment problems, for
// tests/conformance/test_assignors_vs_kafka.py and test_simple_assignor_vs_kafka.py.
// stdin: one JSON problem a line; stdout: one JSON answer a line, in order.
// Also: {"timeline": [["add"|"remove", key], ...]} answers {"order": [key, ...]}.
//
// A problem: {"assignor": "uniform"|"range"|"simple", "subscription_type": "homogeneous"|"heterogeneous",
//   "topics": [{"id": base64 Uuid, "name": str, "partitions": n, "racks": [[rack, ...] per partition] | null}],
//   "members": [{"id": str, "instance": str|null, "rack": str|null, "topics": [topic name, ...],
//                "assigned": [[topic id, [partition, ...]], ...]}],
//   "assignable": {topic id: [partition, ...]} | absent (every partition; a share group's are those
//                 whose share state is initialized)}
// The inputs are shaped as Kafka's coordinator shapes them: members put one by one into a
// HashMap (TargetAssignmentBuilder), a member's subscribed names a HashSet resolved to ids
// in its order (TopicIds itself), its current target assignment read back from a record
// (Assignment.fromRecord: a HashMap of HashSets, in record order).
// An answer: {"assignment": {member id: {topic id: [partition, ...]}}} or {"error": message}, topics
// and partitions in the order Kafka would write them to the target assignment record.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.timeline.SnapshotRegistry;
import org.apache.kafka.timeline.TimelineHashMap;
import org.apache.kafka.coordinator.group.api.assignor.PartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.PartitionAssignorException;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.SimpleAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;
import org.apache.kafka.coordinator.group.modern.TopicIds;
import org.apache.kafka.coordinator.common.runtime.CoordinatorMetadataImage;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

public class KcoordAssignorJudge {
    static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            ObjectNode answer = JSON.createObjectNode();
            JsonNode request = JSON.readTree(line);
            if (request.has("timeline")) {
                answer.set("order", timelineOrder(request.get("timeline")));
                out.println(JSON.writeValueAsString(answer));
                out.flush();
                continue;
            }
            try {
                answer.set("assignment", solve(request));
            } catch (PartitionAssignorException e) {
                answer.put("error", String.valueOf(e.getMessage()));
            } catch (java.util.NoSuchElementException e) {
                // SimpleAssignor runs out of unfilled members on some current assignments.
                answer.put("error", "NoSuchElementException");
            }
            out.println(JSON.writeValueAsString(answer));
            out.flush();
        }
    }

    // {"timeline": [["add"|"remove", key], ...]}: the keys of a group's member map
    // (TimelineHashMap, as ModernGroup creates it) after those operations, as Kafka walks them.
    static ArrayNode timelineOrder(JsonNode ops) {
        TimelineHashMap<String, Boolean> map = new TimelineHashMap<>(new SnapshotRegistry(new LogContext()), 0);
        for (JsonNode op : ops) {
            if (op.get(0).asText().equals("add")) map.put(op.get(1).asText(), true);
            else map.remove(op.get(1).asText());
        }
        ArrayNode order = JSON.createArrayNode();
        map.forEach((key, value) -> order.add(key));
        return order;
    }

    static Optional<String> optional(JsonNode node, String field) {
        JsonNode v = node.get(field);
        return v == null || v.isNull() ? Optional.empty() : Optional.of(v.asText());
    }

    static ObjectNode solve(JsonNode problem) {
        Map<String, Uuid> idsByName = new HashMap<>();
        Map<Uuid, Integer> partitionCounts = new HashMap<>();
        Map<Uuid, List<List<String>>> racks = new HashMap<>();
        for (JsonNode t : problem.get("topics")) {
            Uuid id = Uuid.fromString(t.get("id").asText());
            idsByName.put(t.get("name").asText(), id);
            partitionCounts.put(id, t.get("partitions").asInt());
            JsonNode r = t.get("racks");
            if (r != null && !r.isNull()) {
                List<List<String>> perPartition = new ArrayList<>();
                for (JsonNode p : r) {
                    List<String> replicas = new ArrayList<>();
                    for (JsonNode rack : p) replicas.add(rack.asText());
                    perPartition.add(replicas);
                }
                racks.put(id, perPartition);
            }
        }
        SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
            @Override
            public int numPartitions(Uuid topicId) {
                return partitionCounts.getOrDefault(topicId, -1);
            }

            @Override
            public Set<String> racksForPartition(Uuid topicId, int partition) {
                List<List<String>> r = racks.get(topicId);
                if (r == null || partition >= r.size()) return Set.of();
                return new HashSet<>(r.get(partition));
            }
        };

        Map<Uuid, String> namesById = new HashMap<>();
        idsByName.forEach((name, id) -> namesById.put(id, name));
        TopicIds.TopicResolver resolver = new TopicIds.TopicResolver() {
            @Override
            public CoordinatorMetadataImage image() {
                return null;
            }

            @Override
            public String name(Uuid id) {
                return namesById.get(id);
            }

            @Override
            public Uuid id(String name) {
                return idsByName.get(name);
            }

            @Override
            public void clear() {
            }
        };
        Map<String, MemberSubscriptionAndAssignmentImpl> members = new HashMap<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        List<Set<Uuid>> subscriptions = new ArrayList<>();
        for (JsonNode m : problem.get("members")) {
            String memberId = m.get("id").asText();
            List<String> names = new ArrayList<>();
            for (JsonNode n : m.get("topics")) names.add(n.asText());
            // as ConsumerGroupMember keeps its names and TopicIds resolves them
            Set<Uuid> subscribed = new TopicIds(new HashSet<>(names), resolver);
            Set<Uuid> resolved = new HashSet<>();
            for (String name : names) {
                if (idsByName.containsKey(name)) resolved.add(idsByName.get(name));
            }
            subscriptions.add(resolved);
            Map<Uuid, Set<Integer>> assigned = new HashMap<>();
            for (JsonNode a : m.get("assigned")) {
                Uuid topicId = Uuid.fromString(a.get(0).asText());
                List<Integer> partitions = new ArrayList<>();
                for (JsonNode p : a.get(1)) {
                    partitions.add(p.asInt());
                    inverted.computeIfAbsent(topicId, k -> new HashMap<>()).put(p.asInt(), memberId);
                }
                assigned.putIfAbsent(topicId, new HashSet<>(partitions));
            }
            members.put(memberId, new MemberSubscriptionAndAssignmentImpl(
                optional(m, "rack"), optional(m, "instance"), subscribed, new Assignment(assigned)));
        }

        SubscriptionType type;
        String given = problem.path("subscription_type").asText("");
        if (given.equals("homogeneous")) type = SubscriptionType.HOMOGENEOUS;
        else if (given.equals("heterogeneous")) type = SubscriptionType.HETEROGENEOUS;
        else type = subscriptions.stream().distinct().count() <= 1 ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;

        Optional<Map<Uuid, Set<Integer>>> assignable = Optional.empty();
        JsonNode allowed = problem.get("assignable");
        if (allowed != null && !allowed.isNull()) {
            Map<Uuid, Set<Integer>> byTopic = new HashMap<>();
            allowed.fields().forEachRemaining(e -> {
                Set<Integer> partitions = new HashSet<>();
                for (JsonNode p : e.getValue()) partitions.add(p.asInt());
                byTopic.put(Uuid.fromString(e.getKey()), partitions);
            });
            assignable = Optional.of(byTopic);
        }
        String name = problem.get("assignor").asText();
        PartitionAssignor assignor = name.equals("range") ? new RangeAssignor()
            : name.equals("simple") ? new SimpleAssignor() : new UniformAssignor();
        GroupAssignment result = assignor.assign(
            new GroupSpecImpl(Collections.unmodifiableMap(members), type, inverted, assignable), describer);

        ObjectNode answer = JSON.createObjectNode();
        for (Map.Entry<String, MemberAssignment> e : result.members().entrySet()) {
            ObjectNode topics = answer.putObject(e.getKey());
            for (Map.Entry<Uuid, Set<Integer>> tp : e.getValue().partitions().entrySet()) {
                if (tp.getValue().isEmpty()) continue;
                ArrayNode parts = topics.putArray(tp.getKey().toString());
                for (int p : tp.getValue()) parts.add(p);  // Kafka's record order
            }
        }
        return answer;
    }
}
