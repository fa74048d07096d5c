import java.io.ByteArrayOutputStream;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import org.apache.kafka.common.utils.Exit;

/**
 * Runs Kafka tool main() methods one after another in one JVM, so a test pays for one
 * JVM start instead of one per command (kcoord.testing.kafka_tools.ToolSession).
 *
 * Each stdin line is a tab-separated command: the tool's class, then its arguments.
 * For each the real stdout gets a header "@@kcoord-tool CODE OUTLEN ERRLEN" and then
 * the command's stdout and stderr bytes (UTF-8). Exit.exit() is turned into an
 * exception so a tool's exit status ends only its own command, and shutdown hooks are
 * dropped: they would pile up, one per command, until the session ends.
 *
 * In a JVM of its own the first Exit.exit() is the tool's last act; here the exception
 * it becomes may be caught by the tool (TopicCommand catches Throwable and exits again
 * from a finally block), so the first status counts and whatever the tool prints after
 * it is dropped.
 */
public class KcoordToolSession {
    static final class ToolExit extends RuntimeException {
        final int code;
        ToolExit(int code) {
            super(null, null, false, false);
            this.code = code;
        }
    }

    static Integer firstExit;
    static final PrintStream SINK = new PrintStream(OutputStream.nullOutputStream());

    static void exit(int code) {
        if (firstExit == null) {
            firstExit = code;
            System.setOut(SINK);
            System.setErr(SINK);
        }
        throw new ToolExit(code);
    }

    public static void main(String[] args) throws Exception {
        PrintStream realOut = System.out;
        PrintStream realErr = System.err;
        Exit.setExitProcedure((code, message) -> exit(code));
        Exit.setHaltProcedure((code, message) -> exit(code));
        Exit.setShutdownHookAdder((name, runnable) -> { });
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) continue;
            String[] parts = line.split("\t", -1);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            PrintStream outStream = new PrintStream(out, true, StandardCharsets.UTF_8);
            PrintStream errStream = new PrintStream(err, true, StandardCharsets.UTF_8);
            System.setOut(outStream);
            System.setErr(errStream);
            int code = 0;
            firstExit = null;
            try {
                Method main = Class.forName(parts[0]).getMethod("main", String[].class);
                main.invoke(null, (Object) Arrays.copyOfRange(parts, 1, parts.length));
            } catch (InvocationTargetException e) {
                Throwable cause = e.getCause();
                if (cause instanceof ToolExit) {
                    code = ((ToolExit) cause).code;
                } else {
                    cause.printStackTrace(errStream);
                    code = 1;
                }
            } catch (ToolExit e) {
                code = e.code;
            } catch (Throwable t) {
                t.printStackTrace(errStream);
                code = 1;
            } finally {
                outStream.flush();
                errStream.flush();
                System.setOut(realOut);
                System.setErr(realErr);
            }
            if (firstExit != null) code = firstExit;
            byte[] o = out.toByteArray();
            byte[] e = err.toByteArray();
            OutputStream raw = realOut;
            raw.write(("@@kcoord-tool " + code + " " + o.length + " " + e.length + "\n").getBytes(StandardCharsets.UTF_8));
            raw.write(o);
            raw.write(e);
            raw.flush();
        }
    }
}
