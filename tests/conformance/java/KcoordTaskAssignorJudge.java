// Runs Apache Kafka's own streams-group task assignor (StickyTaskAssignor of
// kafka-group-coordinator) on assignment problems, for tests/conformance/test_task_assignor_vs_kafka.py.
// stdin: one JSON problem a line; stdout: one JSON answer a line, in order.
//
// A problem: {"configs": {name: value} (may be empty),
//   "subtopologies": [{"id": str, "partitions": n, "stateful": bool}],
//   "members": [{"id": str, "process": str, "instance": str|null, "rack": str|null,
//                "active": [[subtopology, [partition, ...]], ...], "standby": [...], "warmup": [...]}]}
// The members are put one by one, in the given order, into a HashMap, as Kafka's
// TargetAssignmentBuilder does; a member's tasks are a HashMap of HashSets, as it reads them
// back from the target assignment record; the subtopologies a TreeMap, as TopologyMetadata
// holds them.
// An answer: {"assignment": {member id: {"active": {subtopology: [partition, ...]},
//   "standby": {...}, "warmup": {...}}}} or {"error": "ExceptionClass: message"}.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.coordinator.group.streams.assignor.AssignmentMemberSpec;
import org.apache.kafka.coordinator.group.streams.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.streams.assignor.GroupSpecImpl;
import org.apache.kafka.coordinator.group.streams.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor;
import org.apache.kafka.coordinator.group.streams.assignor.TopologyDescriber;

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
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

public class KcoordTaskAssignorJudge {
    static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);  // the assignor's log lines must not mix with the answers
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            ObjectNode answer = JSON.createObjectNode();
            try {
                answer.set("assignment", solve(JSON.readTree(line)));
            } catch (RuntimeException e) {
                answer.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            out.println(JSON.writeValueAsString(answer));
            out.flush();
        }
    }

    record Subtopology(int partitions, boolean stateful) { }

    static Map<String, Set<Integer>> tasks(JsonNode node) {
        Map<String, Set<Integer>> tasks = new HashMap<>();
        for (JsonNode entry : node) {
            Set<Integer> partitions = new HashSet<>();
            for (JsonNode p : entry.get(1)) partitions.add(p.asInt());
            tasks.put(entry.get(0).asText(), partitions);
        }
        return tasks;
    }

    static Optional<String> optional(JsonNode node, String field) {
        JsonNode v = node.get(field);
        return v == null || v.isNull() ? Optional.empty() : Optional.of(v.asText());
    }

    static ObjectNode solve(JsonNode problem) {
        TreeMap<String, Subtopology> subtopologies = new TreeMap<>();
        for (JsonNode s : problem.get("subtopologies")) {
            subtopologies.put(s.get("id").asText(), new Subtopology(s.get("partitions").asInt(), s.get("stateful").asBoolean()));
        }
        TopologyDescriber topology = new TopologyDescriber() {
            Subtopology get(String id) {
                Subtopology s = subtopologies.get(id);
                if (s == null) throw new NoSuchElementException("Topology does not contain subtopology " + id);
                return s;
            }

            @Override
            public List<String> subtopologies() {
                return new ArrayList<>(subtopologies.keySet());
            }

            @Override
            public int maxNumInputPartitions(String subtopologyId) {
                return get(subtopologyId).partitions();
            }

            @Override
            public boolean isStateful(String subtopologyId) {
                return get(subtopologyId).stateful();
            }
        };

        Map<String, AssignmentMemberSpec> members = new HashMap<>();
        for (JsonNode m : problem.get("members")) {
            members.put(m.get("id").asText(), new AssignmentMemberSpec(
                optional(m, "instance"), optional(m, "rack"),
                tasks(m.get("active")), tasks(m.get("standby")), tasks(m.get("warmup")),
                m.get("process").asText(), Map.of(), Map.of(), Map.of()));
        }
        Map<String, String> configs = new TreeMap<>();
        problem.get("configs").fields().forEachRemaining(e -> configs.put(e.getKey(), e.getValue().asText()));

        GroupAssignment result = new StickyTaskAssignor().assign(
            new GroupSpecImpl(Collections.unmodifiableMap(members), configs), topology);

        ObjectNode answer = JSON.createObjectNode();
        for (Map.Entry<String, MemberAssignment> e : result.members().entrySet()) {
            ObjectNode member = answer.putObject(e.getKey());
            write(member.putObject("active"), e.getValue().activeTasks());
            write(member.putObject("standby"), e.getValue().standbyTasks());
            write(member.putObject("warmup"), e.getValue().warmupTasks());
        }
        return answer;
    }

    static void write(ObjectNode out, Map<String, Set<Integer>> tasks) {
        tasks.forEach((subtopology, partitions) -> {
            var list = out.putArray(subtopology);
            partitions.stream().sorted().forEach(list::add);
        });
    }
}
