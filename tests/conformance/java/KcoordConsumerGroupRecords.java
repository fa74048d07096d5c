// Reads kcoord's consumer group (KIP-848) and streams group (KIP-1071) records with Kafka's
// own generated record classes,
// one "KEYHEX VALUEHEX|-" line per record on stdin, and prints one line per record: the
// key and value as Kafka's classes print them, or "ERROR ..." when a record does not parse
// exactly (unknown type, bytes left over). With the argument "exact", a record that Kafka's
// classes write back to other bytes than the ones read is an ERROR too.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import java.util.Arrays;

import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.coordinator.group.generated.*;

public class KcoordConsumerGroupRecords {
    private static byte[] bytes(String hex) {
        byte[] out = new byte[hex.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }

    private static Object key(short type, ByteBufferAccessor in) {
        switch (type) {
            case 3: return new ConsumerGroupMetadataKey(in, (short) 0);
            case 5: return new ConsumerGroupMemberMetadataKey(in, (short) 0);
            case 6: return new ConsumerGroupTargetAssignmentMetadataKey(in, (short) 0);
            case 7: return new ConsumerGroupTargetAssignmentMemberKey(in, (short) 0);
            case 8: return new ConsumerGroupCurrentMemberAssignmentKey(in, (short) 0);
            case 16: return new ConsumerGroupRegularExpressionKey(in, (short) 0);
            case 17: return new StreamsGroupMetadataKey(in, (short) 0);
            case 19: return new StreamsGroupMemberMetadataKey(in, (short) 0);
            case 20: return new StreamsGroupTargetAssignmentMetadataKey(in, (short) 0);
            case 21: return new StreamsGroupTargetAssignmentMemberKey(in, (short) 0);
            case 22: return new StreamsGroupCurrentMemberAssignmentKey(in, (short) 0);
            case 23: return new StreamsGroupTopologyKey(in, (short) 0);
            default: throw new IllegalArgumentException("record type " + type);
        }
    }

    private static Object value(short type, short version, ByteBufferAccessor in) {
        switch (type) {
            case 3: return new ConsumerGroupMetadataValue(in, version);
            case 5: return new ConsumerGroupMemberMetadataValue(in, version);
            case 6: return new ConsumerGroupTargetAssignmentMetadataValue(in, version);
            case 7: return new ConsumerGroupTargetAssignmentMemberValue(in, version);
            case 8: return new ConsumerGroupCurrentMemberAssignmentValue(in, version);
            case 16: return new ConsumerGroupRegularExpressionValue(in, version);
            case 17: return new StreamsGroupMetadataValue(in, version);
            case 19: return new StreamsGroupMemberMetadataValue(in, version);
            case 20: return new StreamsGroupTargetAssignmentMetadataValue(in, version);
            case 21: return new StreamsGroupTargetAssignmentMemberValue(in, version);
            case 22: return new StreamsGroupCurrentMemberAssignmentValue(in, version);
            case 23: return new StreamsGroupTopologyValue(in, version);
            default: throw new IllegalArgumentException("record type " + type);
        }
    }

    public static void main(String[] args) throws Exception {
        BufferedReader lines = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        boolean exact = args.length > 0 && args[0].equals("exact");
        String line;
        while ((line = lines.readLine()) != null) {
            String[] parts = line.trim().split(" ");
            try {
                ByteBuffer k = ByteBuffer.wrap(bytes(parts[0]));
                short type = k.getShort();
                Object key = key(type, new ByteBufferAccessor(k));
                if (k.hasRemaining()) throw new IllegalStateException(k.remaining() + " key bytes left");
                if (exact && !Arrays.equals(MessageUtil.toCoordinatorTypePrefixedBytes((ApiMessage) key), bytes(parts[0]))) {
                    throw new IllegalStateException("the key written back differs");
                }
                String shown = "-";
                if (!parts[1].equals("-")) {
                    ByteBuffer v = ByteBuffer.wrap(bytes(parts[1]));
                    short version = v.getShort();
                    Object value = value(type, version, new ByteBufferAccessor(v));
                    shown = String.valueOf(value);
                    if (v.hasRemaining()) throw new IllegalStateException(v.remaining() + " value bytes left");
                    if (exact && !Arrays.equals(MessageUtil.toVersionPrefixedBytes(version, (ApiMessage) value),
                                                bytes(parts[1]))) {
                        throw new IllegalStateException("the value written back differs: " + shown);
                    }
                }
                System.out.println(key + " " + shown);
            } catch (RuntimeException e) {
                System.out.println("ERROR " + e);
            }
        }
    }
}
