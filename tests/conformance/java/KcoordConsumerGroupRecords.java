// Reads kcoord's consumer group records (KIP-848) with Kafka's own generated record classes,
// one "KEYHEX VALUEHEX|-" line per record on stdin, and prints one line per record: the
// key and value as Kafka's classes print them, or "ERROR ..." when a record does not parse
// exactly (unknown type, bytes left over).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import org.apache.kafka.common.protocol.ByteBufferAccessor;
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
            default: throw new IllegalArgumentException("record type " + type);
        }
    }

    public static void main(String[] args) throws Exception {
        BufferedReader lines = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = lines.readLine()) != null) {
            String[] parts = line.trim().split(" ");
            try {
                ByteBuffer k = ByteBuffer.wrap(bytes(parts[0]));
                short type = k.getShort();
                Object key = key(type, new ByteBufferAccessor(k));
                if (k.hasRemaining()) throw new IllegalStateException(k.remaining() + " key bytes left");
                String shown = "-";
                if (!parts[1].equals("-")) {
                    ByteBuffer v = ByteBuffer.wrap(bytes(parts[1]));
                    short version = v.getShort();
                    shown = String.valueOf(value(type, version, new ByteBufferAccessor(v)));
                    if (v.hasRemaining()) throw new IllegalStateException(v.remaining() + " value bytes left");
                }
                System.out.println(key + " " + shown);
            } catch (RuntimeException e) {
                System.out.println("ERROR " + e);
            }
        }
    }
}
